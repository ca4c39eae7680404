use crate::helpers::{problem, spawn_app};

#[tokio::test]
async fn healthz_and_readyz_answer() {
    let app = spawn_app().await;
    for path in ["/healthz", "/readyz"] {
        let res = app.get(path).await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
    }
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let app = spawn_app().await;
    let res = app
        .client
        .get(format!("{}/healthz", app.address))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "abc-123");
    let res = app.get("/healthz").await;
    assert!(!res.headers()["x-request-id"].is_empty());
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let app = spawn_app().await;
    let res = app.get("/nope").await;
    problem(res, 404, "not-found").await;
    let res = app.get("/v1/prepare").await;
    problem(res, 405, "method-not-allowed").await;
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let app = spawn_app().await;
    // Make sure at least one API request and one summary were recorded.
    let body = serde_json::json!({"prompt": "<conversation>\n[User]: hi\n</conversation>"});
    assert_eq!(
        app.post_json("/v1/summarize", &body)
            .await
            .status()
            .as_u16(),
        200
    );
    let res = app.get("/metrics").await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = res.text().await.unwrap();
    for series in [
        "compactd_requests_total{",
        "route=\"/v1/summarize\"",
        "compactd_request_duration_seconds_bucket{",
        "compactd_requests_in_flight",
        "compactd_summaries_total{summarizer=\"extractive\"}",
        "compactd_tokens_total{direction=\"input\"}",
    ] {
        assert!(text.contains(series), "missing {series} in:\n{text}");
    }
    // Every sample line parses as `name{labels} value`.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "bad sample line {line:?}");
    }
}
