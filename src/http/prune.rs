//! `POST /v1/prune`.

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::pipeline::prune::{now_ms, plan_prune, PruneResponse};
use crate::pipeline::{PruneOptions, SessionInput};

use super::examples;
use super::extract::with_session;
use super::problem::{ApiError, Problem};
use super::schemas::PruneRequest;
use super::AppState;

/// Tool-output pruning: old tool results beyond the newest `protectTokens` become
/// `[Output truncated - N tokens]` when that saves at least `minimumSavings`. Answers
/// only the changed entries; nothing to prune is `prunedCount: 0`.
#[utoipa::path(
    post,
    path = "/v1/prune",
    operation_id = "prune",
    tag = "compaction",
    request_body(
        description = "A session: JSON with `entries` (and `protectTokens`, `minimumSavings`, `protectedTools`), or a pi session file (JSONL), with options in the query string (beside a JSON body too: the body wins where both set one).",
        content(
            (PruneRequest = "application/json", example = examples::session_example),
            (String = "application/x-ndjson", example = examples::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(PruneOptions),
    responses(
        (status = 200, description = "The changed entries (none when nothing is pruned)", body = PruneResponse),
        (status = 400, description = "Not JSON / JSONL, a bad query parameter, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_prune(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let json = with_session(req, &state, |input: &SessionInput<PruneOptions>| {
        let answer = plan_prune(input)?
            .response(now_ms())
            .map_err(|e| ApiError::Internal(format!("cannot rewrite an entry: {e}")))?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}
