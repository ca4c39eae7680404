//! The model candidates, their keys, and Mixture-of-Agents: from the file and the
//! environment.

use super::*;

#[test]
fn llm_defaults() {
    let c = load(&[]).unwrap();
    let l = &c.llm;
    assert_eq!(l.summarizer, SummarizerChoice::Extractive);
    assert_eq!(l.fallback, FallbackPolicy::Extractive);
    assert!(l.models.is_empty());
    assert_eq!(l.upstream_timeout, Duration::from_secs(60));
    // The summarizer deadline leaves a tenth of the request's for the fallback.
    assert_eq!(l.deadline, Duration::from_secs(108));
    assert_eq!(l.retries, 2);
    let c = load(&[("COMPACTD_REQUEST_TIMEOUT_SECS", "30")]).unwrap();
    assert_eq!(c.llm.deadline, Duration::from_secs(27));
}

#[test]
fn llm_from_env() {
    let c = load(&[
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "gpt-4.1-mini"),
        ("OPENAI_API_KEY", "sk-test-SECRET-123"),
        ("ANTHROPIC_API_KEY", "other"),
        ("COMPACTD_FALLBACK", "none"),
        ("COMPACTD_UPSTREAM_TIMEOUT_SECS", "5"),
        ("COMPACTD_RETRIES", "0"),
        ("COMPACTD_MODEL_CONTEXT_WINDOW", "32000"),
    ])
    .unwrap();
    let l = &c.llm;
    assert_eq!(l.summarizer, SummarizerChoice::Openai);
    assert_eq!(l.fallback, FallbackPolicy::None);
    assert_eq!(l.upstream_timeout, Duration::from_secs(5));
    assert_eq!(l.retries, 0);
    assert_eq!(l.models.len(), 1);
    let m = &l.models[0];
    assert_eq!(
        (
            m.name.as_str(),
            m.kind,
            m.model.as_str(),
            m.base_url.as_str()
        ),
        (
            "openai",
            ModelKind::Openai,
            "gpt-4.1-mini",
            "https://api.openai.com/v1"
        )
    );
    assert_eq!(m.context_window, 32000);
    assert!(m.api_key.is_some());
    let shown = shown_of(&c);
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(shown.contains(r#""apiKeySet":true"#), "{shown}");

    let c = load(&[
        ("COMPACTD_SUMMARIZER", "anthropic"),
        ("COMPACTD_MODEL", "claude-haiku-4-5"),
        (
            "COMPACTD_BASE_URL",
            "https://user:pw@proxy.example/anthropic?token=t",
        ),
        ("ANTHROPIC_API_KEY", "ak"),
    ])
    .unwrap();
    let m = &c.llm.models[0];
    assert_eq!(
        (m.name.as_str(), m.kind),
        ("anthropic", ModelKind::Anthropic)
    );
    assert_eq!(m.context_window, DEFAULT_MODEL_CONTEXT_WINDOW);
    let shown = shown_of(&c);
    assert!(
        !shown.contains("pw@") && !shown.contains("token="),
        "{shown}"
    );

    // A local server needs no key.
    let c = load(&[
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "llama3"),
        ("COMPACTD_BASE_URL", "http://127.0.0.1:11434/v1"),
    ])
    .unwrap();
    assert!(c.llm.models[0].api_key.is_none());
}

