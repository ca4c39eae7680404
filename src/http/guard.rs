//! What stands in front of the handlers (besides authentication, in `auth`): load shedding
//! (a bounded number of requests in progress, 503 beyond), and a per-request deadline.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::budget::Held;
use super::problem::ApiError;
use super::AppState;
use crate::telemetry::metric;

/// Routes that stay open without a token (probes must work without credentials).
pub(super) fn is_open(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz")
}

/// A request's place under the concurrency limit, shared with the handler (request
/// extension): work that outlives the handler's answer (an event stream) keeps a clone,
/// so the place is freed only when the work ends.
#[derive(Clone)]
pub struct Permit(
    #[allow(dead_code)] pub Arc<OwnedSemaphorePermit>,
    /// Its share of the memory budget, reserved as the body is read (`budget`).
    pub Held,
);

/// Sheds load instead of queueing without bound: at most `max_concurrency` API
/// requests run at once; the next one is answered 503 with `Retry-After` at once.
pub async fn limit(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Reading or cancelling a job is cheap and must work while jobs fill the limit.
    if is_open(req.uri().path()) || req.uri().path().starts_with("/v1/jobs/") {
        return next.run(req).await;
    }
    let Ok(permit) = Arc::clone(&state.limiter).try_acquire_owned() else {
        let mut res = ApiError::Overloaded.into_response();
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return res;
    };
    req.extensions_mut()
        .insert(Permit(Arc::new(permit), Held::default()));
    match tokio::time::timeout(state.config.request_timeout, next.run(req)).await {
        Ok(res) => res,
        // Dropping the handler future cancels its upstream calls.
        Err(_) => ApiError::RequestTimeout.into_response(),
    }
}

/// A client's `x-request-id` is kept only when it is a plausible id (1–128 characters of
/// `A-Z a-z 0-9 - _ . : /`); otherwise it is dropped and one is generated. It is logged
/// and echoed, so it must not carry arbitrary text.
pub async fn request_id_policy(mut req: Request) -> Request {
    let valid = |v: &HeaderValue| {
        let b = v.as_bytes();
        (1..=128).contains(&b.len())
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"-_.:/".contains(c))
    };
    if req.headers().get("x-request-id").is_some_and(|v| !valid(v)) {
        req.headers_mut().remove("x-request-id");
    }
    req
}

/// Request metrics (count by route and status, latency, in-flight) and one log line
/// per request. Routes are the matched templates, so the label set stays bounded.
pub async fn observe(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let method = req.method().clone();
    let started = std::time::Instant::now();
    let in_flight = metrics::gauge!(metric::REQUESTS_IN_FLIGHT.name);
    in_flight.increment(1.0);
    let res = next.run(req).await;
    in_flight.decrement(1.0);
    let status = res.status().as_u16();
    let elapsed = started.elapsed();
    // One line per request: never bodies, headers or secrets.
    tracing::info!(
        request_id = %request_id,
        method = %method,
        route = %route,
        status,
        latency_ms = elapsed.as_secs_f64() * 1e3,
        "request"
    );
    metrics::counter!(metric::REQUESTS.name, "route" => route.clone(), "status" => status.to_string())
        .increment(1);
    metrics::histogram!(metric::REQUEST_DURATION.name, "route" => route)
        .record(elapsed.as_secs_f64());
    res
}

pub fn limiter(max_concurrency: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(max_concurrency))
}
