//! The model summarizer engine against fake upstreams (wiremock on 127.0.0.1): wire
//! formats, usage mapping, retries, deadlines, fallback, cache, cancellation, secrets.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compactd::config::{FallbackPolicy, LlmConfig, ModelConfig, ModelKind, SummarizerChoice};
use compactd::summarize::llm::{Engine, Fallback};
use compactd::summarize::{
    RequestKind, SummarizeError, SummarizerKind, Summary, SummaryRequest, Usage,
};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-SECRET-123";
const EXTRACTIVE_TEXT: &str = "## Goal\nextractive summary";

/// A log writer appending to a shared buffer.
struct LogSink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn request(prompt: &str) -> SummaryRequest {
    SummaryRequest {
        kind: RequestKind::History,
        system_prompt: "You summarize.".into(),
        prompt: prompt.into(),
        max_tokens: 512,
    }
}

fn fallback() -> Fallback {
    Arc::new(|_req: &SummaryRequest| Summary {
        text: EXTRACTIVE_TEXT.into(),
        usage: Usage::default(),
        model: "extractive".into(),
        summarizer: SummarizerKind::Extractive,
        retries: 0,
        cached: false,
    })
}

fn openai(name: &str, server: &MockServer) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        kind: ModelKind::Openai,
        model: "gpt-test".into(),
        base_url: format!("{}/v1", server.uri()),
        context_window: 64_000,
        api_key: Some(KEY.into()),
    }
}

fn anthropic(name: &str, server: &MockServer) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        kind: ModelKind::Anthropic,
        model: "claude-test".into(),
        base_url: server.uri(),
        context_window: 200_000,
        api_key: Some(KEY.into()),
    }
}

/// Small timeouts and backoff so the whole file runs in a few seconds.
fn config(models: Vec<ModelConfig>) -> LlmConfig {
    LlmConfig {
        summarizer: SummarizerChoice::Openai,
        fallback: FallbackPolicy::Extractive,
        models,
        upstream_timeout: Duration::from_secs(3),
        deadline: Duration::from_secs(10),
        retries: 2,
        backoff_base: Duration::from_millis(5),
        backoff_cap: Duration::from_millis(20),
        cache_entries: 100,
        cache_bytes: 1 << 20,
    }
}

fn engine(config: &LlmConfig) -> Engine {
    Engine::new(config, fallback()).expect("engine")
}

fn openai_answer(content: Value, finish_reason: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                  "prompt_tokens_details": {"cached_tokens": 400}}
    }))
}

fn openai_ok(text: &str) -> ResponseTemplate {
    openai_answer(json!(text), "stop")
}

fn anthropic_answer(stop_reason: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "## Goal\nfirst"}, {"type": "text", "text": "second"}],
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 900, "output_tokens": 60,
                  "cache_read_input_tokens": 30, "cache_creation_input_tokens": 10}
    }))
}

async fn requests(server: &MockServer) -> Vec<wiremock::Request> {
    server.received_requests().await.expect("recording is on")
}

#[tokio::test]
async fn openai_wire_format_and_string_content() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(openai_ok("## Goal\nShip it."))
        .expect(1)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let s = engine
        .summarize(&request("the conversation"), None)
        .await
        .unwrap();
    assert_eq!(s.text, "## Goal\nShip it.");
    assert_eq!(s.model, "openai/gpt-test");
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    assert_eq!((s.retries, s.cached), (0, false));
    assert_eq!(
        s.usage,
        Usage {
            input: 600,
            output: 50,
            cache_read: 400,
            cache_write: 0,
            total_tokens: 1050
        }
    );
    let sent = requests(&server).await;
    assert_eq!(
        String::from_utf8(sent[0].body.clone()).unwrap(),
        r#"{"model":"gpt-test","messages":[{"role":"system","content":"You summarize."},{"role":"user","content":"the conversation"}],"max_tokens":512,"stream":false}"#
    );
    assert!(sent[0].headers.get("x-api-key").is_none());
}

