//! How a summarizing request is answered, once it is planned: a plain JSON answer, an
//! event stream (`stream`), or a job (`jobs`). The one place that knows all three, so
//! `stream` and `jobs` do not import each other.

use std::sync::Arc;

use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::summarize::{ProgressSink, Silent};

use super::guard::Permit;
use super::jobs::Intent;
use super::stream::{events, Delivery, Work};
use super::AppState;

/// Answers with the work's result, as one JSON answer or as an event stream, or runs it
/// as a job (`Prefer: respond-async`, `Idempotency-Key`).
pub(super) async fn deliver(
    state: &AppState,
    intent: Intent,
    permit: Option<Permit>,
    work: impl FnOnce(Arc<dyn ProgressSink>) -> Work,
) -> Response {
    if intent.is_job() {
        return super::jobs::run(state, intent, permit, work).await;
    }
    match intent.delivery {
        Delivery::Plain => match work(Arc::new(Silent)).await {
            Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
            Err(e) => e.into_response(),
        },
        Delivery::Events => events(state, permit, work),
    }
}
