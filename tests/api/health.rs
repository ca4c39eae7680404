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
    let generated = res.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(generated.len(), 36, "{generated}");
    // Ids that are too long or carry arbitrary text are replaced, never echoed.
    let long = "a".repeat(129);
    for hostile in [
        long.as_bytes(),
        b"a b",
        b"caf\xe9",
        b"<script>",
        b"\"quoted\"",
    ] {
        let res = app
            .client
            .get(format!("{}/healthz", app.address))
            .header(
                "x-request-id",
                reqwest::header::HeaderValue::from_bytes(hostile).unwrap(),
            )
            .send()
            .await
            .unwrap();
        let echoed = res.headers()["x-request-id"].to_str().unwrap();
        assert_ne!(echoed.as_bytes(), hostile);
        assert_eq!(echoed.len(), 36, "{echoed}");
    }
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
    // A Prometheus text-format parser accepts every line…
    use prometheus_parse::{LineInfo, Scrape, Value};
    // prometheus-parse reads labels up to the first `}`, so a route template's braces
    // (`route="/v1/jobs/{id}/events"`, valid in the text format, and there whenever a job
    // test of this binary ran first) are taken out of quoted values for its sake.
    let quoted = regex::Regex::new(r#""(?:[^"\\]|\\.)*""#).unwrap();
    for line in text.lines() {
        let line = quoted.replace_all(line, |c: &regex::Captures| c[0].replace(['{', '}'], "_"));
        assert!(
            !matches!(LineInfo::parse(&line), LineInfo::Ignored),
            "a Prometheus parser does not understand {line:?}"
        );
    }
    // …and reads the series with their types and labels.
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    // The recorder is shared by every test in this binary: select by every label.
    let find = |metric: &str, labels: &[(&str, &str)]| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
            .unwrap_or_else(|| panic!("no {metric} with {labels:?} in:\n{text}"))
    };
    let requests = find(
        "compactd_requests_total",
        &[("route", "/v1/summarize"), ("status", "200")],
    );
    assert!(matches!(requests.value, Value::Counter(n) if n >= 1.0));
    let latency = find(
        "compactd_request_duration_seconds",
        &[("route", "/v1/summarize")],
    );
    let Value::Histogram(buckets) = &latency.value else {
        panic!("latency is not a histogram: {latency:?}")
    };
    assert!(buckets.len() > 3);
    assert!(buckets
        .windows(2)
        .all(|w| w[0].less_than < w[1].less_than && w[0].count <= w[1].count));
    assert!(
        buckets.last().unwrap().less_than.is_infinite() && buckets.last().unwrap().count >= 1.0
    );
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "compactd_requests_in_flight" && matches!(s.value, Value::Gauge(_))));
    assert!(scrape.docs.contains_key("compactd_requests_total"));
}
