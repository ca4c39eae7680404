//! Which candidate answers, their context windows, and the engine's description.

use compactd::config::SummarizerChoice;
use compactd::summarize::{Mode, Silent, Summarize, SummarizeError, SummarizerKind};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn describe_and_selection() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_answer("end_turn"))
        .expect(1)
        .mount(&server)
        .await;
    let mut local = openai("local", &server);
    local.api_key = None;
    let cfg = config(vec![local, anthropic("claude", &server)]);
    let engine = engine(&cfg);
    let d = engine.describe();
    assert_eq!(d["summarizer"], "openai");
    assert_eq!(d["fallback"], "extractive");
    assert_eq!(d["retries"], 2);
    assert_eq!(d["upstreamTimeoutMs"], 3000);
    assert_eq!(d["deadlineMs"], 10_000);
    assert_eq!(d["candidates"][0]["name"], "local");
    assert_eq!(d["candidates"][0]["kind"], "openai");
    assert_eq!(d["candidates"][0]["contextWindow"], 64_000);
    assert_eq!(d["candidates"][0]["apiKeySet"], false);
    assert_eq!(d["candidates"][1]["kind"], "anthropic");

    assert_eq!(engine.context_window(None, None), Some(64_000));
    assert_eq!(engine.context_window(Some("claude"), None), Some(200_000));
    assert_eq!(
        engine.context_window(Some("claude-test"), None),
        Some(200_000)
    );
    assert_eq!(engine.context_window(Some("extractive"), None), None);
    assert_eq!(engine.context_window(Some("nope"), None), None);

    let s = engine
        .summarize(
            &named(request("p"), Some("claude")),
            Mode::WithFallback,
            &Silent,
        )
        .await
        .unwrap();
    assert_eq!(s.model, "claude/claude-test");
    let err = engine
        .summarize(
            &named(request("p"), Some("gpt-9")),
            Mode::WithFallback,
            &Silent,
        )
        .await
        .unwrap_err();
    assert_eq!(err, SummarizeError::UnknownModel("gpt-9".into()));
    let s = engine
        .summarize(
            &named(request("p"), Some("extractive")),
            Mode::WithFallback,
            &Silent,
        )
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
}

#[tokio::test]
async fn extractive_summarizer_makes_no_call() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("unused"))
        .expect(0)
        .mount(&server)
        .await;
    let mut cfg = config(vec![]);
    cfg.summarizer = SummarizerChoice::Extractive;
    let engine = engine(&cfg);
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(
        (s.summarizer, s.text.as_str()),
        (SummarizerKind::Extractive, EXTRACTIVE_TEXT)
    );
    assert_eq!(engine.context_window(None, None), None);
    assert_eq!(engine.describe()["summarizer"], "extractive");
    assert!(matches!(
        engine
            .summarize(
                &named(request("p"), Some("gpt-test")),
                Mode::WithFallback,
                &Silent
            )
            .await,
        Err(SummarizeError::UnknownModel(_))
    ));
}
