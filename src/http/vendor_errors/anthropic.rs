//! Anthropic's error document: its clients pick their exception by status and read the
//! message.

use axum::http::StatusCode;
use serde::Serialize;

use super::{ItemBack, ProblemBack};

/// Anthropic's error document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AnthropicError {
    /// `error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub error: AnthropicErrorBody,
    /// The request's `x-request-id`.
    pub request_id: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AnthropicErrorBody {
    /// By status: `invalid_request_error` (400, 405, 413, 415, 422), `authentication_error`
    /// (401), `not_found_error` (404), `conflict_error` (409), `rate_limit_error` (429),
    /// `overloaded_error` (503), `timeout_error` (504), `api_error` (other 5xx).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The problem document's detail, with the field at fault when one is named.
    pub message: String,
}

pub(super) fn document(
    status: StatusCode,
    problem: ProblemBack,
    request_id: Option<String>,
) -> AnthropicError {
    let message = match problem.errors.first() {
        Some(
            item @ ItemBack {
                message: Some(m), ..
            },
        ) if !problem.detail.contains(m.as_str()) => {
            let field = item.field().unwrap_or_default();
            format!("{} ({field}: {m})", problem.detail)
        }
        _ => problem.detail,
    };
    AnthropicError {
        kind: "error",
        error: AnthropicErrorBody {
            kind: match status.as_u16() {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                409 => "conflict_error",
                429 => "rate_limit_error",
                503 => "overloaded_error",
                504 => "timeout_error",
                500.. => "api_error",
                _ => "invalid_request_error",
            },
            message,
        },
        request_id,
    }
}