#[tokio::test]
async fn openai_content_as_parts() {
    let server = MockServer::start().await;
    let parts = json!([{"type": "text", "text": "## Goal"}, {"type": "text", "text": "Parts."}]);
    Mock::given(method("POST"))
        .respond_with(openai_answer(parts, "stop"))
        .expect(1)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let s = engine.summarize(&request("p"), None).await.unwrap();
    assert_eq!(s.text, "## Goal\nParts.");
}

#[tokio::test]
async fn anthropic_wire_format_and_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(anthropic_answer("end_turn"))
        .expect(1)
        .mount(&server)
        .await;
    let mut cfg = config(vec![anthropic("anthropic", &server)]);
    cfg.summarizer = SummarizerChoice::Anthropic;
    let engine = engine(&cfg);
    let s = engine
        .summarize(&request("the conversation"), None)
        .await
        .unwrap();
    assert_eq!(s.text, "## Goal\nfirst\nsecond");
    assert_eq!(s.model, "anthropic/claude-test");
    assert_eq!(
        s.usage,
        Usage {
            input: 900,
            output: 60,
            cache_read: 30,
            cache_write: 10,
            total_tokens: 1000
        }
    );
    let sent = requests(&server).await;
    assert_eq!(
        String::from_utf8(sent[0].body.clone()).unwrap(),
        r#"{"model":"claude-test","system":"You summarize.","messages":[{"role":"user","content":"the conversation"}],"max_tokens":512}"#
    );
    assert!(sent[0].headers.get("authorization").is_none());
}

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
    let s = engine.summarize(&request("p"), None).await.unwrap();
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
    let s = engine.summarize(&request("p"), None).await.unwrap();
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
    let s = engine(&cfg).summarize(&request("p"), None).await.unwrap();
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
    let s = engine(&cfg).summarize(&request("p"), None).await.unwrap();
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
        .summarize(&request("p"), None)
        .await
        .unwrap_err();
    assert_eq!(err, SummarizeError::Timeout);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );

    cfg.fallback = FallbackPolicy::Extractive;
    let s = engine(&cfg).summarize(&request("p"), None).await.unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
}

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
    let s = engine(&cfg).summarize(&request("p"), None).await.unwrap();
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
    let s = engine(&cfg).summarize(&request("p"), None).await.unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    assert_eq!(s.text, EXTRACTIVE_TEXT);
}

/// A port with nothing listening.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
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
    let s = engine(&cfg).summarize(&request("p"), None).await.unwrap();
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
        .summarize(&request("p"), None)
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

#[tokio::test]
async fn identical_requests_are_served_from_the_cache() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(openai_ok("cached answer"))
        .expect(2)
        .mount(&server)
        .await;
    let engine = engine(&config(vec![openai("openai", &server)]));
    let first = engine.summarize(&request("same"), None).await.unwrap();
    assert!(!first.cached);
    let second = engine.summarize(&request("same"), None).await.unwrap();
    assert!(second.cached);
    assert_eq!((second.text, second.model), (first.text, first.model));
    assert_eq!(second.usage, first.usage);
    // Naming the only candidate is the same selection.
    assert!(
        engine
            .summarize(&request("same"), Some("openai"))
            .await
            .unwrap()
            .cached
    );
    // A different budget is a different request.
    let mut other = request("same");
    other.max_tokens = 100;
    assert!(!engine.summarize(&other, None).await.unwrap().cached);
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
        let s = engine.summarize(&request("p"), None).await.unwrap();
        assert_eq!(
            (s.summarizer, s.cached),
            (SummarizerKind::Extractive, false)
        );
    }
}

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
    let dropped =
        tokio::time::timeout(Duration::from_millis(100), engine.summarize(&req, None)).await;
    assert!(dropped.is_err(), "still waiting for upstream");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        requests(&server).await.len(),
        1,
        "arrived once, never retried"
    );
}

