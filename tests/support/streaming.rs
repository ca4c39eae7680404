//! What the fake model servers answer, and how a streamed answer is sent, as the real
//! servers do (part of `model_servers.rs`).
//!
//! * OpenAI Chat Completions with `stream: true` (OpenAI's API reference, "The chat
//!   completion chunk object" and `stream_options`): a `text/event-stream` of `data:`
//!   lines, each a `chat.completion.chunk`; the first carries the role and empty
//!   content, then content deltas, then a chunk with an empty delta and the
//!   `finish_reason`; with `include_usage` every chunk has `"usage": null` and one last
//!   chunk has empty `choices` and the usage; then `data: [DONE]`. An error after the
//!   stream started is a `data: {"error": …}` chunk.
//! * Anthropic Messages with `"stream": true` (Anthropic's "Streaming Messages"):
//!   named events `message_start` (input usage, `output_tokens` 1), `ping`, per block
//!   `content_block_start` / `content_block_delta` (`text_delta`, `thinking_delta`,
//!   `signature_delta`) / `content_block_stop`, `message_delta` (stop reason, output
//!   usage), `message_stop`. An error mid-stream is `event: error` with
//!   `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`,
//!   and the stream ends.
//! * Errors found before the stream (bad request, overflow, overload) are HTTP errors
//!   with JSON bodies, exactly as without streaming.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::{Request, Respond, ResponseTemplate};

/// A fake's answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status and a JSON body: errors, and plain (not streamed) answers.
    Json { status: u16, body: Value },
    /// A 200 `text/event-stream`.
    Events {
        /// Each a complete event (`event: …\ndata: …\n\n`).
        frames: Vec<String>,
        /// The wait before each frame ([`serve`] only).
        pace: Duration,
        /// After this many frames the server falls silent, the connection open.
        stall_after: Option<usize>,
    },
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Json { status, body }
    }

    /// The response under wiremock: the events at once; a stall is silence before the
    /// response head (wiremock cannot pause mid-body).
    pub fn template(&self) -> ResponseTemplate {
        match self {
            Reply::Json { status, body } => ResponseTemplate::new(*status).set_body_json(body),
            Reply::Events {
                frames,
                stall_after,
                ..
            } => {
                let sent = stall_after.unwrap_or(frames.len()).min(frames.len());
                let t = ResponseTemplate::new(200)
                    .set_body_raw(frames[..sent].concat(), "text/event-stream");
                match stall_after {
                    Some(_) => t.set_delay(Duration::from_secs(120)),
                    None => t,
                }
            }
        }
    }
}

impl Respond for Reply {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.template()
    }
}

/// A fake model server: a request body in, its answer out.
pub trait Fake: Send + Sync + 'static {
    fn reply(&self, request: &[u8]) -> Reply;
}

/// What the next streamed answers of a fake do; clones share the counters.
#[derive(Clone, Debug, Default)]
pub struct StreamScript {
    /// The wait before each event ([`serve`] only).
    pub pace: Duration,
    /// The next this many streams fall silent after their first content delta.
    pub stalls: Arc<AtomicUsize>,
    /// The next this many streams break off with the server's mid-stream error after
    /// their first content delta.
    pub errors: Arc<AtomicUsize>,
    /// The next this many streams end after their first content delta, the connection
    /// closed without an end marker (a broken transfer).
    pub cuts: Arc<AtomicUsize>,
    /// Streams answered (whatever they then did).
    pub streamed: Arc<AtomicUsize>,
}

impl StreamScript {
    /// Takes one from a counter that is above zero.
    fn take(counter: &AtomicUsize) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// The reply for a stream of `frames`, as scripted. `frames.cut` is where a stall or
    /// an error comes (after the first content delta), `frames.error` the error event.
    pub fn events(&self, frames: Frames) -> Reply {
        self.streamed.fetch_add(1, Ordering::SeqCst);
        let mut stall_after = None;
        let mut list = frames.list;
        if Self::take(&self.stalls) {
            stall_after = Some(frames.cut);
        } else if Self::take(&self.errors) {
            list.truncate(frames.cut);
            list.push(frames.error);
        } else if Self::take(&self.cuts) {
            list.truncate(frames.cut);
        }
        Reply::Events {
            frames: list,
            pace: self.pace,
            stall_after,
        }
    }
}

