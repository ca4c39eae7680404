//! Anthropic's error shape on `POST /v1/messages`.
//!
//! As `openai_errors` does for the OpenAI routes: every error inside the service is a
//! problem document, and this outermost middleware rewrites the ones answered on this
//! route (by the request path) into `{"type": "error", "error": {"type", "message"},
//! "request_id"}`, keeping the status and headers. Anthropic's clients pick their
//! exception by status and read the message.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

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

#[derive(Deserialize)]
struct ProblemBack {
    detail: String,
    #[serde(default)]
    errors: Vec<ItemBack>,
}

#[derive(Deserialize)]
struct ItemBack {
    pointer: String,
    message: Option<String>,
}

/// Problem documents are small; anything larger is not one of ours.
const MAX_PROBLEM_BYTES: usize = 64 * 1024;

pub async fn anthropic_errors(req: Request, next: Next) -> Response {
    if req.uri().path() != "/v1/messages" {
        return next.run(req).await;
    }
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let res = next.run(req).await;
    let is_problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/problem+json");
    if !is_problem {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_PROBLEM_BYTES).await else {
        return (parts.status, "").into_response();
    };
    let Ok(problem) = serde_json::from_slice::<ProblemBack>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let message = match problem.errors.first() {
        Some(ItemBack {
            pointer,
            message: Some(m),
        }) if !problem.detail.contains(m.as_str()) => {
            let field = pointer.trim_start_matches('/').replace('/', ".");
            format!("{} ({field}: {m})", problem.detail)
        }
        _ => problem.detail,
    };
    let error = AnthropicError {
        kind: "error",
        error: AnthropicErrorBody {
            kind: match parts.status.as_u16() {
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
        request_id: request_id.or_else(|| {
            parts
                .headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        }),
    };
    let json = serde_json::to_vec(&error).unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(json))
}
