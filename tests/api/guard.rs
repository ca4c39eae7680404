use std::sync::Arc;
use std::time::Duration;

use compactd::config::ClientKeys;
use compactd::summarize::Summarize;
use compactd::summarize::SummaryRequest;
use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy};
use serde_json::{json, Value};

use crate::helpers::{llm_summary, problem, small_session, spawn_app_custom, spawn_app_with};

#[tokio::test]
async fn api_keys_guard_everything_but_the_probes() {
    let app = spawn_app_with(|c| c.api_keys = ClientKeys::new(["s3cret-key-1", "other-key"])).await;
    let url = format!("{}/v1/prepare", app.address);
    let send = |token: Option<&str>| {
        let mut req = app
            .client
            .post(&url)
            .header("content-type", "application/x-ndjson")
            .body(small_session());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let res = send(None).await.unwrap();
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    let p = problem(res, 401, "unauthorized").await;
    assert!(!p.to_string().contains("s3cret"));
    problem(
        send(Some("s3cret-key-2")).await.unwrap(),
        401,
        "unauthorized",
    )
    .await;
    problem(send(Some("")).await.unwrap(), 401, "unauthorized").await;
    assert_eq!(
        send(Some("s3cret-key-1")).await.unwrap().status().as_u16(),
        200
    );
    assert_eq!(
        send(Some("other-key")).await.unwrap().status().as_u16(),
        200
    );
    for open in ["/healthz", "/readyz"] {
        let res = app.get(open).await;
        assert_eq!(res.status().as_u16(), 200, "{open}");
    }
}

/// RFC 9110 §11.1: the auth scheme is case-insensitive; the key is not.
#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let app = spawn_app_with(|c| c.api_keys = ClientKeys::new(["s3cret-key-1"])).await;
    let url = format!("{}/v1/prepare", app.address);
    let send = |authorization: &'static str| {
        app.client
            .post(&url)
            .header("content-type", "application/x-ndjson")
            .header("authorization", authorization)
            .body(small_session())
            .send()
    };
    for ok in [
        "BEARER s3cret-key-1",
        "BeArEr s3cret-key-1",
        "bearer  s3cret-key-1",
    ] {
        assert_eq!(send(ok).await.unwrap().status().as_u16(), 200, "{ok}");
    }
    for refused in [
        "Bearer S3CRET-KEY-1",
        "Basic s3cret-key-1",
        "Bearers3cret-key-1",
    ] {
        problem(send(refused).await.unwrap(), 401, "unauthorized").await;
    }
}

/// A summarizer that takes its time.
struct Slow(Duration);

impl Summarize for Slow {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            tokio::time::sleep(self.0).await;
            Ok(llm_summary("slow summary", "test/slow"))
        })
    }
    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        None
    }
    fn describe(&self) -> Value {
        json!({"summarizer": "slow"})
    }
}

#[tokio::test]
async fn over_the_concurrency_limit_requests_are_shed_at_once() {
    let app = spawn_app_custom(
        |c| c.max_concurrency = 1,
        Arc::new(Slow(Duration::from_millis(800))),
    )
    .await;
    let body = json!({"systemPrompt": "", "prompt": "<conversation>\n[User]: hi\n</conversation>"});
    let first = app.post_json("/v1/summarize", &body);
    let second = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = std::time::Instant::now();
        let res = app.post_json("/v1/summarize", &body).await;
        (res, started.elapsed())
    };
    let (first, (second, waited)) = tokio::join!(first, second);
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(second.headers()["retry-after"], "1");
    assert!(
        waited < Duration::from_millis(400),
        "shed at once, not queued: {waited:?}"
    );
    problem(second, 503, "overloaded").await;
    // The probes are never shed.
    let res = app.get("/healthz").await;
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn a_request_past_its_deadline_is_504() {
    let app = spawn_app_custom(
        |c| c.request_timeout = Duration::from_secs(1),
        Arc::new(Slow(Duration::from_secs(5))),
    )
    .await;
    let started = std::time::Instant::now();
    let res = app
        .post_json(
            "/v1/summarize",
            &json!({"prompt": "<conversation>\n[User]: hi\n</conversation>"}),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(3));
    problem(res, 504, "request-timeout").await;
}

#[tokio::test]
async fn past_the_memory_budget_large_bodies_get_503_and_the_accepted_ones_answer() {
    // 6 MiB: two requests of 150 KB (16 × 150 KB each, as estimated) fit, a third does not.
    let app = spawn_app_custom(
        |c| c.memory_budget_bytes = 6 << 20,
        Arc::new(Slow(Duration::from_millis(800))),
    )
    .await;
    let text = "word ".repeat(30_000);
    let body = json!({"systemPrompt": "", "prompt": format!("<conversation>\n[User]: {text}\n</conversation>")});
    let answers =
        futures_util::future::join_all((0..6).map(|_| app.post_json("/v1/summarize", &body))).await;
    let (mut accepted, mut refused) = (0, 0);
    for res in answers {
        match res.status().as_u16() {
            200 => {
                let a: Value = res.json().await.unwrap();
                assert_eq!(a["summary"], "slow summary");
                accepted += 1;
            }
            503 => {
                assert_eq!(res.headers()["retry-after"], "1");
                problem(res, 503, "over-memory-budget").await;
                refused += 1;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!((accepted, refused), (2, 4));
    // What they held came back: the next ones run.
    let res = app.post_json("/v1/summarize", &body).await;
    assert_eq!(res.status().as_u16(), 200);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("compactd_memory_budget_refusals_total 4"),
        "{metrics}"
    );

    // A body reserves what it decodes to as it arrives: while one request holds most
    // of the budget, a streamed one is refused once it outgrows what is left.
    let holder = app.post_json("/v1/summarize", &body);
    let streamed = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let big = serde_json::to_vec(&json!({"systemPrompt": "", "prompt": format!("<conversation>\n[User]: {}\n</conversation>", "word ".repeat(60_000))})).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &big).unwrap();
        // Compressed, its declared length says little: what it decodes to is counted.
        app.client
            .post(format!("{}/v1/summarize", app.address))
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(gz.finish().unwrap())
            .send()
            .await
            .unwrap()
    };
    let (held, streamed) = tokio::join!(holder, streamed);
    assert_eq!(held.status().as_u16(), 200);
    problem(streamed, 503, "over-memory-budget").await;
}