#[test]
fn llm_env_errors_name_the_variable() {
    assert_names(
        load(&[("COMPACTD_SUMMARIZER", "gpt")]),
        "COMPACTD_SUMMARIZER",
    );
    assert_names(load(&[("COMPACTD_FALLBACK", "maybe")]), "COMPACTD_FALLBACK");
    assert_names(load(&[("COMPACTD_RETRIES", "-1")]), "COMPACTD_RETRIES");
    assert_names(
        load(&[("COMPACTD_UPSTREAM_TIMEOUT_SECS", "soon")]),
        "COMPACTD_UPSTREAM_TIMEOUT_SECS",
    );
    assert_names(
        load(&[("COMPACTD_UPSTREAM_TIMEOUT_SECS", "0")]),
        "COMPACTD_UPSTREAM_TIMEOUT_SECS",
    );
    assert_names(load(&[("COMPACTD_SUMMARIZER", "openai")]), "COMPACTD_MODEL");
    assert_names(load(&[("COMPACTD_MODEL", "gpt-4.1")]), "COMPACTD_MODEL");
    assert_names(
        load(&[("COMPACTD_BASE_URL", "http://127.0.0.1:1/v1")]),
        "COMPACTD_BASE_URL",
    );
    let bad_url = load(&[
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "m"),
        ("COMPACTD_BASE_URL", "ftp://user:hunter2@host/"),
    ]);
    assert_names(bad_url, "COMPACTD_BASE_URL");
    let err = load(&[
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "m"),
        ("COMPACTD_BASE_URL", "ftp://user:hunter2@host/"),
    ])
    .unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert_names(
        load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "m"),
            ("COMPACTD_MODEL_CONTEXT_WINDOW", "0"),
        ]),
        "COMPACTD_MODEL_CONTEXT_WINDOW",
    );
}

#[test]
fn llm_key_file() {
    let key = temp_file("key", "  sk-from-file\n");
    let c = load(&[
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "m"),
        ("OPENAI_API_KEY", "sk-from-env"),
        ("COMPACTD_LLM_API_KEY_FILE", key.to_str().unwrap()),
    ])
    .unwrap();
    let got = c.llm.models[0].api_key.as_ref().unwrap().expose_secret();
    assert_eq!(got, "sk-from-file");
    std::fs::remove_file(&key).unwrap();
    assert_names(
        load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "m"),
            ("COMPACTD_LLM_API_KEY_FILE", key.to_str().unwrap()),
        ]),
        "COMPACTD_LLM_API_KEY_FILE",
    );
}

#[test]
fn llm_from_file() {
    let key = temp_file("toml-key", "ak-file\n");
    let toml = format!(
        r#"
retries = 1
upstream_timeout_secs = 20
fallback = "none"
backoff_base_ms = 10
backoff_cap_ms = 100

[[models]]
name = "fast"
kind = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:8000/v1"
context_window = 64000
api_key_env = "FAST_KEY"

[[models]]
kind = "anthropic"
model = "claude-haiku-4-5"
api_key_file = "{}"
"#,
        key.display()
    );
    let file = temp_file("models.toml", &toml);
    let env = env_of(&[("FAST_KEY", "fk"), ("OPENAI_API_KEY", "unused")]);
    let c = Config::load_from(Some(&file), env).unwrap();
    let l = &c.llm;
    assert_eq!(
        l.summarizer,
        SummarizerChoice::Openai,
        "implied by [[models]]"
    );
    assert_eq!(l.fallback, FallbackPolicy::None);
    assert_eq!(l.retries, 1);
    assert_eq!(l.upstream_timeout, Duration::from_secs(20));
    assert_eq!(l.backoff_base, Duration::from_millis(10));
    assert_eq!(l.backoff_cap, Duration::from_millis(100));
    let names: Vec<_> = l.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["fast", "anthropic"]);
    assert_eq!(l.models[0].context_window, 64000);
    assert_eq!(l.models[0].api_key.as_ref().unwrap().expose_secret(), "fk");
    assert_eq!(l.models[1].base_url, "https://api.anthropic.com");
    assert_eq!(
        l.models[1].api_key.as_ref().unwrap().expose_secret(),
        "ak-file"
    );

    // The environment's single candidate goes first; COMPACTD_SUMMARIZER wins.
    let env = env_of(&[
        ("FAST_KEY", "fk"),
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "gpt-4.1"),
    ]);
    let c = Config::load_from(Some(&file), env).unwrap();
    let names: Vec<_> = c.llm.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["openai", "fast", "anthropic"]);

    // A named key variable that is not set is an error naming the table.
    assert_names(
        Config::load_from(Some(&file), env_of(&[])),
        "models[0].api_key_env",
    );
    // An explicit extractive summarizer keeps the candidates but uses none by default.
    let env = env_of(&[("FAST_KEY", "fk"), ("COMPACTD_SUMMARIZER", "extractive")]);
    let c = Config::load_from(Some(&file), env).unwrap();
    assert_eq!(c.llm.summarizer, SummarizerChoice::Extractive);
    assert_eq!(c.llm.models.len(), 2);
    std::fs::remove_file(&file).unwrap();

    let dup = temp_file(
        "dup.toml",
        "[[models]]\nkind = \"openai\"\nmodel = \"a\"\n[[models]]\nkind = \"openai\"\nmodel = \"b\"\n",
    );
    assert_names(Config::load_from(Some(&dup), env_of(&[])), "models[1].name");
    std::fs::remove_file(&dup).unwrap();

    let inline = temp_file(
        "inline.toml",
        "[[models]]\nkind = \"openai\"\nmodel = \"a\"\napi_key = \"sk-inline\"\n",
    );
    match Config::load_from(Some(&inline), env_of(&[])) {
        Err(ConfigError::File { message, .. }) => {
            assert!(message.contains("api_key"), "{message}")
        }
        other => panic!("inline keys are refused: {other:?}"),
    }
    std::fs::remove_file(&inline).unwrap();

    let bad = temp_file(
        "bad.toml",
        "[[models]]\nkind = \"openai\"\nmodel = \"a\"\nbase_url = \"nope\"\n",
    );
    assert_names(
        Config::load_from(Some(&bad), env_of(&[])),
        "models[0].base_url",
    );
    std::fs::remove_file(&bad).unwrap();
    std::fs::remove_file(&key).unwrap();
}