/// An upstream that reads one request, never answers, signals when the request has
/// arrived, and finally reports whether the client closed the connection (within 5 s).
async fn silent_upstream() -> (
    u16,
    tokio::sync::oneshot::Receiver<()>,
    tokio::task::JoinHandle<bool>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (arrived_tx, arrived_rx) = tokio::sync::oneshot::channel();
    let upstream = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut received = Vec::new();
        while !received.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before the request was sent");
            received.extend_from_slice(&buf[..n]);
        }
        let _ = arrived_tx.send(());
        tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await
        .is_ok()
    });
    (port, arrived_rx, upstream)
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
    let mut call = Box::pin(engine.summarize(&req, None));
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

#[tokio::test]
async fn keys_never_show() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(403).set_body_json(json!({
            "error": {"message": format!("key {KEY} may not use this model")}
        })))
        .mount(&server)
        .await;
    let mut with_userinfo = openai("proxy", &server);
    with_userinfo.base_url = format!(
        "http://user:pw-HIDDEN@{}/v1?token=q-HIDDEN",
        server.address()
    );
    let mut cfg = config(vec![
        with_userinfo,
        openai("openai", &server),
        anthropic("anthropic", &server),
    ]);
    cfg.fallback = FallbackPolicy::None;
    // Capture this test's log lines (the runtime is single-threaded, so a thread-local
    // subscriber sees every one).
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || LogSink(sink.clone()))
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let engine = engine(&cfg);
    let debug = format!("{engine:?}");
    let described = engine.describe().to_string();
    let config_debug = format!("{cfg:?}");
    let err = engine.summarize(&request("p"), None).await.unwrap_err();
    let error = format!("{err} {err:?}");
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("upstream attempt failed"), "{logged}");
    for (what, text) in [
        ("Debug", &debug),
        ("describe", &described),
        ("config Debug", &config_debug),
        ("error", &error),
        ("logs", &logged),
    ] {
        assert!(!text.contains(KEY), "{what}: {text}");
        assert!(!text.contains("HIDDEN"), "{what}: {text}");
    }
    assert!(error.contains("HTTP 403"), "{error}");
    assert!(error.contains("[REDACTED]"), "{error}");
    let d = engine.describe();
    assert_eq!(d["candidates"][0]["apiKeySet"], true);
    assert_eq!(
        d["candidates"][0]["baseUrl"],
        format!("{}/v1", server.uri())
    );
}

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

    assert_eq!(engine.context_window(None), Some(64_000));
    assert_eq!(engine.context_window(Some("claude")), Some(200_000));
    assert_eq!(engine.context_window(Some("claude-test")), Some(200_000));
    assert_eq!(engine.context_window(Some("extractive")), None);
    assert_eq!(engine.context_window(Some("nope")), None);

    let s = engine
        .summarize(&request("p"), Some("claude"))
        .await
        .unwrap();
    assert_eq!(s.model, "claude/claude-test");
    let err = engine
        .summarize(&request("p"), Some("gpt-9"))
        .await
        .unwrap_err();
    assert_eq!(err, SummarizeError::UnknownModel("gpt-9".into()));
    let s = engine
        .summarize(&request("p"), Some("extractive"))
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
    let s = engine.summarize(&request("p"), None).await.unwrap();
    assert_eq!(
        (s.summarizer, s.text.as_str()),
        (SummarizerKind::Extractive, EXTRACTIVE_TEXT)
    );
    assert_eq!(engine.context_window(None), None);
    assert_eq!(engine.describe()["summarizer"], "extractive");
    assert!(matches!(
        engine.summarize(&request("p"), Some("gpt-test")).await,
        Err(SummarizeError::UnknownModel(_))
    ));
}

