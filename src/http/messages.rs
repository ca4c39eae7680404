//! `POST /v1/messages`: Anthropic's Messages API, for compaction requests only, so that a
//! client of Anthropic's API (the official SDK's `compaction` parameter) gets its summary
//! from compactd's pipeline.
//!
//! Design decisions:
//!
//! * Only a body with `compaction` is answered; any other is a 400 saying so: compactd
//!   summarizes, it does not answer ordinary messages.
//! * The conversation becomes a pi session and runs through `/v1/compact`'s plan and run
//!   (`pipeline::messages`), summarizing all of it: a compaction block replaces every
//!   message before it.
//! * The answer is one `compaction` block whose `content` is the checked summary, with
//!   `stop_reason: "compaction"`. Its `signature` is a SHA-256 digest of the content, not
//!   Anthropic's signature: compactd does not check it when the block comes back. Its
//!   `encrypted_content`, which clients send back verbatim, holds the compaction's
//!   `details` (file lists, pinned ledger) as `/v1/compact`'s entry does.
//! * `stream: true` is answered as Anthropic streams: `message_start` at once, a `ping`
//!   then and every `COMPACTD_HEARTBEAT_MS` while the summary is written (proxies cut a
//!   silent stream), then the block's start, one `compaction_delta` with the whole content,
//!   its stop, `message_delta` with the stop reason and usage, `message_stop`. The
//!   summarizer has no partial output to pass on (retries, fallback and the secret scrub
//!   work on the whole text). Errors found before the summary starts (the body, the plan)
//!   keep their HTTP status; a summary that fails afterwards is an `error` event, as
//!   Anthropic sends one. The SDK needs a stream for a large `max_tokens` unless the client
//!   sets a timeout.
//! * Errors are problem documents inside the service; `vendor_errors` rewrites them
//!   into Anthropic's `{"type": "error", "error": {...}}` on this route.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;

use crate::pipeline::compact::run_compaction_or_default;
use crate::pipeline::compact::{CompactionResult, PlanError};
use crate::pipeline::messages::{self, MessagesRequest};
use crate::summarize::Silent;

use super::extract::{json_object, read_json_body};
use super::problem::ApiError;
use super::vendor_errors::AnthropicError;
use super::{blocking, AppState};
use compactd_core::json::string::replace_lone_surrogates;

/// A Messages API answer holding one `compaction` block.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CompactionMessage {
    /// `msg_` and 24 random characters.
    pub id: String,
    /// `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `assistant`.
    pub role: &'static str,
    /// The model that wrote the summary: `name/model`, or `extractive`.
    pub model: String,
    pub content: Vec<CompactionBlock>,
    /// `compaction`.
    pub stop_reason: &'static str,
    /// Always null.
    pub stop_sequence: Option<String>,
    pub usage: MessagesUsage,
}

/// The summary, to be sent back first in `messages` in place of what it summarizes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CompactionBlock {
    /// `compaction`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The summary.
    pub content: String,
    /// `sha256:` and the content's digest in hex (not checked when sent back).
    pub signature: String,
    /// compactd's `details` of the compaction (file lists and pinned ledger) as JSON text,
    /// not encrypted: sent back with the block, they carry the ledger to the next round.
    pub encrypted_content: String,
}

/// Anthropic's usage, summed over every summarizer call.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MessagesUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

