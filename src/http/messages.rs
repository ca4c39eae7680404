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
//! * `stream: true` is refused (400): the summary is only complete at the end, and a
//!   compaction request gains nothing from a stream.
//! * Errors are problem documents inside the service; `anthropic_errors` rewrites them
//!   into Anthropic's `{"type": "error", "error": {...}}` on this route.

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use crate::pipeline::compact::{CompactionResult, PlanError};
use crate::pipeline::messages::{self, MessagesRequest};
use crate::pipeline::BodyFormat;
use crate::summarize::Silent;
use compactd_core::session::{InputError, Violation};

use super::anthropic_errors::AnthropicError;
use super::extract::{body_format, read_body};
use super::problem::ApiError;
use super::{blocking, AppState};

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
        (status = 200, description = "A `message` whose content is one `compaction` block, `stop_reason: \"compaction\"`", body = CompactionMessage),
        (status = 400, description = "No `compaction` (compactd answers only compaction requests), `stream: true`, nothing to summarize after the newest compaction block, not JSON, or a broken body", body = AnthropicError),
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
    // The query string is ignored: the SDK's beta client adds `beta=true`.
    let content_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if body_format(content_type)? != BodyFormat::Json {
        return Err(ApiError::UnsupportedMediaType(
            "a JSONL body (send a Messages request as application/json)".into(),
        ));
    }
    let bytes = read_body(request, &state).await?;
    let req = parse(&bytes)?;
    if req.stream == Some(true) {
        return Err(ApiError::InvalidParameter {
            message: "`stream: true` is not supported: a compaction request is answered as one \
                      message (send `stream: false`)"
                .into(),
            parameter: Some("stream".into()),
        });
    }
    let body = messages::compact_body(&req)?;
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
    let result = messages::run(plan, &state.prompts, &*state.summarizer, &Silent).await?;
    Ok(Json(answer(result)).into_response())
}

fn answer(result: CompactionResult) -> CompactionMessage {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(result.summary.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let u = result.usage;
    CompactionMessage {
        id: format!(
            "msg_{}",
            std::iter::repeat_with(fastrand::alphanumeric)
                .take(24)
                .collect::<String>()
        ),
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
fn parse(bytes: &[u8]) -> Result<MessagesRequest, ApiError> {
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
    } else if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
        return Err(ApiError::Input(InputError::invalid(Violation {
            pointer: String::new(),
            message: "the body must be a JSON object: {\"model\", \"messages\", \"compaction\"}"
                .into(),
            line: None,
        })));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| ApiError::Input(InputError::from_deserialize(e)))
}
