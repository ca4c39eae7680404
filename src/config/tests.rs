//! Loading: defaults, file and environment, the names errors give, and that secrets
//! never show.

use std::path::PathBuf;

use secrecy::ExposeSecret;

use super::*;

fn shown_keys(keys: &ClientKeys) -> Vec<&str> {
    keys.iter().map(|k| k.expose_secret()).collect()
}

/// Everything a loaded configuration shows: its `Debug` and its description.
fn shown_of(c: &Config) -> String {
    format!(
        "{c:?} {}",
        serde_json::to_string(&c.describe(c.llm.describe())).unwrap()
    )
}

#[test]
fn api_keys_from_env_and_file() {
    let dir = std::env::temp_dir().join(format!("compactd-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys");
    std::fs::write(&file, "# comment\nkey-two\n\n").unwrap();
    let path = file.display().to_string();
    let c = Config::load_from(None, |k| match k {
        "COMPACTD_API_KEYS" => Some("key-one, ".into()),
        "COMPACTD_API_KEYS_FILE" => Some(path.clone()),
        _ => None,
    })
    .unwrap();
    assert_eq!(shown_keys(&c.api_keys), ["key-one", "key-two"]);
    assert!(!format!("{:?}", c).contains("key-one"));
    assert!(!shown_of(&c).contains("key-one"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn env_overrides_defaults_and_bad_values_are_named() {
    let env = |k: &str| match k {
        "COMPACTD_KEEP_RECENT_TOKENS" => Some("1000".to_string()),
        "COMPACTD_LISTEN" => Some("0.0.0.0:9000".to_string()),
        _ => None,
    };
    let c = Config::load_from(None, env).unwrap();
    assert_eq!(c.keep_recent_tokens, 1000);
    assert_eq!(c.listen.port(), 9000);
    let err = Config::load_from(None, |k| {
        (k == "COMPACTD_RESERVE_TOKENS").then(|| "lots".into())
    })
    .unwrap_err();
    assert!(err.to_string().contains("COMPACTD_RESERVE_TOKENS"), "{err}");
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
}

fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::load_from(None, env_of(pairs))
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("compactd-config-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    path
}

fn assert_names(result: Result<Config, ConfigError>, name: &str) {
    match result {
        Err(ConfigError::Value { name: n, message }) => {
            assert_eq!(n, name, "{message}")
        }
        Err(other) => panic!("expected a value error for {name}, got {other}"),
        Ok(_) => panic!("expected a value error for {name}"),
    }
}

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

/// One value for every setting, as the file writes it and as the environment does.
/// `api_keys` is the one setting the file refuses (a secret); see below.
const EVERY_SETTING: &[(&str, &str, &str)] = &[
    ("listen", r#""0.0.0.0:9000""#, "0.0.0.0:9000"),
    ("max_body_bytes", "1000", "1000"),
    ("max_entries", "10", "10"),
    ("max_concurrency", "3", "3"),
    ("request_timeout_secs", "30", "30"),
    ("shutdown_grace_secs", "5", "5"),
    ("heartbeat_ms", "250", "250"),
    ("job_ttl_secs", "60", "60"),
    ("keep_recent_tokens", "1000", "1000"),
    ("reserve_tokens", "2000", "2000"),
    ("branch_reserve_tokens", "3000", "3000"),
    ("context_window", "64000", "64000"),
    ("pin", "false", "false"),
    ("pin_budget_share", "0.5", "0.5"),
    ("min_progress", "0.1", "0.1"),
    ("prompts_dir", r#""/srv/prompts""#, "/srv/prompts"),
    ("log_format", r#""json""#, "json"),
    ("summarizer", r#""anthropic""#, "anthropic"),
    ("fallback", r#""none""#, "none"),
    ("model", r#""claude-x""#, "claude-x"),
    (
        "base_url",
        r#""http://127.0.0.1:1/a""#,
        "http://127.0.0.1:1/a",
    ),
    ("model_context_window", "1000", "1000"),
    (
        "model_options",
        r#"{ thinking_budget = 2048, max_output_tokens = 16000 }"#,
        r#"{ thinking_budget = 2048, max_output_tokens = 16000 }"#,
    ),
    ("upstream_timeout_secs", "7", "7"),
    ("retries", "4", "4"),
    ("backoff_base_ms", "1", "1"),
    ("backoff_cap_ms", "2", "2"),
    ("cache_entries", "3", "3"),
    ("cache_bytes", "4", "4"),
    (
        "models",
        r#"[{ name = "b", kind = "openai", model = "b-1" }]"#,
        r#"[{ name = "b", kind = "openai", model = "b-1" }]"#,
    ),
    (
        "moa",
        r#"{ proposers = ["b"], aggregator = "b", strategy = "moa" }"#,
        r#"{ proposers = ["b"], aggregator = "b", strategy = "moa" }"#,
    ),
    ("api_keys_file", "KEYS_FILE", "KEYS_FILE"),
    ("llm_api_key_file", "LLM_KEY_FILE", "LLM_KEY_FILE"),
    ("inspector", "false", "false"),
];

#[test]
fn every_setting_is_settable_from_the_file_and_from_the_environment() {
    let keys_file = temp_file("every-keys", "client-key\n");
    let llm_key_file = temp_file("every-llm-key", "sk-file\n");
    let paths = |v: &str| {
        v.replace("KEYS_FILE", &keys_file.display().to_string())
            .replace("LLM_KEY_FILE", &llm_key_file.display().to_string())
    };
    let mut listed: Vec<&str> = EVERY_SETTING.iter().map(|(k, _, _)| *k).collect();
    listed.push("api_keys");
    listed.sort_unstable();
    let mut keys = sources::setting_keys().to_vec();
    keys.sort_unstable();
    assert_eq!(listed, keys, "a new setting needs a line in EVERY_SETTING");

    let toml: String = EVERY_SETTING
        .iter()
        .map(|(k, file, _)| {
            let v = paths(file);
            let v = if v.starts_with('/') {
                format!("{v:?}")
            } else {
                v
            };
            format!("{k} = {v}\n")
        })
        .collect();
    let file = temp_file("every.toml", &toml);
    let from_file = Config::load_from(Some(&file), env_of(&[])).unwrap();
    let env: Vec<(String, String)> = EVERY_SETTING
        .iter()
        .map(|(k, _, v)| (sources::env_name(k), paths(v)))
        .collect();
    let env_pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let from_env = load(&env_pairs).unwrap();

    assert_eq!(shown_of(&from_file), shown_of(&from_env));
    assert_ne!(shown_of(&from_file), shown_of(&Config::default()));
    for c in [&from_file, &from_env] {
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.llm.backoff_cap, Duration::from_millis(2));
        let names: Vec<_> = c.llm.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["anthropic", "b"]);
        assert_eq!(c.llm.models[0].options.thinking_budget, Some(2048));
        let key = c.llm.models[1].api_key.as_ref().unwrap();
        assert_eq!(key.expose_secret(), "sk-file");
        assert_eq!(shown_keys(&c.api_keys), ["client-key"]);
        assert!(!c.inspector);
    }

    // The environment wins over the file.
    let c = Config::load_from(Some(&file), env_of(&[("COMPACTD_RETRIES", "9")])).unwrap();
    assert_eq!((c.llm.retries, c.max_entries), (9, 10));
    // COMPACTD_CONFIG names the file when --config does not.
    let c = load(&[("COMPACTD_CONFIG", file.to_str().unwrap())]).unwrap();
    assert_eq!(c.max_entries, 10);
    for f in [file, keys_file, llm_key_file] {
        std::fs::remove_file(f).unwrap();
    }
}

fn file_message(result: Result<Config, ConfigError>) -> String {
    match result {
        Err(ConfigError::File { message, .. }) => message,
        Err(other) => panic!("expected a file error, got {other}"),
        Ok(_) => panic!("expected a file error"),
    }
}

#[test]
fn file_errors_name_the_key() {
    let load_toml = |name: &str, toml: &str| {
        let file = temp_file(name, toml);
        let result = Config::load_from(Some(&file), env_of(&[]));
        std::fs::remove_file(&file).unwrap();
        result
    };
    let message = file_message(load_toml("type.toml", "reserve_tokens = \"lots\"\n"));
    assert!(message.starts_with("reserve_tokens:"), "{message}");
    let message = file_message(load_toml("variant.toml", "log_format = \"xml\"\n"));
    assert!(message.starts_with("log_format:"), "{message}");
    let message = file_message(load_toml(
        "kind.toml",
        "[[models]]\nkind = \"gpt\"\nmodel = \"m\"\n",
    ));
    assert!(message.starts_with("models[0].kind:"), "{message}");
    let message = file_message(load_toml("unknown.toml", "colour = 1\n"));
    assert!(message.contains("colour"), "{message}");
    file_message(load_toml("syntax.toml", "retries = = 1\n"));
    // A value the checks refuse names the key when the file set it.
    assert_names(
        load_toml("zero.toml", "max_body_bytes = 0\n"),
        "max_body_bytes",
    );
    assert_names(
        load_toml("backoff.toml", "backoff_base_ms = 10\nbackoff_cap_ms = 1\n"),
        "backoff_base_ms",
    );
    // Client keys are secrets: never inline in the file, and never quoted.
    let message = file_message(load_toml("keys.toml", "api_keys = \"k-SECRET\"\n"));
    assert!(message.contains("api_keys_file"), "{message}");
    assert!(!message.contains("SECRET"), "{message}");
    // A named file that is missing stops start-up.
    let missing = std::env::temp_dir().join("compactd-config-no-such-file.toml");
    assert!(matches!(
        Config::load_from(Some(&missing), env_of(&[])),
        Err(ConfigError::Read { .. })
    ));
}

#[test]
fn environment_values_are_trimmed_and_blank_ones_unset() {
    let c = load(&[
        ("COMPACTD_RETRIES", " 5 "),
        ("COMPACTD_MODEL", "  "),
        ("COMPACTD_LOG_FORMAT", "json\n"),
        // Not settings: ignored.
        ("COMPACTD_FUZZ_SECS", "3"),
    ])
    .unwrap();
    assert_eq!(c.llm.retries, 5);
    assert_eq!(c.log_format, LogFormat::Json);
    assert!(c.llm.models.is_empty());
    assert_names(
        load(&[("COMPACTD_MAX_BODY_BYTES", "0")]),
        "COMPACTD_MAX_BODY_BYTES",
    );
    assert_names(
        load(&[("COMPACTD_LOG_FORMAT", "xml")]),
        "COMPACTD_LOG_FORMAT",
    );
    assert_names(load(&[("COMPACTD_LISTEN", "nowhere")]), "COMPACTD_LISTEN");
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
