//! The cache of identical requests.

use compactd::summarize::{Mode, Silent, Summarize, SummarizerKind};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn identical_requests_are_served_from_the_cache() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("cached answer"))
        .expect(2)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let first = engine
        .summarize(&request("same"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(!first.cached);
    let second = engine
        .summarize(&request("same"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(second.cached);
    assert_eq!((second.text, second.model), (first.text, first.model));
    assert_eq!(second.usage, first.usage);
    // Naming the only candidate is the same selection.
    assert!(
        engine
            .summarize(
                &named(request("same"), Some("openai")),
                Mode::WithFallback,
                &Silent
            )
            .await
            .unwrap()
            .cached
    );
    // A different budget is a different request.
    let mut other = request("same");
    other.max_tokens = 100;
    assert!(
        !engine
            .summarize(&other, Mode::WithFallback, &Silent)
            .await
            .unwrap()
            .cached
    );
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn fallback_answers_are_not_cached() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400))
        .expect(2)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    for _ in 0..2 {
        let s = engine
            .summarize(&request("p"), Mode::WithFallback, &Silent)
            .await
            .unwrap();
        assert_eq!(
            (s.summarizer, s.cached),
            (SummarizerKind::Extractive, false)
        );
    }
}
