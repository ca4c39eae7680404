//! `POST /v1/prepare`.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::pipeline::{self, SessionInput};

use super::extract::SessionBody;
use super::problem::ApiError;
use super::{blocking, AppState};

pub async fn prepare(
    State(state): State<AppState>,
    body: SessionBody,
) -> Result<Response, ApiError> {
    let json = blocking(move || {
        let input = SessionInput::parse(&body.bytes, body.format, body.query)?;
        let answer = pipeline::prepare(&input, &state.prompts, state.config.settings(), None)?;
        serde_json::to_vec(&answer).map_err(|e| ApiError::Internal(e.to_string()))
    })
    .await?;
    Ok(([(CONTENT_TYPE, "application/json")], json).into_response())
}