/// Compacts a Messages API conversation into one `compaction` block.
#[utoipa::path(
    post,
    path = "/v1/messages",
    operation_id = "anthropicMessagesCompaction",
    tag = "anthropic",
    request_body(content = MessagesRequest, content_type = "application/json", example = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 4000,
        "messages": [
            {"role": "user", "content": "Fix the login bug in src/auth.rs"},
            {"role": "assistant", "content": [{"type": "text", "text": "Fixed: the token check was inverted."}]},
            {"role": "user", "content": "Now add a test."}
        ],
        "compaction": {"type": "summarize"}
    })),
    responses(
        (status = 200, description = "A `message` whose content is one `compaction` block, `stop_reason: \"compaction\"`; with `stream: true` a `text/event-stream` of Anthropic's events (`message_start`, `ping` at once and every COMPACTD_HEARTBEAT_MS while the summary is written, `content_block_start`, one `compaction_delta`, `content_block_stop`, `message_delta`, `message_stop`; an `error` event when the summary fails after the stream began)", content(
            (CompactionMessage = "application/json"),
            (String = "text/event-stream")
        )),
        (status = 400, description = "No `compaction` (compactd answers only compaction requests), nothing to summarize after the newest compaction block, not JSON, or a broken body", body = AnthropicError),
        (status = 401, description = "No or a wrong API key (`x-api-key` or a bearer token)", body = AnthropicError),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES", body = AnthropicError),
        (status = 415, description = "Not JSON", body = AnthropicError),
        (status = 422, description = "Not a Messages request (a pointer names the field)", body = AnthropicError),
        (status = 502, description = "Every model failed and no fallback is allowed", body = AnthropicError),
        (status = 504, description = "The summarizer deadline passed", body = AnthropicError),
    )
)]
pub async fn post_messages(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, ApiError> {
    let bytes = read_json_body(request, &state, "a Messages request").await?;
    let req = parse(&bytes)?;
    let streams = req.stream == Some(true);
    let requested_model = req.model.clone().unwrap_or_default();
    let body = messages::compact_body(&req, state.config.reserve_tokens)?;
    drop(req);
    let st = state.clone();
    let plan = blocking(
        move || match messages::plan(&body, &st.prompts, &st.config) {
            // Anthropic's wording of the case: `/v1/compact`'s speaks of a cut this route hides.
            Err(PlanError::NothingToCompact(_)) => Err(ApiError::InvalidParameter {
                message: "nothing to summarize: `messages` holds no user or assistant content \
                      after the newest compaction block"
                    .into(),
                parameter: Some("messages".into()),
            }),
            other => Ok(other?),
        },
    )
    .await?;
    let summarized = plan.history_messages;
    let st = state.clone();
    let summarize = async move {
        let result = run_compaction_or_default(
            plan,
            &st.prompts,
            &*st.summarizer,
            time::OffsetDateTime::now_utc(),
            &Silent,
        )
        .await?;
        tracing::info!(
            summarized_messages = summarized,
            tokens_after = result.tokens_after,
            summarizer = ?result.summarizer,
            model = %result.model,
            calls = result.calls,
            "compacted an Anthropic conversation"
        );
        Ok::<_, ApiError>(answer(result))
    };
    if streams {
        return Ok(stream(summarize, requested_model, state.config.heartbeat));
    }
    Ok(Json(summarize.await?).into_response())
}

/// Anthropic's stream events: `message_start` at once, a `ping` every `heartbeat` while
/// the summary is written (proxies cut a silent stream), then the compaction block
/// (start, one `compaction_delta` with the whole content, stop), `message_delta` with the
/// stop reason and usage, and `message_stop`; or an `error` event, as Anthropic sends one
/// after a stream began. A client that leaves stops the summary.
fn stream(
    summarize: impl std::future::Future<Output = Result<CompactionMessage, ApiError>> + Send + 'static,
    model: String,
    heartbeat: std::time::Duration,
) -> Response {
    let id = message_id();
    let start = json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0}}});
    let task = AbortOnDrop(tokio::spawn(summarize));
    let period = heartbeat.max(std::time::Duration::from_millis(10));
    // Anthropic pings right after `message_start`; the next ping one period later.
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let events = futures_util::stream::unfold(
        (Some(start), Some(task), ticks),
        |(first, task, mut ticks)| async move {
            if let Some(start) = first {
                return Some((vec![start, json!({"type": "ping"})], (None, task, ticks)));
            }
            let mut task = task?;
            tokio::select! {
                biased;
                done = &mut task.0 => {
                    let events = match done {
                        Ok(Ok(message)) => answer_events(&message),
                        Ok(Err(e)) => vec![error_document(&e)],
                        Err(_) => vec![error_document(&ApiError::Internal(
                            "the summary ended without an answer".into(),
                        ))],
                    };
                    Some((events, (None, None, ticks)))
                }
                _ = ticks.tick() => Some((vec![json!({"type": "ping"})], (None, Some(task), ticks))),
            }
        },
    );
    let body = futures_util::StreamExt::map(events, |events| {
        let mut out = String::new();
        for e in &events {
            out.push_str("event: ");
            out.push_str(e["type"].as_str().unwrap_or_default());
            out.push_str("\ndata: ");
            out.push_str(&e.to_string());
            out.push_str("\n\n");
        }
        Ok::<_, std::convert::Infallible>(out)
    });
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// Stops the summary when the stream is dropped (the client left).
struct AbortOnDrop(tokio::task::JoinHandle<Result<CompactionMessage, ApiError>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The events after `message_start` for a finished summary.
fn answer_events(message: &CompactionMessage) -> Vec<serde_json::Value> {
    let block = &message.content[0];
    let usage = &message.usage;
    vec![
        json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "compaction", "content": null, "signature": block.signature}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {
            "type": "compaction_delta", "content": block.content,
            "encrypted_content": block.encrypted_content}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta",
               "delta": {"stop_reason": message.stop_reason, "stop_sequence": null},
               "usage": {"input_tokens": usage.input_tokens,
                         "output_tokens": usage.output_tokens,
                         "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                         "cache_read_input_tokens": usage.cache_read_input_tokens}}),
        json!({"type": "message_stop"}),
    ]
}

/// An `error` event's data: Anthropic's error document.
fn error_document(e: &ApiError) -> serde_json::Value {
    if let ApiError::Internal(msg) = e {
        tracing::error!(error = %msg, "internal error");
    }
    serde_json::to_value(super::vendor_errors::anthropic_document(e))
        .unwrap_or_else(|_| json!({"type": "error"}))
}

fn message_id() -> String {
    format!(
        "msg_{}",
        std::iter::repeat_with(fastrand::alphanumeric)
            .take(24)
            .collect::<String>()
    )
}

fn answer(result: CompactionResult) -> CompactionMessage {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(result.summary.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let u = result.usage;
    CompactionMessage {
        id: message_id(),
        kind: "message",
        role: "assistant",
        model: result.model,
        content: vec![CompactionBlock {
            kind: "compaction",
            content: result.summary,
            signature: format!("sha256:{hex}"),
            encrypted_content: serde_json::to_string(&result.details)
                .expect("the details serialize"),
        }],
        stop_reason: "compaction",
        stop_sequence: None,
        usage: MessagesUsage {
            input_tokens: u.input,
            output_tokens: u.output,
            cache_creation_input_tokens: u.cache_write,
            cache_read_input_tokens: u.cache_read,
        },
    }
}

/// The request: a body without `compaction` is refused before its messages are read, so
/// the client learns first that compactd does not answer ordinary messages.
pub(super) fn parse(bytes: &[u8]) -> Result<MessagesRequest, ApiError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        compaction: Option<serde::de::IgnoredAny>,
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        if let Ok(Probe { compaction: None }) = serde_json::from_slice::<Probe>(bytes) {
            return Err(ApiError::InvalidParameter {
                message: "compactd answers only compaction requests on /v1/messages: add \
                          `\"compaction\": {\"type\": \"summarize\"}` (it does not answer \
                          ordinary messages)"
                    .into(),
                parameter: Some("compaction".into()),
            });
        }
    }
    const SHAPE: &str = "{\"model\", \"messages\", \"compaction\"}";
    let e = match json_object(bytes, SHAPE) {
        Ok(req) => return Ok(req),
        Err(e) => e,
    };
    // A lone surrogate escape is valid JSON that a Rust string cannot hold. Nothing of this
    // body is answered verbatim, so it reads as U+FFFD instead of failing.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(e);
    };
    let fixed = replace_lone_surrogates(text);
    if fixed == text {
        return Err(e);
    }
    json_object(fixed.as_bytes(), SHAPE)
}
