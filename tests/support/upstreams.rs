//! Fake model upstreams on 127.0.0.1 and the LLM configuration that points at them,
//! shared by the engine tests (`tests/engine`) and the HTTP API tests that go through a
//! model (`tests/api/upstream.rs`). Included with
//! `#[path = "../support/upstreams.rs"] mod upstreams;`.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use compactd::config::{FallbackPolicy, LlmConfig, ModelConfig, ModelKind, SummarizerChoice};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The API key every test candidate sends; it must never show anywhere.
pub const KEY: &str = "sk-test-SECRET-123";

pub fn openai(name: &str, server: &MockServer) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        kind: ModelKind::Openai,
        model: "gpt-test".into(),
        base_url: format!("{}/v1", server.uri()),
        context_window: 64_000,
        api_key: Some(KEY.into()),
        options: Default::default(),
    }
}

pub fn anthropic(name: &str, server: &MockServer) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        kind: ModelKind::Anthropic,
        model: "claude-test".into(),
        base_url: server.uri(),
        context_window: 200_000,
        api_key: Some(KEY.into()),
        options: Default::default(),
    }
}

/// Small timeouts and backoff so the whole file runs in a few seconds.
pub fn config(models: Vec<ModelConfig>) -> LlmConfig {
    LlmConfig {
        summarizer: SummarizerChoice::Openai,
        fallback: FallbackPolicy::Extractive,
        models,
        upstream_timeout: Duration::from_secs(3),
        stall: Duration::from_secs(60),
        deadline: Duration::from_secs(10),
        retries: 2,
        backoff_base: Duration::from_millis(5),
        backoff_cap: Duration::from_millis(20),
        cache_entries: 100,
        cache_bytes: 1 << 20,
        moa: None,
    }
}

/// An upstream that reads one request, never answers, signals when the request has
/// arrived, and finally reports whether the client closed the connection (within 5 s).
pub async fn silent_upstream() -> (
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

/// How a raw TCP upstream misbehaves once it has read a request.
#[derive(Clone, Copy, Debug)]
pub enum Misbehaviour {
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
pub async fn read_request(socket: &mut tokio::net::TcpStream) -> bool {
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
pub async fn raw_upstream(how: Misbehaviour) -> (String, Arc<std::sync::atomic::AtomicU32>) {
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
pub fn raw_config(base: String, how: Misbehaviour) -> LlmConfig {
    let mut cfg = config(vec![ModelConfig {
        name: "raw".into(),
        kind: ModelKind::Openai,
        model: "gpt-test".into(),
        base_url: base,
        context_window: 64_000,
        api_key: Some(KEY.into()),
        options: Default::default(),
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
pub const MISBEHAVIOURS: &[(Misbehaviour, &str, bool)] = &[
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

/// A `{systemPrompt, prompt}` body whose conversation is one user turn saying `text`.
pub fn prompt_body(text: &str) -> Value {
    json!({"systemPrompt": "", "prompt": format!("<conversation>\n[User]: {text}\n</conversation>")})
}

/// An OpenAI chat completion answering `text`, with usage.
pub fn completion(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 900, "completion_tokens": 80, "total_tokens": 980}})
}

/// An OpenAI upstream answering every chat completion with `text` and usage (10 prompt
/// tokens, 4 of them cached; 6 out).
pub async fn answering(text: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(wiremock::matchers::path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "x", "object": "chat.completion", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16,
                      "prompt_tokens_details": {"cached_tokens": 4}}
        })))
        .mount(&server)
        .await;
    server
}

/// A model that answers `text` after `delay`, counting its calls.
pub async fn slow_model(delay: Duration, text: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion(text))
                .set_delay(delay),
        )
        .mount(&server)
        .await;
    server
}

/// How many requests `server` has received.
pub async fn calls(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}
