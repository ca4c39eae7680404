//! `--strategy` on the commands that summarize: `compactd compact FILE --strategy moa` runs
//! Mixture-of-Agents with the configured `[moa]` models, a bad value is a usage error, and
//! `moa` without a `[moa]` table fails with the server's problem document.

use std::process::Command;

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn compactd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(args)
        .env_remove("COMPACTD_CONFIG")
        .env_remove("COMPACTD_MOA")
        .output()
        .expect("compactd runs")
}

/// A file with `contents`; its path lives as long as the test process (blocking tasks
/// borrow it).
fn tmp(name: &str, contents: &str) -> &'static str {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("strategy-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{name}", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    Box::leak(path.to_str().unwrap().to_string().into_boxed_str())
}

async fn model(text: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })))
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_with_strategy_moa_drafts_with_every_proposer_and_aggregates() {
    let a = model("## Goal\nDraft from a").await;
    let b = model("## Goal\nMerged by b").await;
    let config = tmp(
        "moa.toml",
        &format!(
            "summarizer = \"openai\"\nfallback = \"none\"\n\n[[models]]\nname = \"a\"\nkind = \"openai\"\nmodel = \"a-model\"\nbase_url = \"{}/v1\"\n\n[[models]]\nname = \"b\"\nkind = \"openai\"\nmodel = \"b-model\"\nbase_url = \"{}/v1\"\n\n[moa]\nproposers = [\"a\", \"b\"]\naggregator = \"b\"\n",
            a.uri(),
            b.uri()
        ),
    );
    let session = tmp("s.jsonl", &crate::real_servers::long_session(6, "cli"));
    let args = [
        "--config",
        config,
        "compact",
        session,
        "--keep-recent-tokens",
        "1",
    ];
    let out = tokio::task::spawn_blocking(move || {
        compactd(&[&args[..], &["--strategy", "moa"]].concat())
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        answer["summary"].as_str().unwrap().lines().nth(1),
        Some("Merged by b"),
        "{answer}"
    );
    // Each summarizer call: a draft from each proposer, then b aggregates.
    let calls = answer["calls"].as_u64().unwrap() as usize;
    assert!(calls >= 1, "{answer}");
    assert_eq!(a.received_requests().await.unwrap().len(), calls);
    assert_eq!(b.received_requests().await.unwrap().len(), 2 * calls);

    let single = tokio::task::spawn_blocking(move || {
        compactd(&[&args[..], &["--strategy", "single"]].concat())
    })
    .await
    .unwrap();
    assert!(single.status.success(), "{single:?}");
    assert_eq!(
        a.received_requests().await.unwrap().len(),
        2 * calls,
        "the first candidate alone"
    );
    assert_eq!(b.received_requests().await.unwrap().len(), 2 * calls);
}

#[test]
fn a_bad_strategy_is_a_usage_error_and_moa_needs_a_moa_table() {
    let session = tmp("t.jsonl", &crate::real_servers::long_session(3, "bad"));
    let bad = compactd(&["compact", session, "--strategy", "many"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected `single` or `moa`"));
    let no_table = compactd(&[
        "compact",
        session,
        "--keep-recent-tokens",
        "1",
        "--strategy",
        "moa",
    ]);
    assert_eq!(no_table.status.code(), Some(1), "{no_table:?}");
    assert!(
        String::from_utf8_lossy(&no_table.stderr).contains("moa-not-configured"),
        "{no_table:?}"
    );
}

/// `compactd compact FILE --target-tokens N`: the same context budget as `targetTokens`.
#[test]
fn the_command_line_takes_a_target() {
    let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi-sessions/large-session.jsonl");
    let out = compactd(&[
        "compact",
        file.to_str().unwrap(),
        "--target-tokens",
        "30000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let after = answer["tokensAfter"].as_u64().unwrap();
    assert!(after <= 30_000 && after > 20_000, "{after}");
}
