//! Moving on to the next candidate, and what happens when every candidate failed.

use compactd::config::{FallbackPolicy, LlmConfig};
use compactd::summarize::{Mode, Silent, Summarize, SummarizeError, SummarizerKind};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn finish_reason_length_moves_to_the_next_candidate() {
    let first = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_answer(json!("cut off mid-"), "length"))
        .expect(1) // not retried with the same budget
        .mount(&first)
        .await;
    let second = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_answer("end_turn"))
        .expect(1)
        .mount(&second)
        .await;
    let cfg = config(vec![openai("fast", &first), anthropic("careful", &second)]);
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.model, "careful/claude-test");
    assert_eq!(s.text, "## Goal\nfirst\nsecond");
    assert_eq!(s.retries, 0);
}

#[tokio::test]
async fn stop_reason_max_tokens_falls_back() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(anthropic_answer("max_tokens"))
        .expect(1)
        .mount(&server)
        .await;
    let cfg = config(vec![anthropic("anthropic", &server)]);
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    assert_eq!(s.text, EXTRACTIVE_TEXT);
}

async fn failing_candidates() -> (MockServer, MockServer, LlmConfig) {
    let unauthorized = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": format!("Incorrect API key provided: {KEY}. {}", "x".repeat(500))}
        })))
        .expect(1) // not retried
        .mount(&unauthorized)
        .await;
    let unavailable = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("<html>".repeat(1000)))
        .expect(2) // retried once
        .mount(&unavailable)
        .await;
    let mut refused = openai("refused", &unavailable);
    refused.base_url = format!("http://127.0.0.1:{}/v1", closed_port().await);
    let mut cfg = config(vec![
        openai("primary", &unauthorized),
        anthropic("secondary", &unavailable),
        refused,
    ]);
    cfg.retries = 1;
    (unauthorized, unavailable, cfg)
}

#[tokio::test]
async fn all_candidates_fail_with_extractive_fallback() {
    let (_a, _b, cfg) = failing_candidates().await;
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    assert_eq!(s.text, EXTRACTIVE_TEXT);
    assert_eq!(s.model, "extractive");
    assert_eq!(
        s.retries, 2,
        "one retry each for the 503 and the refused connection"
    );
}

#[tokio::test]
async fn all_candidates_fail_without_fallback() {
    let (_a, _b, mut cfg) = failing_candidates().await;
    cfg.fallback = FallbackPolicy::None;
    let err = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap_err();
    let SummarizeError::Upstream(message) = &err else {
        panic!("expected Upstream, got {err:?}");
    };
    assert!(message.contains("primary/gpt-test: HTTP 401"), "{message}");
    assert!(
        message.contains("secondary/claude-test: HTTP 503"),
        "{message}"
    );
    assert!(
        message.contains("refused/gpt-test: cannot connect"),
        "{message}"
    );
    assert!(message.contains("(2 attempts)"), "{message}");
    assert!(!message.contains(KEY), "{message}");
    assert!(!message.contains("<html>"), "{message}");
    assert!(!err.to_string().contains(KEY));
    assert!(message.len() < 1000, "{} chars: {message}", message.len());
}