#[tokio::test]
async fn invalid_configurations_are_refused() {
    let server = MockServer::start().await;
    assert!(Engine::new(&config(vec![]), fallback())
        .unwrap_err()
        .contains("COMPACTD_MODEL"));
    let mut bad_key = openai("openai", &server);
    bad_key.api_key = Some("sk-test-SECRET-\n123".into());
    let err = Engine::new(&config(vec![bad_key]), fallback()).unwrap_err();
    assert!(err.contains("not a valid HTTP header value"), "{err}");
    assert!(!err.contains("SECRET"), "{err}");
    let mut ftp = openai("openai", &server);
    ftp.base_url = "ftp://user:pw-HIDDEN@example.com/".into();
    let err = Engine::new(&config(vec![ftp]), fallback()).unwrap_err();
    assert!(!err.contains("HIDDEN"), "{err}");
    let twice = config(vec![openai("same", &server), anthropic("same", &server)]);
    assert!(Engine::new(&twice, fallback())
        .unwrap_err()
        .contains("twice"));
}

/// Through the real server: a client that hangs up cancels the model call it caused.
#[tokio::test]
async fn a_client_disconnect_cancels_the_upstream_call() {
    let (port, _arrived, upstream) = silent_upstream().await;
    let mut llm = config(vec![ModelConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        ..openai("openai", &MockServer::start().await)
    }]);
    llm.upstream_timeout = Duration::from_secs(30);
    llm.deadline = Duration::from_secs(30);
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

/// How a raw TCP upstream misbehaves once it has read a request.
#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    /// Accepts, reads the request, and resets the connection (SO_LINGER 0, then close).
    Reset,
    /// Answers bytes that are not HTTP.
    NotHttp,
    /// 200 with this body (and a correct content-length).
    Ok200(&'static str),
    /// 200 announcing a longer body than it sends, then closes.
    CutShort,
    /// 200 announcing a body larger than compactd reads (content-length).
    HugeDeclared,
    /// 200 streaming an endless chunked body with no content-length.
    HugeChunked,
    /// 200 headers and the first bytes of the body, then silence.
    StallBody,
}

/// Reads one HTTP request (headers and content-length body) from `socket`.
async fn read_request(socket: &mut tokio::net::TcpStream) -> bool {
    let mut received = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if received.len() >= end + 4 + length {
                return true;
            }
        }
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => received.extend_from_slice(&buf[..n]),
        }
    }
}

/// An upstream on 127.0.0.1 that misbehaves on every connection; the base URL for an
/// OpenAI-compatible candidate, and the number of requests it read.
async fn raw_upstream(how: Misbehaviour) -> (String, Arc<std::sync::atomic::AtomicU32>) {
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicU32::new(0));
    let count = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let count = count.clone();
            tokio::spawn(async move {
                if !read_request(&mut socket).await {
                    return;
                }
                count.fetch_add(1, Ordering::SeqCst);
                // Write errors are expected: compactd may hang up first.
                match how {
                    Misbehaviour::Reset => {
                        socket.set_zero_linger().unwrap();
                        drop(socket);
                    }
                    Misbehaviour::NotHttp => {
                        let _ = socket
                            .write_all(b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff\xfe garbage\r\n\r\n")
                            .await;
                    }
                    Misbehaviour::Ok200(body) => {
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = socket.write_all(head.as_bytes()).await;
                        let _ = socket.write_all(body.as_bytes()).await;
                    }
                    Misbehaviour::CutShort => {
                        let _ = socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"choices\":[{\"message\":{\"content\":\"par")
                            .await;
                    }
                    Misbehaviour::HugeDeclared => {
                        let _ = socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000000000\r\n\r\n{\"choices\":")
                            .await;
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    Misbehaviour::HugeChunked => {
                        let _ = socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                            .await;
                        let chunk = format!("100000\r\n{}\r\n", "x".repeat(0x10_0000));
                        // Endless: only compactd's limit ends it.
                        while socket.write_all(chunk.as_bytes()).await.is_ok() {}
                    }
                    Misbehaviour::StallBody => {
                        let _ = socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"choices\"")
                            .await;
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                }
            });
        }
    });
    (base, requests)
}

