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

/// Every `$ref` names a schema the document has: an unregistered type (a query parameter's
/// enum, say) renders as a dangling reference that validators and client generators refuse.
#[test]
fn every_reference_resolves() {
    fn refs<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v str>) {
        match v {
            serde_json::Value::Object(o) => {
                if let Some(serde_json::Value::String(r)) = o.get("$ref") {
                    out.push(r);
                }
                o.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let doc: serde_json::Value =
        serde_json::from_str(&compactd::http::openapi::spec_json()).unwrap();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r}: not a schema reference"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} does not exist"
        );
    }
}
