//! Liveness and readiness.

use axum::Json;
use serde_json::{json, Value};

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Alive")))]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Configuration and prompts are loaded (the state exists only once they are).
#[utoipa::path(get, path = "/readyz", tag = "operations", responses((status = 200, description = "Ready")))]
pub async fn readyz() -> Json<Value> {
    Json(json!({"status": "ready"}))
}
