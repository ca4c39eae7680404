//! OpenAI's error shape on the OpenAI-compatible routes.
//!
//! Every error inside the service is a problem document (`problem.rs`), whoever raised it:
//! the authentication and load-shedding middleware, the body limit, the handler, the panic
//! guard. OpenAI clients read `{"error": {"message", "type", "param", "code"}}` instead, so
//! this outermost middleware rewrites problem documents answered on the routes
//! [`speaks_openai`] names (by the request path) and leaves every other route alone. Rewriting at
//! one place, rather than in each source of errors, keeps the problem table the only list
//! of errors and keeps the statuses and headers (`WWW-Authenticate`, `Retry-After`)
//! identical on every route.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// The routes that answer OpenAI's error shape.
pub fn speaks_openai(path: &str) -> bool {
    matches!(
        path,
        "/v1/chat/completions" | "/v1/models" | "/v1/responses/compact"
    )
}

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

/// What is read back from a problem document.
#[derive(Deserialize)]
struct ProblemBack {
    #[serde(rename = "type")]
    problem_type: String,
    detail: String,
    #[serde(default)]
    errors: Vec<ItemBack>,
}

#[derive(Deserialize)]
struct ItemBack {
    pointer: String,
}

/// Problem documents are small; anything larger is not one of ours.
const MAX_PROBLEM_BYTES: usize = 64 * 1024;

pub async fn openai_errors(req: Request, next: Next) -> Response {
    if !speaks_openai(req.uri().path()) {
        return next.run(req).await;
    }
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
    let status = parts.status.as_u16();
    let error = OpenAiError {
        error: OpenAiErrorBody {
            message: problem.detail,
            kind: match status {
                401 => "authentication_error",
                500.. => "server_error",
                _ => "invalid_request_error",
            },
            param: problem
                .errors
                .first()
                .map(|e| e.pointer.trim_start_matches('/').replace('/', "."))
                .filter(|p| !p.is_empty()),
            code: match problem.problem_type.rsplit(':').next().unwrap_or("") {
                // Not a session on these routes: the request itself.
                "invalid-session" => "invalid_request".into(),
                slug => slug.replace('-', "_"),
            },
        },
    };
    let json = serde_json::to_vec(&error).unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(json))
}
