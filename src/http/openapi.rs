//! The OpenAPI description, generated from the handlers and types.

use axum::Json;
use utoipa::OpenApi;

use crate::compaction::FileLists;
use crate::pipeline::input::{SessionRequest, SettingsRequest};
use crate::pipeline::numbers::JsNumber;
use crate::pipeline::prepare::{
    Compactable, Conversation, NotCompactableResponse, PrepareResponse, SettingsJson,
};
use crate::pipeline::prune::PruneResponse;
use crate::summarize::{RequestKind, SummaryRequest};

use super::problem::{Problem, ProblemItem};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "compactd",
        description = "Context compaction for LLM coding agents: pi's cut point, split turns, serialization and file tracking, server-side.",
        license(name = "MIT")
    ),
    paths(
        super::prepare::prepare,
        super::compact::compact,
        super::compact::summarize,
        super::branch::branch_summary,
        super::prune::prune,
        super::health::healthz,
        super::health::readyz,
        super::health::config,
        super::health::metrics
    ),
    components(schemas(
        SessionRequest,
        SettingsRequest,
        PrepareResponse,
        PruneResponse,
        Compactable,
        NotCompactableResponse,
        Conversation,
        SettingsJson,
        FileLists,
        SummaryRequest,
        RequestKind,
        JsNumber,
        Problem,
        ProblemItem
    ))
)]
pub struct ApiDoc;

/// The spec as pretty JSON (what `compactd openapi` prints and `openapi/` holds).
pub fn spec_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serializes")
}

pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
