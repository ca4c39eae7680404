//! What stands in front of the handlers: bearer-token authentication, load shedding
//! (a bounded number of requests in progress, 503 beyond), and a per-request deadline.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use super::problem::ApiError;
use super::AppState;

/// Routes that stay open without a token (probes must work without credentials).
fn is_open(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

pub async fn authenticate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.config.api_keys.is_empty() || is_open(req.uri().path()) {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    match token {
        Some(t) if state.config.api_keys.accepts(t) => next.run(req).await,
        _ => {
            let mut res = ApiError::Unauthorized.into_response();
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            res
        }
    }
}

/// Sheds load instead of queueing without bound: at most `max_concurrency` API
/// requests run at once; the next one is answered 503 with `Retry-After` at once.
pub async fn limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if is_open(req.uri().path()) {
        return next.run(req).await;
    }
    let Ok(_permit) = Arc::clone(&state.limiter).try_acquire_owned() else {
        let mut res = ApiError::Overloaded.into_response();
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return res;
    };
    match tokio::time::timeout(state.config.request_timeout, next.run(req)).await {
        Ok(res) => res,
        // Dropping the handler future cancels its upstream calls.
        Err(_) => ApiError::RequestTimeout.into_response(),
    }
}

pub fn limiter(max_concurrency: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(max_concurrency))
}
