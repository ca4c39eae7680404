//! `POST /v1/prepare`.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use axum::extract::Request;

use crate::pipeline::arriving::parse_arriving;
use crate::pipeline::{
    prepare_response, BodyFormat, PrepareOptions, PrepareResponse, SessionInput,
};

use super::examples;
use super::extract::{read_body, send_lines, session_head, SessionBody};
use super::problem::{ApiError, Problem};
use super::schemas::PrepareRequest;
use super::{blocking, AppState};

/// The cut point, the messages to summarize and the summarizer requests, without
/// calling a model.
#[utoipa::path(
    post,
    path = "/v1/prepare",
    operation_id = "prepare",
    tag = "compaction",
    request_body(
        description = "A session: JSON with `entries`, or a pi session file (JSONL) with options in the query string.",
        content(
            (PrepareRequest = "application/json", example = examples::session_example),
            (String = "application/x-ndjson", example = examples::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(PrepareOptions),
    responses(
        (status = 200, description = "Prepared (or why not)", body = PrepareResponse),
        (status = 400, description = "Not JSON / JSONL, or a bad query parameter", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_prepare(
    State(state): State<AppState>,
    req: Request,
) -> Result<Response, ApiError> {
    let (format, query) = session_head::<PrepareOptions>(&req)?;
    let json = match format {
        BodyFormat::Jsonl => prepare_arriving(req, state, query).await?,
        BodyFormat::Json => {
            let body = SessionBody::new(read_body(req, &state).await?, format, query, &state);
            blocking(move || {
                let input = body.parse()?;
                answer(&input, &state)
            })
            .await?
        }
    };
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}

fn answer(input: &SessionInput<PrepareOptions>, state: &AppState) -> Result<Vec<u8>, ApiError> {
    let answer = prepare_response(input, &state.prompts, state.config.settings(), None)?;
    Ok(answer.to_json())
}

/// A JSONL session parsed while it arrives (`pipeline::arriving`): the parser runs on a
/// blocking thread from the first piece on, so the upload and the parse overlap. The
/// thread is one of the request's (`COMPACTD_MAX_CONCURRENCY` bounds them); it stops as
/// soon as the body fails to arrive.
async fn prepare_arriving(
    req: Request,
    state: AppState,
    query: PrepareOptions,
) -> Result<Vec<u8>, ApiError> {
    let (pieces, arriving) = std::sync::mpsc::channel();
    let max_entries = state.config.max_entries;
    let worker_state = state.clone();
    let worker = tokio::task::spawn_blocking(move || {
        parse_arriving(arriving, query, max_entries, |input| {
            answer(&input?, &worker_state)
        })
    });
    send_lines(req, &state, pieces).await?;
    match worker.await {
        Ok(Some(answer)) => answer,
        Ok(None) => Err(ApiError::Internal("the body ended early".into())),
        Err(e) => Err(ApiError::Internal(format!("worker failed: {e}"))),
    }
}
