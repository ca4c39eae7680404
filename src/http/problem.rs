//! Every error as `application/problem+json` (RFC 9457).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::session::InputError;
use crate::summarize::SummarizeError;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("unsupported content type")]
    UnsupportedMediaType(String),
    #[error("body too large")]
    BodyTooLarge { limit: usize },
    #[error("invalid query parameter")]
    InvalidParameter { message: String },
    #[error("nothing to compact")]
    NothingToCompact(crate::pipeline::compact::NothingToCompact),
    #[error(transparent)]
    Summarize(#[from] crate::summarize::SummarizeError),
    #[error("unauthorized")]
    Unauthorized,
    #[error("overloaded")]
    Overloaded,
    #[error("request deadline passed")]
    RequestTimeout,
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    /// A bug: logged, answered without details.
    #[error("internal error: {0}")]
    Internal(String),
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// `urn:compactd:problem:<slug>`.
    #[serde(rename = "type")]
    pub problem_type: String,
    pub title: &'static str,
    pub status: u16,
    pub detail: String,
    /// 1-based line and column of a syntax error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ProblemItem>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProblemItem {
    /// JSON pointer into the body (for JSONL: into the line's object).
    pub pointer: String,
    /// The JSONL line (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub message: String,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Input(InputError::Malformed { .. }) => StatusCode::BAD_REQUEST,
            ApiError::Input(InputError::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Input(InputError::TooManyEntries { .. }) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::InvalidParameter { .. } => StatusCode::BAD_REQUEST,
            ApiError::NothingToCompact(_) => StatusCode::CONFLICT,
            ApiError::Summarize(SummarizeError::Upstream(_)) => StatusCode::BAD_GATEWAY,
            ApiError::Summarize(SummarizeError::Timeout) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Summarize(SummarizeError::UnknownModel(_)) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::RequestTimeout => StatusCode::GATEWAY_TIMEOUT,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn problem(&self) -> Problem {
        let (slug, title) = match self {
            ApiError::Input(InputError::Malformed { .. }) => ("malformed-json", "Malformed JSON"),
            ApiError::Input(InputError::Invalid(_)) => ("invalid-session", "Invalid session"),
            ApiError::Input(InputError::TooManyEntries { .. }) => {
                ("too-many-entries", "Too many entries")
            }
            ApiError::UnsupportedMediaType(_) => {
                ("unsupported-media-type", "Unsupported media type")
            }
            ApiError::BodyTooLarge { .. } => ("body-too-large", "Body too large"),
            ApiError::InvalidParameter { .. } => ("invalid-parameter", "Invalid query parameter"),
            ApiError::NothingToCompact(_) => ("nothing-to-compact", "Nothing to compact"),
            ApiError::Summarize(SummarizeError::Upstream(_)) => {
                ("upstream-failed", "Upstream failed")
            }
            ApiError::Summarize(SummarizeError::Timeout) => {
                ("upstream-timeout", "Upstream timeout")
            }
            ApiError::Summarize(SummarizeError::UnknownModel(_)) => {
                ("unknown-model", "Unknown model")
            }
            ApiError::Unauthorized => ("unauthorized", "Unauthorized"),
            ApiError::Overloaded => ("overloaded", "Overloaded"),
            ApiError::RequestTimeout => ("request-timeout", "Request timeout"),
            ApiError::NotFound => ("not-found", "Not found"),
            ApiError::MethodNotAllowed => ("method-not-allowed", "Method not allowed"),
            ApiError::Internal(_) => ("internal", "Internal error"),
        };
        let mut p = Problem {
            problem_type: format!("urn:compactd:problem:{slug}"),
            title,
            status: self.status().as_u16(),
            detail: String::new(),
            line: None,
            column: None,
            errors: Vec::new(),
        };
        match self {
            ApiError::Input(InputError::Malformed {
                message,
                line,
                column,
            }) => {
                p.detail = format!("line {line}, column {column}: {message}");
                p.line = Some(*line);
                p.column = Some(*column);
            }
            ApiError::Input(e @ InputError::Invalid(vs)) => {
                p.detail = e.to_string();
                p.errors = vs
                    .iter()
                    .map(|v| ProblemItem {
                        pointer: v.pointer.clone(),
                        line: v.line,
                        message: v.message.clone(),
                    })
                    .collect();
            }
            ApiError::Input(e @ InputError::TooManyEntries { at, .. }) => {
                p.detail = format!("{e} (COMPACTD_MAX_ENTRIES)");
                p.errors = vec![ProblemItem {
                    pointer: at.pointer.clone(),
                    line: at.line,
                    message: at.message.clone(),
                }];
            }
            ApiError::UnsupportedMediaType(got) => {
                p.detail = format!(
                    "send `content-type: application/json` ({{\"entries\": [...]}}) or `application/x-ndjson` (a session file); got {got}"
                );
            }
            ApiError::BodyTooLarge { limit } => {
                p.detail = format!(
                    "the body exceeds the limit of {limit} bytes (COMPACTD_MAX_BODY_BYTES)"
                );
            }
            ApiError::InvalidParameter { message } => p.detail = message.clone(),
            ApiError::NothingToCompact(n) => {
                p.detail = format!(
                    "{} (tokensBefore {})",
                    n.reason.reason(),
                    crate::compaction::stringify::js_number_string(n.tokens_before)
                );
            }
            ApiError::Summarize(e) => p.detail = e.to_string(),
            ApiError::Unauthorized => {
                p.detail =
                    "send `Authorization: Bearer <key>` with one of the configured API keys".into()
            }
            ApiError::Overloaded => {
                p.detail =
                    "the server is at its concurrency limit; retry after the Retry-After delay"
                        .into()
            }
            ApiError::RequestTimeout => {
                p.detail = "the request did not finish within COMPACTD_REQUEST_TIMEOUT_SECS".into()
            }
            ApiError::NotFound => p.detail = "no such route".into(),
            ApiError::MethodNotAllowed => p.detail = "this route does not take that method".into(),
            ApiError::Internal(_) => {
                p.detail = "an internal error occurred; it has been logged".into()
            }
        }
        p
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(msg) = &self {
            tracing::error!(error = %msg, "internal error");
        }
        problem_response(self.status(), &self.problem())
    }
}

pub fn problem_response(status: StatusCode, problem: &Problem) -> Response {
    let body = serde_json::to_vec(problem).unwrap_or_default();
    let mut res = (status, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    res
}
