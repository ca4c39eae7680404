//! Every error as `application/problem+json` (RFC 9457).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::summarize::SummarizeError;
use compactd_core::session::InputError;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("unsupported content type")]
    UnsupportedMediaType(String),
    #[error("body too large")]
    BodyTooLarge { limit: usize },
    /// A `Content-Encoding` other than gzip, zstd and identity (what was sent).
    #[error("unsupported content encoding")]
    UnsupportedEncoding(String),
    /// A body whose HTTP framing is broken (a bad or overflowing chunk size, a connection
    /// closed early): what hyper said.
    #[error("unreadable body")]
    BadBody(String),
    /// A body that does not decode as its `Content-Encoding` says.
    #[error("body does not decode")]
    BadEncoding {
        encoding: &'static str,
        message: String,
    },
    #[error("invalid query parameter")]
    /// `parameter`: the query parameter at fault, when one alone is (the problem's
    /// pointer).
    InvalidParameter {
        message: String,
        parameter: Option<String>,
    },
    #[error("nothing to compact")]
    NothingToCompact(crate::pipeline::compact::NothingToCompact),
    #[error(transparent)]
    Summarize(#[from] crate::summarize::SummarizeError),
    #[error("unauthorized")]
    Unauthorized,
    #[error("overloaded")]
    Overloaded,
    /// The requests in progress hold what COMPACTD_MEMORY_BUDGET_BYTES allows.
    #[error("over the memory budget")]
    OverMemoryBudget,
    #[error("request deadline passed")]
    RequestTimeout,
    #[error("not found")]
    NotFound,
    /// No job with this id for this API key (or it expired).
    #[error("no such job")]
    JobNotFound,
    /// As many clients follow job events as COMPACTD_MAX_FOLLOWERS allows.
    #[error("too many followers")]
    TooManyFollowers,
    /// The job finished and was evicted to keep under COMPACTD_JOBS_MAX(_BYTES).
    #[error("job evicted")]
    JobEvicted,
    /// The job was cancelled (`DELETE /v1/jobs/{id}`): its `error` event.
    #[error("job cancelled")]
    JobCancelled,
    /// An `Idempotency-Key` that is not 1–255 visible ASCII characters.
    #[error("invalid idempotency key")]
    InvalidIdempotencyKey,
    /// An `Idempotency-Key` already used for another request.
    #[error("idempotency key reused")]
    IdempotencyKeyReused,
    /// The shared state (Redis) did not answer in time: jobs and idempotency keys
    /// cannot be used now (503 with `Retry-After`).
    #[error("shared state unavailable")]
    StateUnavailable,
    /// A job whose runner stopped renewing its lease (its `error` event, written by the
    /// state store: `state::redis::jobs::JOB_LOST`).
    #[error("job lost")]
    JobLost,
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

impl From<crate::pipeline::compact::PlanError> for ApiError {
    fn from(e: crate::pipeline::compact::PlanError) -> Self {
        use crate::pipeline::compact::PlanError;
        match e {
            PlanError::Input(e) => ApiError::Input(e),
            PlanError::NothingToCompact(n) => ApiError::NothingToCompact(n),
        }
    }
}

/// One row of the problem table: what an [`ApiError`] answers.
struct Row {
    status: StatusCode,
    /// `urn:compactd:problem:<slug>`.
    slug: &'static str,
    title: &'static str,
    detail: String,
}

fn row(
    status: StatusCode,
    slug: &'static str,
    title: &'static str,
    detail: impl Into<String>,
) -> Row {
    Row {
        status,
        slug,
        title,
        detail: detail.into(),
    }
}

impl ApiError {
    /// The problem table: status, slug, title and detail of every error, in one place.
    fn row(&self) -> Row {
        use StatusCode as S;
        match self {
            ApiError::Input(InputError::Malformed {
                message,
                line,
                column,
            }) => row(
                S::BAD_REQUEST,
                "malformed-json",
                "Malformed JSON",
                format!("line {line}, column {column}: {message}"),
            ),
            ApiError::Input(e @ InputError::Invalid(_)) => row(
                S::UNPROCESSABLE_ENTITY,
                "invalid-session",
                "Invalid session",
                e.to_string(),
            ),
            ApiError::Input(e @ InputError::TooManyEntries { .. }) => row(
                S::PAYLOAD_TOO_LARGE,
                "too-many-entries",
                "Too many entries",
                format!("{e} (COMPACTD_MAX_ENTRIES)"),
            ),
            ApiError::UnsupportedMediaType(got) => row(
                S::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Unsupported media type",
                format!(
                    "send `content-type: application/json` ({{\"entries\": [...]}}) or `application/x-ndjson` (a session file); got {got}"
                ),
            ),
            ApiError::BodyTooLarge { limit } => row(
                S::PAYLOAD_TOO_LARGE,
                "body-too-large",
                "Body too large",
                format!("the body exceeds the limit of {limit} bytes (COMPACTD_MAX_BODY_BYTES)"),
            ),
            ApiError::UnsupportedEncoding(got) => row(
                S::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-content-encoding",
                "Unsupported content encoding",
                format!(
                    "send the body plain or with `content-encoding: gzip` or `zstd` (one coding); got {got}"
                ),
            ),
            ApiError::BadBody(message) => row(
                S::BAD_REQUEST,
                "bad-body",
                "Unreadable body",
                format!(
                    "the body could not be read (its HTTP framing): {}",
                    clip(message)
                ),
            ),
            ApiError::BadEncoding { encoding, message } => row(
                S::BAD_REQUEST,
                "bad-content-encoding",
                "Body does not decode",
                format!(
                    "the body is not valid {encoding} data (content-encoding: {encoding}): {}",
                    clip(message)
                ),
            ),
            ApiError::InvalidParameter { message, .. } => row(
                S::BAD_REQUEST,
                "invalid-parameter",
                "Invalid query parameter",
                message.clone(),
            ),
            ApiError::NothingToCompact(n) => row(
                S::CONFLICT,
                "nothing-to-compact",
                "Nothing to compact",
                format!(
                    "{} (tokensBefore {})",
                    n.reason.reason(),
                    compactd_core::compaction::stringify::js_number_string(n.tokens_before)
                ),
            ),
            ApiError::Summarize(
                e @ (SummarizeError::Upstream(_)
                | SummarizeError::ContextOverflow(_)
                | SummarizeError::NotConfigured
                | SummarizeError::Unreachable(_)
                | SummarizeError::Failed(_)),
            ) => row(
                S::BAD_GATEWAY,
                "upstream-failed",
                "Upstream failed",
                e.to_string(),
            ),
            ApiError::Summarize(e @ SummarizeError::Timeout) => row(
                S::GATEWAY_TIMEOUT,
                "upstream-timeout",
                "Upstream timeout",
                e.to_string(),
            ),
            ApiError::Summarize(e @ SummarizeError::UnknownModel(_)) => row(
                S::UNPROCESSABLE_ENTITY,
                "unknown-model",
                "Unknown model",
                e.to_string(),
            ),
            ApiError::Summarize(e @ SummarizeError::NoMoa) => row(
                S::UNPROCESSABLE_ENTITY,
                "moa-not-configured",
                "Mixture-of-Agents not configured",
                e.to_string(),
            ),
            ApiError::Unauthorized => row(
                S::UNAUTHORIZED,
                "unauthorized",
                "Unauthorized",
                "send `Authorization: Bearer <key>` with one of the configured API keys",
            ),
            ApiError::Overloaded => row(
                S::SERVICE_UNAVAILABLE,
                "overloaded",
                "Overloaded",
                "the server is at its concurrency limit; retry after the Retry-After delay",
            ),
            ApiError::OverMemoryBudget => row(
                S::SERVICE_UNAVAILABLE,
                "over-memory-budget",
                "Over the memory budget",
                "the requests in progress hold what COMPACTD_MEMORY_BUDGET_BYTES allows; retry after the Retry-After delay",
            ),
            ApiError::RequestTimeout => row(
                S::GATEWAY_TIMEOUT,
                "request-timeout",
                "Request timeout",
                "the request did not finish within COMPACTD_REQUEST_TIMEOUT_SECS",
            ),
            ApiError::NotFound => row(S::NOT_FOUND, "not-found", "Not found", "no such route"),
            ApiError::JobNotFound => row(
                S::NOT_FOUND,
                "job-not-found",
                "Job not found",
                "no job with this id for this API key; finished jobs expire after COMPACTD_JOB_TTL_SECS",
            ),
            ApiError::TooManyFollowers => row(
                S::SERVICE_UNAVAILABLE,
                "too-many-followers",
                "Too many followers",
                "COMPACTD_MAX_FOLLOWERS clients already follow job events; retry after the Retry-After delay, or read GET /v1/jobs/{id}",
            ),
            ApiError::JobEvicted => row(
                S::GONE,
                "job-evicted",
                "Job evicted",
                "the job finished and its record was evicted to keep under COMPACTD_JOBS_MAX / COMPACTD_JOBS_MAX_BYTES; send the request again",
            ),
            ApiError::JobCancelled => row(
                S::CONFLICT,
                "job-cancelled",
                "Job cancelled",
                "the job was cancelled with DELETE /v1/jobs/{id}",
            ),
            ApiError::InvalidIdempotencyKey => row(
                S::BAD_REQUEST,
                "invalid-idempotency-key",
                "Invalid Idempotency-Key",
                "the Idempotency-Key header must be 1 to 255 visible ASCII characters (no spaces or control bytes), bare or in double quotes",
            ),
            ApiError::IdempotencyKeyReused => row(
                S::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                "this Idempotency-Key was used for a different request (path, query or body); use a new key",
            ),
            ApiError::StateUnavailable => row(
                S::SERVICE_UNAVAILABLE,
                "state-unavailable",
                "State unavailable",
                "the shared state (Redis) did not answer in time; retry after the Retry-After delay",
            ),
            ApiError::JobLost => row(
                S::SERVICE_UNAVAILABLE,
                "job-lost",
                "Job lost",
                "the replica running this job stopped before it finished (its lease expired); send the request again",
            ),
            ApiError::MethodNotAllowed => row(
                S::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                "this route does not take that method",
            ),
            ApiError::Internal(_) => row(
                S::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
                "an internal error occurred; it has been logged",
            ),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.row().status
    }

    pub fn problem(&self) -> Problem {
        let Row {
            status,
            slug,
            title,
            detail,
        } = self.row();
        let (line, column, errors) = match self {
            ApiError::Input(InputError::Malformed { line, column, .. }) => {
                (Some(*line), Some(*column), Vec::new())
            }
            ApiError::Input(InputError::Invalid(vs)) => (None, None, vs.iter().map(item).collect()),
            ApiError::Input(InputError::TooManyEntries { at, .. }) => (None, None, vec![item(at)]),
            ApiError::InvalidParameter {
                message,
                parameter: Some(p),
            } => (
                None,
                None,
                vec![ProblemItem {
                    pointer: p.clone(),
                    line: None,
                    message: message.clone(),
                }],
            ),
            _ => (None, None, Vec::new()),
        };
        Problem {
            problem_type: format!("urn:compactd:problem:{slug}"),
            title,
            status: status.as_u16(),
            detail,
            line,
            column,
            errors,
        }
    }
}

/// A reader's or decoder's own error text (hyper, flate2, zstd: fixed wording, never the
/// body's bytes), bounded all the same.
fn clip(message: &str) -> String {
    message.chars().take(200).collect()
}

fn item(v: &compactd_core::session::Violation) -> ProblemItem {
    ProblemItem {
        pointer: v.pointer.clone(),
        line: v.line,
        message: v.message.clone(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(msg) = &self {
            tracing::error!(error = %msg, "internal error");
        }
        let mut res = problem_response(self.status(), &self.problem());
        if let ApiError::StateUnavailable
        | ApiError::TooManyFollowers
        | ApiError::OverMemoryBudget = self
        {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        res
    }
}

impl From<crate::state::StateError> for ApiError {
    fn from(_: crate::state::StateError) -> Self {
        // Counted and logged (rate-limited) where it happened.
        ApiError::StateUnavailable
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The state store writes the `job-lost` document itself (it sits below this layer).
    #[test]
    fn the_stores_job_lost_document_is_this_one() {
        let ours = serde_json::to_value(ApiError::JobLost.problem()).unwrap();
        let theirs: serde_json::Value =
            serde_json::from_str(crate::state::redis::jobs::JOB_LOST).unwrap();
        assert_eq!(ours, theirs);
    }
}
