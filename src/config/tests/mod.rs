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
    ("jobs_max", "5", "5"),
    ("jobs_max_bytes", "4096", "4096"),
    ("memory_budget_bytes", "1048576", "1048576"),
    ("max_followers", "7", "7"),
    (
        "redis_url",
        r#""redis://:pw@127.0.0.1:6399/1""#,
        "redis://:pw@127.0.0.1:6399/1",
    ),
    ("job_lease_ms", "3000", "3000"),
    ("state_timeout_ms", "500", "500"),
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
    ("model_stall_ms", "5", "5"),
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

mod llm;