#[test]
fn models_from_the_environment() {
    let c = load(&[
        (
            "COMPACTD_MODELS",
            r#"[{kind = "anthropic", model = "h", api_key_env = "H_KEY"}]"#,
        ),
        ("H_KEY", "hk"),
    ])
    .unwrap();
    assert_eq!(c.llm.summarizer, SummarizerChoice::Anthropic);
    assert_eq!(
        c.llm.models[0].api_key.as_ref().unwrap().expose_secret(),
        "hk"
    );
    let err = load(&[("COMPACTD_MODELS", r#"[{kind = "gpt", model = "m"}]"#)]);
    assert_names(err, "COMPACTD_MODELS");
    assert_names(load(&[("COMPACTD_MODELS", "[oops")]), "COMPACTD_MODELS");
    assert_names(
        load(&[(
            "COMPACTD_MODELS",
            r#"[{kind = "openai", model = "m", api_key_env = "NOPE"}]"#,
        )]),
        "COMPACTD_MODELS[0].api_key_env",
    );
}

fn value_message(result: Result<Config, ConfigError>, name: &str) -> String {
    match result {
        Err(ConfigError::Value { name: n, message }) => {
            assert_eq!(n, name, "{message}");
            message
        }
        Err(other) => panic!("expected a value error for {name}, got {other}"),
        Ok(_) => panic!("expected a value error for {name}"),
    }
}

#[test]
fn moa_from_the_file_and_the_environment() {
    let models = "[[models]]\nname = \"local\"\nkind = \"openai\"\nmodel = \"l\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
                  [[models]]\nname = \"haiku\"\nkind = \"openai\"\nmodel = \"h\"\nbase_url = \"http://127.0.0.1:2/v1\"\n";
    let load_toml = |name: &str, moa: &str, env: &[(&str, &str)]| {
        let file = temp_file(name, &format!("{models}{moa}"));
        let result = Config::load_from(Some(&file), env_of(env));
        std::fs::remove_file(&file).unwrap();
        result
    };
    let c = load_toml(
        "moa-ok.toml",
        "[moa]\nproposers = [\"local\", \"haiku\"]\naggregator = \"haiku\"\n",
        &[],
    )
    .unwrap();
    let moa = c.llm.moa.as_ref().unwrap();
    assert_eq!(moa.proposers, ["local", "haiku"]);
    assert_eq!(
        (moa.aggregator.as_str(), moa.strategy),
        ("haiku", Strategy::Single)
    );
    let described = serde_json::to_value(c.llm.describe()).unwrap();
    assert_eq!(
        described["moa"],
        serde_json::json!({"proposers": ["local", "haiku"], "aggregator": "haiku", "strategy": "single"})
    );
    assert!(serde_json::to_value(Config::default().llm.describe())
        .unwrap()
        .get("moa")
        .is_none());

    // Unknown names are configuration errors naming them.
    let m = value_message(
        load_toml(
            "moa-p.toml",
            "[moa]\nproposers = [\"local\", \"opus\"]\naggregator = \"haiku\"\n",
            &[],
        ),
        "moa",
    );
    assert!(
        m.contains("proposers[1]") && m.contains("\"opus\"") && m.contains("local, haiku"),
        "{m}"
    );
    let m = value_message(
        load_toml(
            "moa-a.toml",
            "[moa]\nproposers = [\"local\"]\naggregator = \"gpt\"\n",
            &[],
        ),
        "moa",
    );
    assert!(m.contains("aggregator") && m.contains("\"gpt\""), "{m}");
    let m = value_message(
        load_toml(
            "moa-e.toml",
            "[moa]\nproposers = []\naggregator = \"local\"\n",
            &[],
        ),
        "moa",
    );
    assert!(m.contains("at least one"), "{m}");
    let m = value_message(
        load_toml(
            "moa-d.toml",
            "[moa]\nproposers = [\"local\", \"local\"]\naggregator = \"local\"\n",
            &[],
        ),
        "moa",
    );
    assert!(m.contains("twice"), "{m}");
    let m = file_message(load_toml(
        "moa-s.toml",
        "[moa]\nproposers = [\"local\"]\naggregator = \"local\"\nstrategy = \"vote\"\n",
        &[],
    ));
    assert!(m.contains("moa.strategy"), "{m}");

    // The environment writes the table inline, as COMPACTD_MODELS does; it wins.
    let c = load_toml(
        "moa-env.toml",
        "",
        &[(
            "COMPACTD_MOA",
            r#"{proposers = ["haiku"], aggregator = "local", strategy = "moa"}"#,
        )],
    )
    .unwrap();
    let moa = c.llm.moa.unwrap();
    assert_eq!(
        (moa.proposers, moa.aggregator, moa.strategy),
        (vec!["haiku".to_string()], "local".into(), Strategy::Moa)
    );
    let m = value_message(
        load_toml(
            "moa-env-bad.toml",
            "",
            &[(
                "COMPACTD_MOA",
                r#"{proposers = ["x"], aggregator = "local"}"#,
            )],
        ),
        "COMPACTD_MOA",
    );
    assert!(m.contains("\"x\""), "{m}");
}

#[test]
fn streaming_and_stalls_from_the_file_and_the_environment() {
    let c = load(&[]).unwrap();
    assert_eq!(c.llm.stall, Duration::from_secs(60));
    let c = load(&[
        ("COMPACTD_MODEL_STALL_MS", "5000"),
        ("COMPACTD_SUMMARIZER", "openai"),
        ("COMPACTD_MODEL", "m"),
        ("COMPACTD_MODEL_OPTIONS", "{stream = false}"),
        (
            "COMPACTD_MODELS",
            r#"[{kind = "anthropic", model = "h", stall_ms = 0}]"#,
        ),
    ])
    .unwrap();
    let l = &c.llm;
    assert_eq!(l.stall, Duration::from_secs(5));
    assert_eq!(
        (l.models[0].options.stream, l.models[0].options.streams()),
        (Some(false), false)
    );
    assert_eq!(l.models[0].options.stall_ms, None);
    assert!(l.models[1].options.streams(), "streams by default");
    assert_eq!(l.models[1].options.stall_ms, Some(0));
    let shown = shown_of(&c);
    assert!(shown.contains(r#""modelStallMs":5000"#), "{shown}");
    assert!(shown.contains(r#""stream":false"#), "{shown}");
    assert!(shown.contains(r#""stallMs":0"#), "{shown}");
    assert_names(
        load(&[("COMPACTD_MODEL_STALL_MS", "soon")]),
        "COMPACTD_MODEL_STALL_MS",
    );
    assert_names(
        load(&[(
            "COMPACTD_MODELS",
            r#"[{kind = "openai", model = "m", stream = "perhaps"}]"#,
        )]),
        "COMPACTD_MODELS",
    );
}
