//! A request larger than the model's real window: the upstream's context-overflow answer
//! (OpenAI's and Anthropic's real error JSON, from the fakes in
//! `tests/support/model_servers.rs`) is a failure of its own: the candidate's assumed
//! window shrinks, a caller that can split gets `ContextOverflow`, the others the
//! fallback as before.

use compactd::config::{ModelConfig, SummarizerChoice};
use compactd::summarize::{Mode, Silent, Summarize, SummarizeError, SummarizerKind};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

use crate::helpers::*;
use crate::model_servers::{AnthropicServer, OpenAiServer};
use crate::upstreams::*;

/// ~4,000 tokens by the fakes' tokenizer, ~3,000 by compactd's estimate.
fn big_prompt() -> String {
    "fn main() { println!(\"hi\"); }\n".repeat(400)
}

#[tokio::test]
async fn an_openai_overflow_shrinks_the_window_and_is_reported_to_splitting_callers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(OpenAiServer::new(2_000))
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    assert_eq!(engine.context_window(None, None), Some(64_000));
    let req = request(&big_prompt());

    // Not splittable: the fallback answers, as for any failure.
    let s = engine
        .summarize(&req, Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    let window = engine.context_window(None, None).unwrap();
    assert!(
        (1024..=2_000).contains(&window),
        "at most the window the server named: {window}"
    );
    // Not retried as is: one attempt per call.
    assert_eq!(requests(&server).await.len(), 1);

    match engine.summarize(&req, Mode::Splittable, &Silent).await {
        Err(SummarizeError::ContextOverflow(why)) => {
            assert!(why.contains("maximum context length is 2000"), "{why}");
            assert!(!why.contains(KEY));
        }
        other => panic!("{other:?}"),
    }
    match engine.summarize(&req, Mode::ModelOnly, &Silent).await {
        Err(SummarizeError::ContextOverflow(_)) => {}
        other => panic!("{other:?}"),
    }
    // A request that fits the server is answered.
    let s = engine
        .summarize(&request("short"), Mode::Splittable, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
}

#[tokio::test]
async fn an_anthropic_prompt_too_long_is_an_overflow() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(AnthropicServer::new(3_000, 8_192))
        .mount(&server)
        .await;
    let mut cfg = config(vec![anthropic("anthropic", &server)]);
    cfg.summarizer = SummarizerChoice::Anthropic;
    let engine = engine(&cfg);
    match engine
        .summarize(&request(&big_prompt()), Mode::Splittable, &Silent)
        .await
    {
        Err(SummarizeError::ContextOverflow(why)) => {
            assert!(why.contains("prompt is too long"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert!(engine.context_window(None, None).unwrap() <= 3_000);
}

#[tokio::test]
async fn another_candidate_answers_an_overflow_of_the_first() {
    let small = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(OpenAiServer::new(1_500))
        .mount(&small)
        .await;
    let large = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(OpenAiServer::new(100_000))
        .mount(&large)
        .await;
    let engine = engine(&config(vec![
        openai("small", &small),
        ModelConfig {
            model: "gpt-large".into(),
            ..openai("large", &large)
        },
    ]));
    let s = engine
        .summarize(&request(&big_prompt()), Mode::Splittable, &Silent)
        .await
        .unwrap();
    assert_eq!(s.model, "large/gpt-large");
}
