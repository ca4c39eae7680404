//! `POST /v1/branch-summary`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use crate::pipeline::branch::{self, plan_branch_summary, run_branch_summary, BranchBudget};
use crate::pipeline::{BodyFormat, BranchSummaryOptions, Planned};
use crate::summarize::ProgressSink;

use super::examples;
use super::extract::{parse_while_arriving, read_body, session_head, SessionBody};
use super::guard::Permit;
use super::jobs::Intent;
use super::problem::{ApiError, Problem};
use super::respond::deliver;
use super::schemas::{BranchAnswer, BranchSummaryRequest};
use super::stream::json_bytes;
use super::{blocking, AppState};

/// Summarizes the branch a session leaves when it goes back to `targetId`.
#[utoipa::path(
    post,
    path = "/v1/branch-summary",
    operation_id = "branch_summary",
    tag = "compaction",
    request_body(
        description = "The whole entry tree (JSON with `entries`, `oldLeafId`, `targetId`, or JSONL with them in the query string; beside a JSON body the query string fills in what the body does not set).",
        content(
            (BranchSummaryRequest = "application/json", example = examples::branch_example),
            (String = "application/x-ndjson"),
            (String = "application/jsonl")
        )
    ),
    params(BranchSummaryOptions),
    responses(
        (status = 200, description = "The branch summary and a ready-to-append branch_summary entry (with dryRun: what would be summarized). With `Accept: text/event-stream`: progress events, then this answer as the `result` event", body = BranchAnswer),
        (status = 202, description = "With `Prefer: respond-async`: the job (`Location: /v1/jobs/{id}`); an `Idempotency-Key` makes the request a job too", body = super::jobs::JobView),
        (status = 400, description = "Not JSON / JSONL, a bad query parameter, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session, a missing or unknown oldLeafId/targetId, or an unknown model", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "Every model failed and no fallback is allowed", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "The summarizer deadline passed", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_branch_summary(
    State(state): State<AppState>,
    intent: Intent,
    permit: Option<Extension<Permit>>,
    req: Request,
) -> Result<Response, ApiError> {
    let (format, query) = session_head::<BranchSummaryOptions>(&req)?;
    if format == BodyFormat::Jsonl && query.dry_run == Some(true) {
        // What would be summarized, from a session parsed as it arrives.
        let st = state.clone();
        let answer = parse_while_arriving(req, &state, query, move |input| {
            let budget = BranchBudget::resolve(&input.options, &*st.summarizer, &st.config);
            let plan = plan_branch_summary(input, &st.prompts, budget, st.config.checking())?;
            Ok(plan.dry_run())
        })
        .await?;
        return Ok(Json(answer).into_response());
    }
    let body = SessionBody::new(read_body(req, &state).await?, format, query, &state);
    let intent = intent.with_body(&body.bytes);
    let st = state.clone();
    let planned = blocking(move || {
        let input = body.parse()?;
        let dry_run = input.options.dry_run == Some(true);
        Ok(branch::plan(
            &input,
            dry_run,
            &st.prompts,
            &*st.summarizer,
            &st.config,
        )?)
    })
    .await?;
    let plan = match planned {
        Planned::DryRun(answer) => return Ok(Json(answer).into_response()),
        Planned::Run(plan) => plan,
    };
    let st = state.clone();
    let work = move |sink: Arc<dyn ProgressSink>| -> super::stream::Work {
        Box::pin(async move {
            let result = run_branch_summary(
                plan,
                &st.prompts,
                &*st.summarizer,
                time::OffsetDateTime::now_utc(),
                &*sink,
            )
            .await?;
            json_bytes(&result)
        })
    };
    Ok(deliver(&state, intent, permit.map(|p| p.0), work).await)
}
