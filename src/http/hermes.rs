//! `POST /v1/hermes/compress` and `POST /v1/hermes/prepare`: hermes-agent message
//! lists (contract in `docs/hermes.md` §15).
//!
//! Both answer 200 whether or not the list was compacted (`compressed`): hermes's
//! contract is "return the list unchanged", not an error. Bad bodies, auth, limits and
//! an unknown model name are errors as on every route.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Extension;

use crate::pipeline::hermes::{parse_request_limited, plan_hermes, run_hermes};
use crate::pipeline::hermes_recall::{
    parse_recall_request, recall_messages, HermesRecallAnswer, HermesRecallRequest,
};
use crate::pipeline::BodyFormat;
use crate::summarize::ProgressSink;
use compactd_hermes::Switches;

use super::extract::{body_format, read_body};
use super::guard::Permit;
use super::jobs::Intent;
use super::problem::{ApiError, Problem};
use super::respond::deliver;
use super::schemas::{HermesAnswer, HermesRequestSchema};
use super::{blocking, AppState};

/// A JSON body within the body limit.
pub struct HermesJsonBody(pub Bytes);

impl FromRequest<AppState> for HermesJsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        if body_format(content_type)? != BodyFormat::Json {
            return Err(ApiError::UnsupportedMediaType(
                "a JSONL body (send the hermes request as application/json)".into(),
            ));
        }
        let bytes = read_body(req, state).await?;
        Ok(HermesJsonBody(bytes))
    }
}

/// Compacts a hermes-agent conversation as hermes 0.19.0 would (with H1–H12).
#[utoipa::path(
    post,
    path = "/v1/hermes/compress",
    operation_id = "hermesCompress",
    tag = "hermes",
    request_body(content = HermesRequestSchema, content_type = "application/json", example = super::examples::hermes_example),
    responses(
        (status = 200, description = "Compacted (`compressed: true`) or returned unchanged with a `reason`. With `Accept: text/event-stream`: progress events, then this answer as the `result` event", body = HermesAnswer),
        (status = 202, description = "With `Prefer: respond-async`: the job (`Location: /v1/jobs/{id}`); an `Idempotency-Key` makes the request a job too", body = super::jobs::JobView),
        (status = 400, description = "Not JSON, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more messages than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid request (with a pointer), or an unknown model", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_hermes_compress(
    State(state): State<AppState>,
    intent: Intent,
    permit: Option<Extension<Permit>>,
    HermesJsonBody(bytes): HermesJsonBody,
) -> Result<Response, ApiError> {
    let intent = intent.with_body(&bytes);
    compress(state, bytes, false, Some(intent), permit.map(|p| p.0)).await
}

/// What `/v1/hermes/compress` would do, without calling a model: boundaries, the
/// serialized turns and the summarizer request.
#[utoipa::path(
    post,
    path = "/v1/hermes/prepare",
    operation_id = "hermesPrepare",
    tag = "hermes",
    request_body(content = HermesRequestSchema, content_type = "application/json", example = super::examples::hermes_example),
    responses(
        (status = 200, description = "The plan (`compressed: false`; `requests` and `serialized` when a summary would be made)", body = HermesAnswer),
        (status = 400, description = "Not JSON, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more messages than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid request (with a pointer)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_hermes_prepare(
    State(state): State<AppState>,
    HermesJsonBody(bytes): HermesJsonBody,
) -> Result<Response, ApiError> {
    compress(state, bytes, true, None, None).await
}

/// Searches hermes-agent messages a compaction took out of the context (the client sends
/// them: the compactd hermes plugin keeps what each compaction summarized). Ranked as
/// `/v1/recall` ranks entries: words and whole identifiers as terms, BM25, best first,
/// each match quoting its best passage with secrets redacted. Calls no model.
#[utoipa::path(
    post,
    path = "/v1/hermes/recall",
    operation_id = "hermesRecall",
    tag = "hermes",
    request_body(content = HermesRecallRequest, content_type = "application/json", example = super::examples::hermes_recall_example),
    responses(
        (status = 200, description = "The matches, best first (none is an empty list); `index` is the message's place in `messages`", body = HermesRecallAnswer),
        (status = 400, description = "Not JSON, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more messages than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "No `messages` list, no `q`, or a `limit` outside 1–50 (with a pointer)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_hermes_recall(
    State(state): State<AppState>,
    HermesJsonBody(bytes): HermesJsonBody,
) -> Result<Response, ApiError> {
    let max_messages = state.config.max_entries;
    let json = blocking(move || {
        let req = parse_recall_request(&bytes, max_messages)?;
        let answer = recall_messages(&req)?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}

async fn compress(
    state: AppState,
    bytes: Bytes,
    dry_run: bool,
    intent: Option<Intent>,
    permit: Option<Permit>,
) -> Result<Response, ApiError> {
    let prompts = state.prompts.clone();
    let max_messages = state.config.max_entries;
    let planned = blocking(move || {
        let mut req = parse_request_limited(&bytes, max_messages)?;
        req.dry_run |= dry_run;
        Ok(plan_hermes(req, &prompts.hermes, &Switches::default()))
    })
    .await?;
    let st = state.clone();
    let work = move |sink: Arc<dyn ProgressSink>| -> super::stream::Work {
        Box::pin(async move {
            let answer = run_hermes(planned, st.summarizer.as_ref(), &*sink).await?;
            Ok(answer.to_bytes())
        })
    };
    // /v1/hermes/prepare calls no model: always a plain answer.
    let intent = intent.unwrap_or_else(Intent::plain);
    Ok(deliver(&state, intent, permit, work).await)
}
