//! Dropping a summarize future cancels its upstream call and closes the connection.

use compactd::summarize::{Mode, Silent, Summarize};
use std::time::Duration;

use compactd::config::ModelConfig;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn dropping_the_future_cancels_the_upstream_call() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("never read").set_delay(Duration::from_secs(5)))
        .expect(1)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let req = request("p");
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        engine.summarize(&req, Mode::WithFallback, &Silent),
    )
    .await;
    assert!(dropped.is_err(), "still waiting for upstream");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        requests(&server).await.len(),
        1,
        "arrived once, never retried"
    );
}

#[tokio::test]
async fn dropping_the_future_closes_the_connection() {
    let (port, arrived_rx, upstream) = silent_upstream().await;
    let mut cfg = config(vec![ModelConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        ..openai("openai", &MockServer::start().await)
    }]);
    cfg.upstream_timeout = Duration::from_secs(10);
    let engine = engine(&cfg);
    let req = request("p");
    // Boxed, so that `drop` really drops it (a stack-pinned future lives to the end of
    // the scope).
    let mut call = Box::pin(engine.summarize(&req, Mode::WithFallback, &Silent));
    tokio::select! {
        result = &mut call => panic!("answered without an upstream answer: {result:?}"),
        _ = arrived_rx => {}
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(call);
    assert!(
        upstream.await.unwrap(),
        "the upstream connection was closed when the future was dropped"
    );
}