/// A stream's events, where a script may cut it, and the error it would send there.
pub struct Frames {
    pub list: Vec<String>,
    pub cut: usize,
    pub error: String,
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn event(name: &str, v: &Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

/// The answer in pieces of a few characters, as a tokenizer would send them.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(3).map(|c| c.iter().collect()).collect()
}

/// OpenAI's chunks for `answer`; `usage` when `include_usage` was asked for.
pub fn openai_stream(model: &Value, answer: &str, finish: &str, usage: Option<Value>) -> Frames {
    let with_usage = usage.is_some();
    let chunk = |choices: Value| {
        let mut c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                           "created": 1_700_000_000, "model": model,
                           "system_fingerprint": "fp_1", "choices": choices});
        if with_usage {
            c["usage"] = Value::Null;
        }
        data(&c)
    };
    let mut list = vec![chunk(json!([{"index": 0,
        "delta": {"role": "assistant", "content": "", "refusal": null},
        "logprobs": null, "finish_reason": null}]))];
    for p in pieces(answer) {
        list.push(chunk(json!([{"index": 0, "delta": {"content": p},
                                "logprobs": null, "finish_reason": null}])));
    }
    list.push(chunk(
        json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": finish}]),
    ));
    if let Some(u) = usage {
        list.push(data(
            &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                               "created": 1_700_000_000, "model": model,
                               "system_fingerprint": "fp_1", "choices": [], "usage": u}),
        ));
    }
    list.push("data: [DONE]\n\n".into());
    Frames {
        list,
        cut: 2,
        error: data(&json!({"error": {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error", "param": null, "code": null}})),
    }
}

/// Anthropic's events for `content` (the blocks a plain answer would hold).
pub fn anthropic_stream(model: &Value, content: &[Value], stop: &str, usage: &Value) -> Frames {
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let mut list = vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": model, "stop_reason": null,
                "stop_sequence": null, "usage": start_usage}}),
        ),
        event("ping", &json!({"type": "ping"})),
    ];
    let mut cut = 0;
    for (index, block) in content.iter().enumerate() {
        let delta = |d: Value| {
            event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": d}),
            )
        };
        let start = |b: Value| {
            event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": b}),
            )
        };
        match block["type"].as_str() {
            Some("text") => {
                list.push(start(json!({"type": "text", "text": ""})));
                for p in pieces(block["text"].as_str().unwrap_or("")) {
                    list.push(delta(json!({"type": "text_delta", "text": p})));
                    if cut == 0 {
                        cut = list.len();
                    }
                }
            }
            Some("thinking") => {
                list.push(start(
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ));
                for p in pieces(block["thinking"].as_str().unwrap_or("")) {
                    list.push(delta(json!({"type": "thinking_delta", "thinking": p})));
                }
                list.push(delta(
                    json!({"type": "signature_delta", "signature": block["signature"]}),
                ));
            }
            _ => list.push(start(block.clone())),
        }
        list.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    list.push(event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": usage["output_tokens"]}}),
    ));
    list.push(event("message_stop", &json!({"type": "message_stop"})));
    Frames {
        list,
        cut,
        error: event(
            "error",
            &json!({"type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    }
}

/// A fake on its own HTTP server on 127.0.0.1: every POST is answered by the fake, and
/// streams are paced and stall as scripted.
pub struct Served {
    /// `http://127.0.0.1:PORT`.
    pub uri: String,
    /// Streams whose client went away before the stream's end.
    pub abandoned: Arc<AtomicUsize>,
    /// Requests received.
    pub requests: Arc<AtomicUsize>,
    /// The request bodies, in order.
    pub bodies: Arc<std::sync::Mutex<Vec<Value>>>,
}

/// Counts a stream dropped before its last frame (the client hung up).
struct Watch {
    finished: AtomicBool,
    abandoned: Arc<AtomicUsize>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.finished.load(Ordering::SeqCst) {
            self.abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Serves `fake` (see [`Served`]).
pub async fn serve(fake: impl Fake) -> Served {
    use axum::body::{Body, Bytes};
    use axum::extract::State;
    use axum::response::{IntoResponse, Response};

    let fake: Arc<dyn Fake> = Arc::new(fake);
    let served = Served {
        uri: String::new(),
        abandoned: Arc::new(AtomicUsize::new(0)),
        requests: Arc::new(AtomicUsize::new(0)),
        bodies: Arc::default(),
    };
    type Shared = (
        Arc<dyn Fake>,
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
        Arc<std::sync::Mutex<Vec<Value>>>,
    );
    async fn answer(
        State((fake, abandoned, requests, bodies)): State<Shared>,
        body: Bytes,
    ) -> Response {
        requests.fetch_add(1, Ordering::SeqCst);
        if let Ok(v) = serde_json::from_slice(&body) {
            bodies.lock().unwrap().push(v);
        }
        match fake.reply(&body) {
            Reply::Json { status, body } => (
                axum::http::StatusCode::from_u16(status).unwrap(),
                axum::Json(body),
            )
                .into_response(),
            Reply::Events {
                frames,
                pace,
                stall_after,
            } => {
                let watch = Watch {
                    finished: AtomicBool::new(false),
                    abandoned,
                };
                let total = frames.len();
                let stream = futures_util::stream::unfold(
                    (frames.into_iter(), 0usize, watch),
                    move |(mut frames, sent, watch)| async move {
                        if stall_after == Some(sent) {
                            std::future::pending::<()>().await;
                        }
                        if !pace.is_zero() {
                            tokio::time::sleep(pace).await;
                        }
                        let frame = frames.next()?;
                        if sent + 1 == total {
                            watch.finished.store(true, Ordering::SeqCst);
                        }
                        Some((
                            Ok::<_, Infallible>(Bytes::from(frame)),
                            (frames, sent + 1, watch),
                        ))
                    },
                );
                Response::builder()
                    .header("content-type", "text/event-stream; charset=utf-8")
                    .header("cache-control", "no-cache")
                    .body(Body::from_stream(stream))
                    .unwrap()
            }
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(answer).with_state((
        fake,
        served.abandoned.clone(),
        served.requests.clone(),
        served.bodies.clone(),
    ));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Served { uri, ..served }
}
