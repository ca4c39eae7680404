//! Configurations the engine refuses to be built from, by the error's variant.

use compactd::config::ConfigError;
use compactd::summarize::llm::{Engine, EngineError};
use wiremock::MockServer;

use crate::helpers::*;
use crate::upstreams::*;

/// The error of building an engine from `models` (with the tests' other settings).
fn refused(models: Vec<compactd::config::ModelConfig>) -> EngineError {
    Engine::new(&config(models), fallback()).expect_err("the configuration is refused")
}

#[tokio::test]
async fn invalid_configurations_are_refused() {
    let server = MockServer::start().await;
    let err = refused(vec![]);
    assert!(
        matches!(&err, EngineError::Config(ConfigError::Value { name, .. }) if name == "COMPACTD_MODEL"),
        "{err:?}"
    );
    let mut bad_key = openai("openai", &server);
    bad_key.api_key = Some("sk-test-SECRET-\n123".into());
    let err = refused(vec![bad_key]);
    assert!(
        matches!(&err, EngineError::InvalidApiKey { model } if model == "openai"),
        "{err:?}"
    );
    assert!(!format!("{err} {err:?}").contains("SECRET"), "{err:?}");
    let mut ftp = openai("openai", &server);
    ftp.base_url = "ftp://user:pw-HIDDEN@example.com/".into();
    let err = refused(vec![ftp]);
    assert!(
        matches!(&err, EngineError::Config(ConfigError::Value { name, .. }) if name == "models[0].base_url"),
        "{err:?}"
    );
    assert!(!format!("{err} {err:?}").contains("HIDDEN"), "{err:?}");
    let err = refused(vec![openai("same", &server), anthropic("same", &server)]);
    assert!(
        matches!(&err, EngineError::Config(ConfigError::Value { name, message })
            if name == "models[1].name" && message.contains("twice")),
        "{err:?}"
    );
}
