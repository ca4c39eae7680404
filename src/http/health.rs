//! Liveness and readiness.

use axum::Json;
use serde_json::{json, Value};

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Alive")))]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Configuration and prompts are loaded (the state exists only once they are), and the
/// shared state (Redis, when configured) answers within `COMPACTD_STATE_TIMEOUT_MS`.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "Ready"),
    (status = 503, description = "The shared state (Redis) is unreachable (`state-unavailable`)", body = super::problem::Problem, content_type = "application/problem+json"),
))]
pub async fn readyz(
    axum::extract::State(state): axum::extract::State<super::AppState>,
) -> Result<Json<Value>, super::ApiError> {
    state.shared.ready().await?;
    Ok(Json(
        json!({"status": "ready", "state": state.shared.kind()}),
    ))
}

/// The effective non-secret settings.
#[utoipa::path(get, path = "/v1/config", tag = "operations", responses((status = 200, description = "Effective settings; never secrets")))]
pub async fn config(
    axum::extract::State(state): axum::extract::State<super::AppState>,
) -> Json<Value> {
    let described = state.config.describe(state.summarizer.describe());
    Json(serde_json::to_value(described).expect("a description is plain data"))
}

/// Prometheus text exposition of the service's metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics() -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::telemetry::metrics().render(),
    )
}
