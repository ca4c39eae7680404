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
    let path =
        std::env::temp_dir().join(format!("compactd-config-{}-{name}", std::process::id()));
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
