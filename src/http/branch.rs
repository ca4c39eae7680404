//! `POST /v1/branch-summary`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::pipeline::branch::{self, BranchBudget, BranchPlan};

use super::extract::SessionBody;
use super::problem::ApiError;
use super::{blocking, AppState};

/// Summarizes the branch a session leaves when it goes back to `targetId`.
#[utoipa::path(
    post,
    path = "/v1/branch-summary",
    tag = "compaction",
    request_body(
        description = "The whole entry tree (JSON with `entries`, `oldLeafId`, `targetId`, or JSONL with them in the query string).",
        content(
            (crate::pipeline::input::SessionRequest = "application/json", example = super::openapi::branch_example),
            (String = "application/x-ndjson"),
            (String = "application/jsonl")
        )
    ),
    params(
        ("oldLeafId" = Option<String>, Query, description = "JSONL bodies: the leaf being left"),
        ("targetId" = Option<String>, Query, description = "JSONL bodies: where the session goes back to"),
        ("customInstructions" = Option<String>, Query, description = "JSONL bodies: extra focus (or the whole instructions with replaceInstructions)"),
        ("replaceInstructions" = Option<bool>, Query, description = "JSONL bodies: customInstructions replace the template"),
        ("contextWindow" = Option<u64>, Query, description = "JSONL bodies: the summarizer's context window"),
        ("reserveTokens" = Option<u64>, Query, description = "JSONL bodies: tokens reserved for the answer [16384]"),
        ("dryRun" = Option<bool>, Query, description = "JSONL bodies: no model call"),
        ("model" = Option<String>, Query, description = "JSONL bodies: a configured model name"),
    ),
    responses(
        (status = 200, description = "The branch summary and a ready-to-append branch_summary entry (with dryRun: what would be summarized)", body = super::openapi::BranchAnswer),
        (status = 400, description = "Not JSON / JSONL, or a bad query parameter", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session, a missing or unknown oldLeafId/targetId, or an unknown model", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 502, description = "Every model failed and no fallback is allowed", body = super::problem::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The summarizer deadline passed", body = super::problem::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn branch_summary(
    State(state): State<AppState>,
    body: SessionBody,
) -> Result<Response, ApiError> {
    let st = state.clone();
    let (plan, dry_run): (BranchPlan, bool) = blocking(move || {
        let input = body.parse()?;
        let budget = BranchBudget::resolve(&input.options, &*st.summarizer, &st.config);
        let plan = branch::plan(&input, &st.prompts, budget)?;
        Ok((plan, input.options.dry_run == Some(true)))
    })
    .await?;
    if dry_run {
        return Ok(Json(plan.dry_run()).into_response());
    }
    let result = branch::run(
        plan,
        &state.prompts,
        &*state.summarizer,
        time::OffsetDateTime::now_utc(),
    )
    .await?;
    Ok(Json(result).into_response())
}
