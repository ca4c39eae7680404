//! API keys and URL credentials never show: not in `Debug`, `describe`, errors or logs.

use compactd::summarize::{Mode, Silent, Summarize};
use std::sync::{Arc, Mutex};

use compactd::config::FallbackPolicy;
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn keys_never_show() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(403).set_body_json(json!({
            "error": {"message": format!("key {KEY} may not use this model")}
        })))
        .mount(&server)
        .await;
    let mut with_userinfo = openai("proxy", &server);
    with_userinfo.base_url = format!(
        "http://user:pw-HIDDEN@{}/v1?token=q-HIDDEN",
        server.address()
    );
    let mut cfg = config(vec![
        with_userinfo,
        openai("openai", &server),
        anthropic("anthropic", &server),
    ]);
    cfg.fallback = FallbackPolicy::None;
    // Capture this test's log lines (the runtime is single-threaded, so a thread-local
    // subscriber sees every one).
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || LogSink(sink.clone()))
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let engine = engine(&cfg);
    let debug = format!("{engine:?}");
    let described = engine.describe().to_string();
    let config_debug = format!("{cfg:?}");
    let err = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap_err();
    let error = format!("{err} {err:?}");
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("upstream attempt failed"), "{logged}");
    for (what, text) in [
        ("Debug", &debug),
        ("describe", &described),
        ("config Debug", &config_debug),
        ("error", &error),
        ("logs", &logged),
    ] {
        assert!(!text.contains(KEY), "{what}: {text}");
        assert!(!text.contains("HIDDEN"), "{what}: {text}");
    }
    assert!(error.contains("HTTP 403"), "{error}");
    assert!(error.contains("[REDACTED]"), "{error}");
    let d = engine.describe();
    assert_eq!(d["candidates"][0]["apiKeySet"], true);
    assert_eq!(
        d["candidates"][0]["baseUrl"],
        format!("{}/v1", server.uri())
    );
}
