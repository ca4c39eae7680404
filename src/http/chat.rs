//! `POST /v1/chat/completions` and `GET /v1/models`: the OpenAI-compatible facade, so that
//! agents that speak chat-completions to a summarization model (oh-my-pi with a
//! `compaction.remoteEndpoint` ending in `/chat/completions`, hermes-agent's auxiliary
//! compression model) get compactd's retries, fallback and cache with nothing to install.
//!
//! Design decisions:
//!
//! * The request becomes one rendered prompt in `pipeline::chat` (system messages → system
//!   prompt, the rest → prompt) and one summarizer request in `pipeline::remote`, answered
//!   by `state.summarizer` like every route, with chunked folding when it does not fit the
//!   model's window (`pipeline::fold`: the older turns are summarized first, the client's
//!   instructions write the answer).
//! * `model` names a configured candidate (by name, model id or `name/model`, as
//!   `/v1/summarize`); an absent or unknown one means the default candidates, not an error:
//!   clients send whatever model name their own configuration holds.
//! * The answer's `model` is the model that wrote the summary (`name/model`, or
//!   `extractive` after a fallback), so a client sees when the fallback answered.
//! * `stream: true` is answered once the summary is complete (the summarizer has no
//!   partial output to pass on: retries, fallback and the secret scrub work on the whole
//!   text): a role chunk, one content chunk, a chunk with `finish_reason`, a usage chunk
//!   when `stream_options.include_usage`, then `data: [DONE]`. A failure therefore still
//!   has its HTTP status, as OpenAI's own errors before a stream starts.
//! * Errors are problem documents inside the service; `vendor_errors` rewrites them into
//!   OpenAI's `{"error": {...}}` shape on these two routes only.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;

use crate::pipeline::chat::ChatRequest;
use crate::pipeline::remote::{plan_remote, run_remote, Facade};
use crate::summarize::{MoaReport, Silent, Summary, Usage};

use super::extract::{json_object, read_json_body};
use super::problem::ApiError;
use super::vendor_errors::OpenAiError;
use super::AppState;

/// A `chat.completion` answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-` and 24 random characters.
    pub id: String,
    /// `chat.completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: i64,
    /// The model that wrote the summary: `name/model`, or `extractive`.
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: ChatUsage,
    /// compactd's extension: which models took part when Mixture-of-Agents wrote the
    /// summary (absent for one model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moa: Option<MoaReport>,
    /// compactd's extension: what the client should know, e.g. an upstream that cut the
    /// prompt silently (absent when there is nothing to say).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ChatChoice {
    pub index: u32,
    pub message: ChatAnswerMessage,
    /// Always `stop`: a summary cut short by the model's budget is a failed attempt.
    pub finish_reason: &'static str,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ChatAnswerMessage {
    /// `assistant`.
    pub role: &'static str,
    pub content: String,
}

/// OpenAI's usage: `prompt_tokens` counts cached prompt tokens too.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct ChatUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl From<Usage> for ChatUsage {
    fn from(u: Usage) -> Self {
        let prompt = u.input + u.cache_read + u.cache_write;
        ChatUsage {
            prompt_tokens: prompt,
            completion_tokens: u.output,
            total_tokens: prompt + u.output,
        }
    }
}

/// `GET /v1/models`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ModelList {
    /// `list`.
    pub object: &'static str,
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ModelEntry {
    /// What a request's `model` names: a configured candidate's name, or `extractive`.
    pub id: String,
    /// `model`.
    pub object: &'static str,
    /// Unix seconds: when this process started.
    pub created: i64,
    /// `compactd`.
    pub owned_by: &'static str,
}

