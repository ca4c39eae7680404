//! The HTTP API in front of a model upstream that hangs or misbehaves: the model call
//! is cancelled with its client, and the service answers cleanly and stays up. The
//! engine itself is tested on its own in `tests/engine`.

use std::time::{Duration, Instant};

use compactd::config::FallbackPolicy;
use serde_json::{json, Value};

use crate::upstreams::{
    raw_config, raw_upstream, silent_upstream, Misbehaviour, KEY, MISBEHAVIOURS,
};

/// Through the real server: a client that hangs up cancels the model call it caused.
#[tokio::test]
async fn a_client_disconnect_cancels_the_upstream_call() {
    let (port, _arrived, upstream) = silent_upstream().await;
    let llm = crate::helpers::silent_model("openai", port).await;
    let app = crate::helpers::spawn_app_with(move |c| c.llm = llm).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let res = client
        .post(format!("{}/v1/summarize", app.address))
        .json(&json!({"systemPrompt": "", "prompt": "<conversation>\n[User]: hi\n</conversation>"}))
        .send()
        .await;
    assert!(res.is_err(), "the client gave up before any answer");
    assert!(
        upstream.await.unwrap(),
        "compactd closed the upstream connection after its client went away"
    );
}

/// Through the real server: `/v1/compact` answers with the extractive fallback, or with a
/// clean problem document when no fallback is allowed, and the service stays up.
#[tokio::test]
async fn a_misbehaving_upstream_never_takes_the_service_down() {
    for &(how, failure, _) in MISBEHAVIOURS {
        let (base, _) = raw_upstream(how).await;
        let llm = raw_config(base.clone(), how);
        let app = crate::helpers::spawn_app_with(move |c| c.llm = llm).await;
        let res = app
            .post_jsonl(
                "/v1/compact?keepRecentTokens=1",
                crate::helpers::small_session(),
            )
            .await;
        assert_eq!(res.status().as_u16(), 200, "{how:?}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["summarizer"], "extractive", "{how:?}: {body}");
        assert_eq!(app.get("/healthz").await.status().as_u16(), 200, "{how:?}");

        let mut llm = raw_config(base, how);
        llm.fallback = FallbackPolicy::None;
        let app = crate::helpers::spawn_app_with(move |c| c.llm = llm).await;
        let p = crate::helpers::problem(
            app.post_jsonl(
                "/v1/compact?keepRecentTokens=1",
                crate::helpers::small_session(),
            )
            .await,
            502,
            "upstream-failed",
        )
        .await;
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(failure), "{how:?}: {detail}");
        assert!(!detail.contains(KEY), "{how:?}: {detail}");
        assert_eq!(app.get("/healthz").await.status().as_u16(), 200, "{how:?}");
    }
}

/// A stalled body that outlives the summarizer deadline: 504 without a fallback, the
/// extractive summary with one, and in both cases within the deadline.
#[tokio::test]
async fn a_stalled_body_past_the_deadline_is_a_504_or_the_fallback() {
    let (base, _) = raw_upstream(Misbehaviour::StallBody).await;
    for fallback in [FallbackPolicy::None, FallbackPolicy::Extractive] {
        let mut llm = raw_config(base.clone(), Misbehaviour::StallBody);
        llm.upstream_timeout = Duration::from_secs(10);
        llm.deadline = Duration::from_millis(400);
        llm.fallback = fallback;
        let app = crate::helpers::spawn_app_with(move |c| c.llm = llm).await;
        let start = Instant::now();
        let res = app
            .post_jsonl(
                "/v1/compact?keepRecentTokens=1",
                crate::helpers::small_session(),
            )
            .await;
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        if fallback == FallbackPolicy::None {
            crate::helpers::problem(res, 504, "upstream-timeout").await;
        } else {
            assert_eq!(res.status().as_u16(), 200);
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["summarizer"], "extractive", "{body}");
        }
        assert_eq!(app.get("/healthz").await.status().as_u16(), 200);
    }
}
