use crate::helpers::spawn_app;

/// The committed spec must be what the code generates; regenerate with
/// `cargo run -- openapi > openapi/openapi.json`.
#[test]
fn committed_openapi_matches_the_code() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    let committed = std::fs::read_to_string(&path).expect("openapi/openapi.json is committed");
    let generated = compactd::http::openapi::spec_json();
    assert!(
        committed.trim_end() == generated.trim_end(),
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
}

#[tokio::test]
async fn the_spec_is_served_and_lists_every_route() {
    let app = spawn_app().await;
    let spec: serde_json::Value = app.get("/openapi.json").await.json().await.unwrap();
    for route in ["/v1/prepare", "/healthz", "/readyz"] {
        assert!(spec["paths"].get(route).is_some(), "{route} missing");
    }
}