/// One candidate at a raw upstream. The per-attempt timeout is short only for the stall
/// (a hang then costs 2 × 300 ms); the others get room, so that reading 16 MiB in a debug
/// build on a loaded machine still ends in "too large", not in a timeout.
fn raw_config(base: String, how: Misbehaviour) -> LlmConfig {
    let mut cfg = config(vec![ModelConfig {
        name: "raw".into(),
        kind: ModelKind::Openai,
        model: "gpt-test".into(),
        base_url: base,
        context_window: 64_000,
        api_key: Some(KEY.into()),
    }]);
    cfg.upstream_timeout = match how {
        Misbehaviour::StallBody => Duration::from_millis(300),
        _ => Duration::from_secs(4),
    };
    cfg.deadline = Duration::from_secs(10);
    cfg.retries = 1;
    cfg
}

/// Every misbehaviour, what the candidate's failure says, and whether it is retried.
const MISBEHAVIOURS: &[(Misbehaviour, &str, bool)] = &[
    (Misbehaviour::Reset, "transport error", true),
    (Misbehaviour::NotHttp, "transport error", true),
    (
        Misbehaviour::Ok200("<html>Bad Gateway</html>"),
        "unparsable answer",
        false,
    ),
    (
        Misbehaviour::Ok200(r#"{"choices":[{"message":{"content":"cut"#),
        "unparsable answer",
        false,
    ),
    (
        Misbehaviour::Ok200(r#"{"result":"a summary"}"#),
        "unparsable answer",
        false,
    ),
    (
        Misbehaviour::Ok200(r#"{"choices":"a summary"}"#),
        "unparsable answer",
        false,
    ),
    (
        Misbehaviour::Ok200(r#"{"choices":[{"message":{"content":42}}]}"#),
        "unparsable answer",
        false,
    ),
    (Misbehaviour::Ok200("[]"), "unparsable answer", false),
    (Misbehaviour::Ok200(""), "unparsable answer", false),
    (Misbehaviour::CutShort, "transport error", true),
    (
        Misbehaviour::HugeDeclared,
        "answer larger than 16777216 bytes",
        false,
    ),
    (
        Misbehaviour::HugeChunked,
        "answer larger than 16777216 bytes",
        false,
    ),
    (Misbehaviour::StallBody, "no answer within 300 ms", true),
];

#[tokio::test]
async fn a_misbehaving_upstream_falls_back_or_fails_cleanly_within_the_deadline() {
    for &(how, failure, transient) in MISBEHAVIOURS {
        let (base, requests) = raw_upstream(how).await;
        let mut cfg = raw_config(base, how);
        let start = Instant::now();
        let s = engine(&cfg).summarize(&request("p"), None).await;
        let s = s.unwrap_or_else(|e| panic!("{how:?}: {e:?}"));
        assert_eq!(s.summarizer, SummarizerKind::Extractive, "{how:?}");
        assert_eq!(s.text, EXTRACTIVE_TEXT, "{how:?}");
        assert!(
            start.elapsed() < cfg.deadline,
            "{how:?}: {:?}",
            start.elapsed()
        );

        cfg.fallback = FallbackPolicy::None;
        let start = Instant::now();
        let err = engine(&cfg)
            .summarize(&request("q"), None)
            .await
            .unwrap_err();
        assert!(
            start.elapsed() < cfg.deadline,
            "{how:?}: {:?}",
            start.elapsed()
        );
        let SummarizeError::Upstream(message) = &err else {
            panic!("{how:?}: expected Upstream, got {err:?}");
        };
        assert!(message.contains(failure), "{how:?}: {message}");
        let attempts = if transient {
            "(2 attempts)"
        } else {
            "(1 attempt)"
        };
        assert!(message.contains(attempts), "{how:?}: {message}");
        assert!(!message.contains(KEY), "{how:?}: {message}");
        // One request per attempt, over both calls.
        let expected = if transient { 4 } else { 2 };
        assert_eq!(
            requests.load(std::sync::atomic::Ordering::SeqCst),
            expected,
            "{how:?}"
        );
    }
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
