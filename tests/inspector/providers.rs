//! Provider-style requests in the page: a `/v1/responses/compact` or `/v1/messages` body is
//! drawn as the session its route builds, and compacted by that route.

use serde_json::json;

use super::browser::{artefacts, available, Browser};
use super::{open_page, spawn, upload_file};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_request_is_drawn_as_its_session_and_compacted_by_its_route() {
    if !available() {
        return;
    }
    let address = spawn(|_| {}).await;
    let mut input = Vec::new();
    for t in 0..12 {
        input.push(json!({"role": "user", "content": format!("Step {t}: read src/m{t}.rs. Never push to main.")}));
        input.push(
            json!({"type": "function_call", "call_id": format!("c{t}"), "name": "read",
            "arguments": format!("{{\"path\":\"src/m{t}.rs\"}}")}),
        );
        input.push(
            json!({"type": "function_call_output", "call_id": format!("c{t}"),
            "output": "let x = 1; ".repeat(80)}),
        );
    }
    let request = json!({"model": "any", "input": input, "keepRecentTokens": 600});
    let file = artefacts().join("responses-request.json");
    std::fs::write(&file, request.to_string()).unwrap();

    let b = Browser::start().await;
    open_page(&b, &address).await;
    // The settings are hidden until a session is drawn; set before, they are kept.
    b.js(
        "document.getElementById('keepRecentTokens').value = '600'",
        vec![],
    )
    .await;
    upload_file(&b, &file).await;
    // The session the route builds: one entry per user message, call turn and output
    // (the header is not counted).
    let count = b
        .js(
            "return window.compactdInspector.state.outline.count",
            vec![],
        )
        .await;
    assert_eq!(count, 36);
    assert!(b.text("#cut-line").await.contains("Cut before entry"));

    b.click("#compact").await;
    let summary = b
        .until(
            "the summary",
            "return document.querySelector('#summary')?.textContent",
        )
        .await;
    assert!(
        summary
            .as_str()
            .unwrap()
            .starts_with("Reference context: earlier messages"),
        "{summary}"
    );
    let kept = b.text("#result h4:last-of-type").await;
    assert!(kept.starts_with("Kept items: "), "{kept}");
    b.screenshot("page-responses-compacted").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_compaction_request_is_summarized_whole_by_its_route() {
    if !available() {
        return;
    }
    let address = spawn(|_| {}).await;
    let mut messages = Vec::new();
    for t in 0..6 {
        messages.push(json!({"role": "user", "content": format!("Step {t}: tidy src/m{t}.rs. Never push to main.")}));
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Reading src/m{t}.rs.")},
            {"type": "tool_use", "id": format!("t{t}"), "name": "read", "input": {"path": format!("src/m{t}.rs")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{t}"), "content": "let x = 1; ".repeat(40)}]}));
    }
    let request = json!({"model": "claude-x", "max_tokens": 4096, "messages": messages,
        "compaction": {"type": "summarize"}});
    let file = artefacts().join("messages-request.json");
    std::fs::write(&file, request.to_string()).unwrap();

    let b = Browser::start().await;
    open_page(&b, &address).await;
    upload_file(&b, &file).await;
    // Everything is summarized: the cut is the empty user message the route adds last.
    let keep = b
        .js(
            "return document.getElementById('keepRecentTokens').value",
            vec![],
        )
        .await;
    assert_eq!(keep, "0");
    let line = b.text("#cut-line").await;
    assert!(line.contains("Cut before entry m"), "{line}");

    b.click("#compact").await;
    let summary = b
        .until(
            "the compaction block",
            "return document.querySelector('#summary')?.textContent",
        )
        .await;
    assert!(!summary.as_str().unwrap().trim().is_empty());
    let result = b.text("#result").await;
    assert!(result.contains("stop_reason compaction"), "{result}");
    assert!(result.contains("Kept items: 0"), "{result}");
    b.screenshot("page-messages-compacted").await;
    b.close().await;
}
