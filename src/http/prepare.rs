//! `POST /v1/prepare`.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use axum::extract::Request;

use crate::pipeline::{prepare_response, PrepareOptions, PrepareResponse, SessionInput};

use super::examples;
use super::extract::with_session;
use super::problem::{ApiError, Problem};
use super::schemas::PrepareRequest;
use super::AppState;

/// The cut point, the messages to summarize and the summarizer requests, without
/// calling a model.
#[utoipa::path(
    post,
    path = "/v1/prepare",
    operation_id = "prepare",
    tag = "compaction",
    request_body(
        description = "A session: JSON with `entries`, or a pi session file (JSONL), with options in the query string (beside a JSON body too: the body wins where both set one).",
        content(
            (PrepareRequest = "application/json", example = examples::session_example),
            (String = "application/x-ndjson", example = examples::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(PrepareOptions),
    responses(
        (status = 200, description = "Prepared (or why not)", body = PrepareResponse),
        (status = 400, description = "Not JSON / JSONL, a bad query parameter, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_prepare(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let st = state.clone();
    let json = with_session(req, &state, move |input| answer(input, &st)).await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}

fn answer(input: &SessionInput<PrepareOptions>, state: &AppState) -> Result<Vec<u8>, ApiError> {
    let answer = prepare_response(input, &state.prompts, state.config.settings(), None)?;
    Ok(answer.to_json())
}
