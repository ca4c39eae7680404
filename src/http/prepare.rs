//! `POST /v1/prepare`.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::pipeline;

use super::extract::SessionBody;
use super::problem::ApiError;
use super::{blocking, AppState};

/// The cut point, the messages to summarize and the summarizer requests, without
/// calling a model.
#[utoipa::path(
    post,
    path = "/v1/prepare",
    tag = "compaction",
    request_body(
        description = "A session: JSON with `entries`, or a pi session file (JSONL) with options in the query string.",
        content(
            (crate::pipeline::input::SessionRequest = "application/json", example = super::openapi::session_example),
            (String = "application/x-ndjson", example = super::openapi::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(
        ("leafId" = Option<String>, Query, description = "JSONL bodies: entry to work up to"),
        ("keepRecentTokens" = Option<u64>, Query, description = "JSONL bodies: tokens kept verbatim"),
        ("reserveTokens" = Option<u64>, Query, description = "JSONL bodies: tokens reserved for the summary"),
        ("contextWindow" = Option<u64>, Query, description = "JSONL bodies: adds `shouldCompact`"),
        ("messages" = Option<bool>, Query, description = "JSONL bodies: `false` leaves out the message arrays"),
        ("customInstructions" = Option<String>, Query, description = "JSONL bodies: extra focus for the summary"),
        ("promptOverride" = Option<String>, Query, description = "JSONL bodies: replaces the base instructions"),
    ),
    responses(
        (status = 200, description = "Prepared (or why not)", body = crate::pipeline::PrepareResponse),
        (status = 400, description = "Not JSON / JSONL, or a bad query parameter", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn prepare(
    State(state): State<AppState>,
    body: SessionBody,
) -> Result<Response, ApiError> {
    let json = blocking(move || {
        let input = body.parse()?;
        let answer = pipeline::prepare(&input, &state.prompts, state.config.settings(), None)?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}
