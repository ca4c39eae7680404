//! OpenAI's error document.

use axum::http::StatusCode;
use serde::Serialize;

use super::ProblemBack;

/// OpenAI's error document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OpenAiError {
    pub error: OpenAiErrorBody,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OpenAiErrorBody {
    /// What went wrong (the problem document's detail, with the first violation's message).
    pub message: String,
    /// `invalid_request_error` (4xx), `authentication_error` (401) or `server_error` (5xx).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The request field at fault as a dotted path (`messages.0.content`), or null.
    pub param: Option<String>,
    /// compactd's problem slug with underscores (`upstream_failed`, `body_too_large`, …;
    /// `invalid_request` for `invalid-session`).
    pub code: String,
}

pub(super) fn document(status: StatusCode, problem: ProblemBack) -> OpenAiError {
    OpenAiError {
        error: OpenAiErrorBody {
            message: problem.detail,
            kind: match status.as_u16() {
                401 => "authentication_error",
                500.. => "server_error",
                _ => "invalid_request_error",
            },
            param: problem.errors.first().and_then(|e| e.field()),
            code: match problem.problem_type.rsplit(':').next().unwrap_or("") {
                // Not a session on these routes: the request itself.
                "invalid-session" => "invalid_request".into(),
                slug => slug.replace('-', "_"),
            },
        },
    }
}
