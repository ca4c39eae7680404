//! `POST /v1/recall`.

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::pipeline::recall::{recall, RecallAnswer};
use crate::pipeline::{RecallOptions, SessionInput};

use super::examples;
use super::extract::with_session;
use super::problem::{ApiError, Problem};
use super::schemas::RecallRequest;
use super::AppState;

/// Searches what a compaction took out of the context: the entries on the path before the
/// latest compaction's first kept entry (`scope=compacted`, with no compaction: the part a
/// compaction with these settings would summarize), or the whole path (`scope=all`).
/// Words and whole identifiers (paths, dotted and camel-case names, error codes, numbers
/// with units) are the terms; BM25 ranks, best first, and each match quotes its best
/// passage. Calls no model.
#[utoipa::path(
    post,
    path = "/v1/recall",
    operation_id = "recall",
    tag = "compaction",
    request_body(
        description = "A session: JSON with `entries` (and `q`, `limit`, `scope`), or a pi session file (JSONL), with options in the query string (beside a JSON body too: the body wins where both set one).",
        content(
            (RecallRequest = "application/json", example = examples::session_example),
            (String = "application/x-ndjson", example = examples::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(RecallOptions),
    responses(
        (status = 200, description = "The matches, best first (none is an empty list)", body = RecallAnswer),
        (status = 400, description = "Not JSON / JSONL, a bad query parameter, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session, no `q`, or a `limit` outside 1–50", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_recall(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let defaults = state.config.settings();
    let json = with_session(req, &state, move |input: &SessionInput<RecallOptions>| {
        let answer = recall(input, defaults)?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}