/// Summarizes an OpenAI chat-completions request: the system messages are the system
/// prompt, the other messages the prompt (see docs/api.md, "OpenAI-compatible").
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    operation_id = "chatCompletions",
    tag = "openai",
    request_body(content = ChatRequest, content_type = "application/json", example = json!({
        "model": "local",
        "messages": [
            {"role": "system", "content": "You summarize coding sessions."},
            {"role": "user", "content": "<conversation>\n[User]: Fix the login bug\n</conversation>\n\nSummarize the conversation above."}
        ],
        "max_tokens": 2000
    })),
    responses(
        (status = 200, description = "A `chat.completion` object, or with `stream: true` a `text/event-stream` of `chat.completion.chunk` events ending in `data: [DONE]`", content(
            (ChatCompletion = "application/json"),
            (String = "text/event-stream")
        )),
        (status = 400, description = "Not JSON, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = OpenAiError),
        (status = 401, description = "No or a wrong API key", body = OpenAiError),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES", body = OpenAiError),
        (status = 415, description = "Not JSON, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = OpenAiError),
        (status = 422, description = "Not a chat-completions request, or no text to summarize", body = OpenAiError),
        (status = 502, description = "Every model failed and no fallback is allowed", body = OpenAiError),
        (status = 504, description = "The summarizer deadline passed", body = OpenAiError),
    )
)]
pub async fn post_chat_completions(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, ApiError> {
    let bytes = read_json_body(request, &state, "a chat-completions request").await?;
    let req: ChatRequest = json_object(&bytes, "{\"model\", \"messages\"}")?;
    let plan = plan_remote(
        req.rendered()?,
        Facade::ChatCompletions,
        state.summarizer.as_ref(),
        &state.prompts,
        state.config.reserve_tokens,
    );
    let summary = run_remote(&plan, state.summarizer.as_ref(), &state.prompts, &Silent).await?;
    let id = format!("chatcmpl-{}", random_id());
    let created = time::OffsetDateTime::now_utc().unix_timestamp();
    if req.streams() {
        return Ok(stream(&id, created, &summary, req.includes_usage()));
    }
    Ok(Json(ChatCompletion {
        id,
        object: "chat.completion",
        created,
        model: summary.model,
        choices: vec![ChatChoice {
            index: 0,
            message: ChatAnswerMessage {
                role: "assistant",
                content: summary.text,
            },
            finish_reason: "stop",
        }],
        usage: summary.usage.into(),
        moa: summary.moa,
        warnings: summary.warnings,
    })
    .into_response())
}

/// The models a request can name: the configured candidates and `extractive`.
#[utoipa::path(
    get,
    path = "/v1/models",
    operation_id = "listModels",
    tag = "openai",
    responses(
        (status = 200, description = "The configured model candidates by name, and `extractive`", body = ModelList),
        (status = 401, description = "No or a wrong API key", body = OpenAiError),
    )
)]
pub async fn get_models(State(state): State<AppState>) -> Json<ModelList> {
    let created = started();
    let entry = |id: &str| ModelEntry {
        id: id.to_string(),
        object: "model",
        created,
        owned_by: "compactd",
    };
    let mut data: Vec<ModelEntry> = state
        .config
        .llm
        .models
        .iter()
        .map(|m| entry(&m.name))
        .collect();
    data.push(entry("extractive"));
    Json(ModelList {
        object: "list",
        data,
    })
}

/// When the process started (first asked), in Unix seconds.
pub(super) fn started() -> i64 {
    static STARTED: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *STARTED.get_or_init(|| time::OffsetDateTime::now_utc().unix_timestamp())
}

pub(super) fn random_id() -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(24)
        .collect()
}

/// The whole answer as server-sent events (see the module documentation).
fn stream(id: &str, created: i64, summary: &Summary, include_usage: bool) -> Response {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": summary.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": summary.text}), None),
        chunk(json!({}), Some("stop")),
    ];
    if include_usage {
        events.push(json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": summary.model,
            "choices": [],
            "usage": ChatUsage::from(summary.usage),
        }));
    }
    let mut body = String::new();
    for e in &events {
        body.push_str("data: ");
        body.push_str(&e.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from(body),
    )
        .into_response()
}
