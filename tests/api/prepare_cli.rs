//! `compactd prepare` and `compactd compact --dry-run` print what `POST /v1/prepare`
//! answers, byte for byte (both write `PrepareResponse::to_json`), and `--pretty` the same
//! value indented.

use serde_json::Value;

use crate::fixtures;
use crate::helpers::{cli_output as compactd, spawn_app};

/// The server's answer and the two commands' output for one session and keepRecentTokens.
async fn compare(file: &std::path::Path, keep: &str) -> Value {
    let app = spawn_app().await;
    let res = app
        .client
        .post(format!(
            "{}/v1/prepare?keepRecentTokens={keep}",
            app.address
        ))
        .header("content-type", "application/x-ndjson")
        .body(std::fs::read(file).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let served = res.bytes().await.unwrap().to_vec();

    let file = file.to_str().unwrap();
    let printed = compactd(&["prepare", file, "--keep-recent-tokens", keep]);
    assert_eq!(
        printed,
        [served.as_slice(), b"\n"].concat(),
        "compactd prepare differs from /v1/prepare"
    );
    let dry = compactd(&["compact", file, "--dry-run", "--keep-recent-tokens", keep]);
    assert_eq!(dry, printed, "compact --dry-run differs from prepare");

    let pretty = compactd(&["prepare", file, "--keep-recent-tokens", keep, "--pretty"]);
    assert!(pretty.starts_with(b"{\n  \""), "not indented");
    let value: Value = serde_json::from_slice(&served).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&pretty).unwrap(), value);
    value
}

#[tokio::test]
async fn the_commands_print_the_servers_prepare_answer() {
    let file = fixtures::path("before-compaction.jsonl");
    let compactable = compare(&file, "20000").await;
    assert_eq!(compactable["compactable"], true, "{compactable}");
    // Everything kept: the not-compactable answer takes the same way.
    let kept = compare(&file, "100000000").await;
    assert_eq!(kept["compactable"], false, "{kept}");
}
