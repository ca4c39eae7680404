//! The error shapes of the provider-style routes.
//!
//! Every error inside the service is a problem document (`problem.rs`), whoever raised it:
//! the authentication and load-shedding middleware, the body limit, the handler, the panic
//! guard. Clients of the provider-style routes read their provider's shape instead:
//! OpenAI's `{"error": {"message", "type", "param", "code"}}` on `/v1/chat/completions`,
//! `/v1/models` and `/v1/responses/compact`, Anthropic's `{"type": "error", "error":
//! {"type", "message"}, "request_id"}` on `/v1/messages`. This outermost middleware
//! rewrites the problem documents answered on those routes (by the request path) and
//! leaves every other route alone. Rewriting at one place, rather than in each source of
//! errors, keeps the problem table the only list of errors and keeps the statuses and
//! headers (`WWW-Authenticate`, `Retry-After`) identical on every route.

mod anthropic;
mod openai;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

pub use anthropic::{AnthropicError, AnthropicErrorBody};
pub use openai::{OpenAiError, OpenAiErrorBody};

/// Whose error shape a route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Anthropic,
}

/// The dialect of the route at `path` (`None`: problem documents).
pub fn dialect_of(path: &str) -> Option<Dialect> {
    match path {
        "/v1/chat/completions" | "/v1/models" | "/v1/responses/compact" => Some(Dialect::OpenAi),
        "/v1/messages" => Some(Dialect::Anthropic),
        _ => None,
    }
}

/// Anthropic's error document for `e`: the `data` of an `error` event once a stream has
/// begun and a status can no longer say it.
pub fn anthropic_document(e: &super::problem::ApiError) -> AnthropicError {
    let problem = serde_json::to_vec(&e.problem())
        .ok()
        .and_then(|json| serde_json::from_slice::<ProblemBack>(&json).ok())
        .unwrap_or(ProblemBack {
            problem_type: String::new(),
            detail: "the summary failed".into(),
            errors: Vec::new(),
        });
    anthropic::document(e.status(), problem, None)
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
    message: Option<String>,
}

impl ItemBack {
    /// The pointer as a dotted path (`messages.0.content`), or `None` for the whole body.
    fn field(&self) -> Option<String> {
        Some(self.pointer.trim_start_matches('/').replace('/', ".")).filter(|p| !p.is_empty())
    }
}

/// Problem documents are small; anything larger is not one of ours.
const MAX_PROBLEM_BYTES: usize = 64 * 1024;

pub async fn vendor_errors(req: Request, next: Next) -> Response {
    let Some(dialect) = dialect_of(req.uri().path()) else {
        return next.run(req).await;
    };
    let request_id = request_id(req.headers());
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
    let json = match dialect {
        Dialect::OpenAi => serde_json::to_vec(&openai::document(parts.status, problem)),
        Dialect::Anthropic => {
            let request_id = request_id.or_else(|| self::request_id(&parts.headers));
            serde_json::to_vec(&anthropic::document(parts.status, problem, request_id))
        }
    }
    .unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(json))
}

fn request_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
