//! `POST /v1/compact` and `POST /v1/summarize`: the whole compaction, and the
//! remoteEndpoint contract of pi-style agents.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::pipeline::compact::{self, CompactPlan, NothingToCompact};
use crate::pipeline::{self, BodyFormat};
use crate::session::{InputError, Violation};
use crate::summarize::{RequestKind, SummarizerKind, SummaryRequest, Usage};

use super::extract::SessionBody;
use super::problem::ApiError;
use super::{blocking, AppState};

/// The remoteEndpoint body pi-style agents send.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeRequest {
    /// Empty or absent: compactd's summarization system prompt.
    #[serde(default)]
    pub system_prompt: String,
    pub prompt: String,
    /// Output budget [floor(0.8 × reserveTokens)].
    pub max_tokens: Option<u64>,
    /// A configured model name.
    pub model: Option<String>,
}

/// The remoteEndpoint answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeResponse {
    pub summary: String,
    pub usage: Usage,
    pub model: String,
    pub summarizer: SummarizerKind,
}

/// Summarizes one prompt: the remoteEndpoint contract (`compaction.remoteEndpoint`).
#[utoipa::path(
    post,
    path = "/v1/summarize",
    tag = "compaction",
    request_body(content = SummarizeRequest, content_type = "application/json", example = super::openapi::summarize_example),
    responses(
        (status = 200, description = "The summary", body = SummarizeResponse),
        (status = 400, description = "Not JSON", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Missing prompt or unknown model", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 502, description = "Every model failed and no fallback is allowed", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The summarizer deadline passed", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn summarize(
    State(state): State<AppState>,
    body: SessionBody,
) -> Result<Response, ApiError> {
    if body.format != BodyFormat::Json {
        return Err(ApiError::UnsupportedMediaType(
            "a JSONL body (send {\"systemPrompt\", \"prompt\"} as application/json)".into(),
        ));
    }
    let req = remote_request(&body.bytes)?;
    summarize_remote(&state, req).await
}

/// Parses `{systemPrompt, prompt, maxTokens?, model?}` with a pointer on errors.
fn remote_request(bytes: &[u8]) -> Result<SummarizeRequest, ApiError> {
    // serde takes a struct from an array too (`["", "prompt"]`); the contract is an object.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
        return Err(ApiError::Input(InputError::invalid(Violation {
            pointer: String::new(),
            message: "the body must be a JSON object: {\"systemPrompt\", \"prompt\"}".into(),
            line: None,
        })));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let req: SummarizeRequest = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        if e.inner().is_syntax() || e.inner().is_eof() {
            let inner = e.into_inner();
            return ApiError::Input(InputError::Malformed {
                message: crate::session::error::strip_position(&inner.to_string()).to_string(),
                line: inner.line(),
                column: inner.column(),
            });
        }
        let pointer = crate::session::error::pointer_of(e.path());
        let message = e.inner().to_string();
        ApiError::Input(InputError::invalid(Violation {
            pointer: if message.contains("missing field `prompt`") {
                "/prompt".into()
            } else {
                pointer
            },
            message: crate::session::error::strip_position(&message).to_string(),
            line: None,
        }))
    })?;
    if req.prompt.trim().is_empty() {
        return Err(ApiError::Input(InputError::invalid(Violation {
            pointer: "/prompt".into(),
            message: "the prompt is empty".into(),
            line: None,
        })));
    }
    Ok(req)
}

async fn summarize_remote(state: &AppState, req: SummarizeRequest) -> Result<Response, ApiError> {
    let kind = RequestKind::detect(&req.prompt);
    let request = SummaryRequest {
        kind,
        system_prompt: if req.system_prompt.trim().is_empty() {
            state.prompts.system.clone()
        } else {
            req.system_prompt
        },
        prompt: req.prompt,
        max_tokens: req
            .max_tokens
            .unwrap_or(crate::summarize::templates::four_fifths(
                state.config.reserve_tokens,
            ))
            .max(1),
    };
    let s = state
        .summarizer
        .summarize(&request, req.model.as_deref())
        .await?;
    Ok(Json(SummarizeResponse {
        summary: s.text,
        usage: s.usage,
        model: s.model,
        summarizer: s.summarizer,
    })
    .into_response())
}

