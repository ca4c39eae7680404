//! Liveness and readiness.

use axum::Json;
use serde_json::{json, Value};

/// The process is alive.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Configuration and prompts are loaded (the state exists only once they are).
pub async fn readyz() -> Json<Value> {
    Json(json!({"status": "ready"}))
}
