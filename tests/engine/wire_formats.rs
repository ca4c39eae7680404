//! The OpenAI-compatible and Anthropic wire formats: the request sent, the answer read,
//! the usage mapped to pi's shape.

use compactd::config::SummarizerChoice;
use compactd::summarize::{Mode, Silent, Summarize, SummarizerKind, Usage};
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn openai_wire_format_and_string_content() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(openai_ok("## Goal\nShip it."))
        .expect(1)
        .mount(&server)
        .await;
    // Not streamed (`stream = false`): the plain request (`streaming.rs` has the other).
    let mut candidate = openai("openai", &server);
    candidate.options.stream = Some(false);
    let engine = engine(&config(vec![candidate]));
    let s = engine
        .summarize(&request("the conversation"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.text, "## Goal\nShip it.");
    assert_eq!(s.model, "openai/gpt-test");
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    assert_eq!((s.retries, s.cached), (0, false));
    assert_eq!(
        s.usage,
        Usage {
            input: 600,
            output: 50,
            cache_read: 400,
            cache_write: 0,
            total_tokens: 1050,
            reasoning: 0
        }
    );
    let sent = requests(&server).await;
    assert_eq!(
        String::from_utf8(sent[0].body.clone()).unwrap(),
        r#"{"model":"gpt-test","messages":[{"role":"system","content":"You summarize."},{"role":"user","content":"the conversation"}],"max_tokens":512,"stream":false}"#
    );
    assert!(sent[0].headers.get("x-api-key").is_none());
}

#[tokio::test]
async fn openai_content_as_parts() {
    let server = MockServer::start().await;
    let parts = json!([{"type": "text", "text": "## Goal"}, {"type": "text", "text": "Parts."}]);
    Mock::given(method("POST"))
        .respond_with(openai_answer(parts, "stop"))
        .expect(1)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.text, "## Goal\nParts.");
}

#[tokio::test]
async fn anthropic_wire_format_and_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(anthropic_answer("end_turn"))
        .expect(1)
        .mount(&server)
        .await;
    let mut candidate = anthropic("anthropic", &server);
    candidate.options.stream = Some(false);
    let mut cfg = config(vec![candidate]);
    cfg.summarizer = SummarizerChoice::Anthropic;
    let engine = engine(&cfg);
    let s = engine
        .summarize(&request("the conversation"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.text, "## Goal\nfirst\nsecond");
    assert_eq!(s.model, "anthropic/claude-test");
    assert_eq!(
        s.usage,
        Usage {
            input: 900,
            output: 60,
            cache_read: 30,
            cache_write: 10,
            total_tokens: 1000,
            reasoning: 0
        }
    );
    let sent = requests(&server).await;
    assert_eq!(
        String::from_utf8(sent[0].body.clone()).unwrap(),
        r#"{"model":"claude-test","system":"You summarize.","messages":[{"role":"user","content":"the conversation"}],"max_tokens":512}"#
    );
    assert!(sent[0].headers.get("authorization").is_none());
}
