//! The HTTP API in front of fakes with the real servers' rules
//! (`tests/support/model_servers.rs`): a model whose real window is smaller than the one
//! configured (a context overflow re-plans the compaction in smaller chunks).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

use crate::helpers::{spawn_app_with, TestApp};
use crate::model_servers::OpenAiServer;
use crate::upstreams::{config, openai};

/// A session of `turns` user/assistant exchanges, ~1,200 characters each (`salt`
/// makes its text differ from another's, so no answer comes from the cache).
pub fn long_session(turns: usize, salt: &str) -> String {
    let mut lines = vec![r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/r"}"#.to_string()];
    let mut parent = "null".to_string();
    for i in 0..turns * 2 {
        let id = format!("m{i:04}");
        let (role, extra) = if i % 2 == 0 {
            ("user", "")
        } else {
            ("assistant", r#","stopReason":"stop""#)
        };
        let text = format!("turn {i}: let {salt}{i} = compute({i}); ").repeat(20);
        lines.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}]{extra}}}}}"#
        ));
        parent = format!("\"{id}\"");
    }
    lines.join("\n") + "\n"
}

/// compactd with one OpenAI-compatible model, `name`, served by the fake `model`.
async fn in_front_of(model: OpenAiServer, name: &str) -> (MockServer, TestApp) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(model)
        .mount(&server)
        .await;
    let llm = config(vec![openai(name, &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    (server, app)
}

/// compactd told 64,000 tokens in front of a server that has 8,000; the server's count of
/// the requests it answered.
async fn smaller_than_told() -> (MockServer, Arc<AtomicUsize>, TestApp) {
    let model = OpenAiServer::new(8_000);
    let answered = model.answered.clone();
    let (server, app) = in_front_of(model, "openai").await;
    (server, answered, app)
}

/// compactd in front of a model `ollama` that cuts prompts over 2,048 tokens silently.
async fn silently_cutting() -> TestApp {
    in_front_of(OpenAiServer::new(2_048).truncating(), "ollama")
        .await
        .1
}

/// A conversation far longer than the 2,048 tokens the cutting server keeps.
fn long_prompt() -> String {
    format!(
        "<conversation>\n{}\n</conversation>",
        "[User]: let x = 1;\n".repeat(3_000)
    )
}

#[tokio::test]
async fn a_context_overflow_replans_the_compaction_in_smaller_chunks() {
    let (server, answered, app) = smaller_than_told().await;
    let res = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=1&reserveTokens=1000",
            long_session(20, "x"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "llm", "{body}");
    assert!(body["chunks"].as_u64().unwrap() >= 2, "{body}");
    assert_eq!(
        body["calls"].as_u64().unwrap() as usize,
        answered.load(std::sync::atomic::Ordering::SeqCst)
    );
    let received = server.received_requests().await.unwrap();
    assert!(received.len() > answered.load(std::sync::atomic::Ordering::SeqCst));
    // The next compaction plans for the smaller window at once: no refused request.
    let before = received.len();
    let res = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=1&reserveTokens=1000",
            long_session(20, "y"),
        )
        .await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "llm", "{body}");
    let after = server.received_requests().await.unwrap().len();
    assert_eq!(after - before, body["calls"].as_u64().unwrap() as usize);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("compactd_context_overflows_total{model=\"openai\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_silently_cut_prompt_is_reported_in_the_answer_and_counted() {
    let app = silently_cutting().await;
    let res = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=1&reserveTokens=1000",
            long_session(20, "z"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "llm", "{body}");
    let warnings = body["warnings"].as_array().expect("warnings");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("ollama/gpt-test reported 2048 prompt tokens"),
        "{body}"
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("compactd_truncated_prompts_total{model=\"ollama\"}"),
        "{metrics}"
    );
    // /v1/summarize carries it too; an answer without one has no `warnings`.
    let prompt = long_prompt();
    let res = app
        .post_json(
            "/v1/summarize",
            &serde_json::json!({"systemPrompt": "", "prompt": prompt}),
        )
        .await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["warnings"].as_array().map(Vec::len), Some(1), "{body}");
    let res = app
        .post_json(
            "/v1/summarize",
            &serde_json::json!({"systemPrompt": "", "prompt": "<conversation>\n[User]: hi\n</conversation>"}),
        )
        .await;
    let body: Value = res.json().await.unwrap();
    assert!(body.get("warnings").is_none(), "{body}");
}

#[tokio::test]
async fn a_branch_summary_over_the_real_window_is_folded_after_the_overflow() {
    let (server, answered, app) = smaller_than_told().await;
    let res = app
        .post_jsonl(
            "/v1/branch-summary?oldLeafId=m0039&targetId=m0000",
            long_session(20, "b"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "llm", "{body}");
    let answered = answered.load(std::sync::atomic::Ordering::SeqCst);
    let received = server.received_requests().await.unwrap().len();
    assert!(
        answered >= 2 && received > answered,
        "{answered} of {received}"
    );
}

#[tokio::test]
async fn the_chat_facade_reports_a_silently_cut_prompt() {
    let app = silently_cutting().await;
    let prompt = long_prompt();
    let body: Value = app
        .post_json(
            "/v1/chat/completions",
            &serde_json::json!({"messages": [{"role": "user", "content": prompt}]}),
        )
        .await
        .json()
        .await
        .unwrap();
    let warnings = body["warnings"].as_array().expect("warnings");
    assert!(
        warnings[0].as_str().unwrap().contains("ollama/gpt-test"),
        "{body}"
    );
}