/// Is this JSON body the remoteEndpoint shape (a prompt, no entries)?
fn is_remote_body(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        entries: Option<serde::de::IgnoredAny>,
        prompt: Option<serde::de::IgnoredAny>,
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return false;
    }
    matches!(
        serde_json::from_slice::<Probe>(bytes),
        Ok(Probe {
            entries: None,
            prompt: Some(_)
        })
    )
}

enum Planned {
    DryRun(Vec<u8>),
    Nothing(NothingToCompact),
    Plan(Box<CompactPlan>),
}

/// The whole compaction: preparation, summaries, and a ready-to-append entry.
#[utoipa::path(
    post,
    path = "/v1/compact",
    tag = "compaction",
    request_body(
        description = "A session (JSON with `entries`, or a pi session file as JSONL with options in the query string), or the remoteEndpoint body `{systemPrompt, prompt}`.",
        content(
            (super::openapi::CompactRequest = "application/json", examples(
                ("session" = (summary = "A session", value = json!(super::openapi::session_example()))),
                ("remoteEndpoint" = (summary = "The remoteEndpoint body", value = json!(super::openapi::summarize_example())))
            )),
            (String = "application/x-ndjson", example = super::openapi::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(
        ("leafId" = Option<String>, Query, description = "JSONL bodies: entry to work up to"),
        ("keepRecentTokens" = Option<u64>, Query, description = "JSONL bodies: tokens kept verbatim"),
        ("reserveTokens" = Option<u64>, Query, description = "JSONL bodies: tokens reserved for the summary"),
        ("customInstructions" = Option<String>, Query, description = "JSONL bodies: extra focus for the summary"),
        ("promptOverride" = Option<String>, Query, description = "JSONL bodies: replaces the base instructions"),
        ("shortSummary" = Option<bool>, Query, description = "JSONL bodies: also a one-paragraph summary"),
        ("model" = Option<String>, Query, description = "JSONL bodies: a configured model name"),
        ("reason" = Option<crate::pipeline::input::CompactReason>, Query, description = "JSONL bodies: manual, threshold or overflow"),
        ("dryRun" = Option<bool>, Query, description = "JSONL bodies: answer like /v1/prepare"),
    ),
    responses(
        (status = 200, description = "A CompactionResult (a remoteEndpoint answer for a `{systemPrompt, prompt}` body; a prepare answer with dryRun)", body = super::openapi::CompactAnswer),
        (status = 400, description = "Not JSON / JSONL, or a bad query parameter", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Nothing to compact", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session, or an unknown model", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 502, description = "Every model failed and no fallback is allowed", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The summarizer deadline passed", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn compact(
    State(state): State<AppState>,
    body: SessionBody,
) -> Result<Response, ApiError> {
    if body.format == BodyFormat::Json && is_remote_body(&body.bytes) {
        let req = remote_request(&body.bytes)?;
        return summarize_remote(&state, req).await;
    }
    let st = state.clone();
    let planned = blocking(move || {
        let input = body.parse()?;
        let defaults = st.config.settings();
        if input.options.dry_run == Some(true) {
            let answer = pipeline::prepare(&input, &st.prompts, defaults, None)?;
            let json =
                serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))?;
            return Ok(Planned::DryRun(json));
        }
        Ok(match compact::plan(&input, &st.prompts, defaults)? {
            Ok(plan) => Planned::Plan(Box::new(plan)),
            Err(nothing) => Planned::Nothing(nothing),
        })
    })
    .await?;
    match planned {
        Planned::DryRun(json) => Ok(([(CONTENT_TYPE, "application/json")], json).into_response()),
        Planned::Nothing(n) => Err(ApiError::NothingToCompact(n)),
        Planned::Plan(plan) => {
            let (messages, reason) = (plan.history_messages, plan.reason);
            let result = compact::run(
                *plan,
                &state.prompts,
                &*state.summarizer,
                time::OffsetDateTime::now_utc(),
            )
            .await?;
            tracing::info!(
                summarized_messages = messages,
                reason = ?reason,
                tokens_before = result.tokens_before.0,
                tokens_after = result.tokens_after,
                summarizer = ?result.summarizer,
                model = %result.model,
                calls = result.calls,
                chunks = result.chunks,
                "compacted"
            );
            Ok(Json(result).into_response())
        }
    }
}
