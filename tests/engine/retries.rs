//! Retries of transient failures: `Retry-After`, server errors, per-attempt timeouts,
//! and the overall deadline.

use std::time::{Duration, Instant};

use compactd::config::FallbackPolicy;
use compactd::summarize::{Mode, Silent, Summarize, SummarizeError, SummarizerKind};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn retry_after_429_is_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "slow down"}})),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("after the wait"))
        .expect(1)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let start = Instant::now();
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    let elapsed = start.elapsed();
    assert_eq!(s.text, "after the wait");
    assert_eq!(s.retries, 1);
    // The backoff is at most 20 ms here, so only Retry-After explains a second's wait.
    assert!(elapsed >= Duration::from_millis(950), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn server_error_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("second time lucky"))
        .expect(1)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!((s.text.as_str(), s.retries), ("second time lucky", 1));
    assert_eq!(s.summarizer, SummarizerKind::Llm);
}

#[tokio::test]
async fn attempt_timeout_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("too late").set_delay(Duration::from_secs(3)))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("in time"))
        .expect(1)
        .mount(&server)
        .await;
    let mut cfg = config(vec![openai("openai", &server)]);
    cfg.upstream_timeout = Duration::from_millis(300);
    let start = Instant::now();
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!((s.text.as_str(), s.retries), ("in time", 1));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn attempt_timeouts_exhaust_retries_then_fallback() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("too late").set_delay(Duration::from_secs(3)))
        .expect(2)
        .mount(&server)
        .await;
    let mut cfg = config(vec![openai("openai", &server)]);
    cfg.upstream_timeout = Duration::from_millis(200);
    cfg.retries = 1;
    let start = Instant::now();
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    assert_eq!(s.text, EXTRACTIVE_TEXT);
    assert_eq!(s.retries, 1);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn overall_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("too late").set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let mut cfg = config(vec![openai("openai", &server)]);
    cfg.deadline = Duration::from_millis(300);
    cfg.fallback = FallbackPolicy::None;
    let start = Instant::now();
    let err = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap_err();
    assert_eq!(err, SummarizeError::Timeout);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );

    cfg.fallback = FallbackPolicy::Extractive;
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
}
