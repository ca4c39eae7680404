//! `POST /v1/prune`.

use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::pipeline::prune::{now_ms, plan};

use super::blocking;
use super::extract::SessionBody;
use super::problem::ApiError;

/// Tool-output pruning: old tool results beyond the newest `protectTokens` become
/// `[Output truncated - N tokens]` when that saves at least `minimumSavings`. Answers
/// only the changed entries; nothing to prune is `prunedCount: 0`.
#[utoipa::path(
    post,
    path = "/v1/prune",
    tag = "compaction",
    request_body(
        description = "A session: JSON with `entries` (and `protectTokens`, `minimumSavings`, `protectedTools`), or a pi session file (JSONL) with options in the query string.",
        content(
            (crate::pipeline::input::SessionRequest = "application/json", example = super::openapi::session_example),
            (String = "application/x-ndjson", example = super::openapi::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(
        ("leafId" = Option<String>, Query, description = "JSONL bodies: entry whose path is pruned"),
        ("protectTokens" = Option<u64>, Query, description = "JSONL bodies: newest tool-output tokens never pruned [40000]"),
        ("minimumSavings" = Option<u64>, Query, description = "JSONL bodies: prune only when this many tokens are saved [20000]"),
        ("protectedTools" = Option<String>, Query, description = "JSONL bodies: comma-separated tool names never pruned [skill,read]; empty for none"),
    ),
    responses(
        (status = 200, description = "The changed entries (none when nothing is pruned)", body = crate::pipeline::prune::PruneResponse),
        (status = 400, description = "Not JSON / JSONL, or a bad query parameter", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn prune(body: SessionBody) -> Result<Response, ApiError> {
    let json = blocking(move || {
        let input = body.parse()?;
        let answer = plan(&input)?
            .response(now_ms())
            .map_err(|e| ApiError::Internal(format!("cannot rewrite an entry: {e}")))?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}
