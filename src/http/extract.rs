//! The session-input extractor: content type, body limit, query options.

use axum::body::Bytes;
use axum::extract::{FromRequest, Query, Request};
use axum::http::header::CONTENT_TYPE;
use serde::Deserialize;

use crate::pipeline::{BodyFormat, SessionInput, SessionOptions};
use crate::session::InputError;

use super::problem::ApiError;
use super::AppState;

/// A session body, not yet parsed (parsing happens off the async runtime).
pub struct SessionBody {
    pub bytes: Bytes,
    pub format: BodyFormat,
    /// Options from the query string (used with JSONL bodies).
    pub query: SessionOptions,
    max_entries: usize,
}

impl SessionBody {
    /// The session and its options (`COMPACTD_MAX_ENTRIES` applied).
    pub fn parse(&self) -> Result<SessionInput<'_>, InputError> {
        SessionInput::parse_limited(
            &self.bytes,
            self.format,
            self.query.clone(),
            self.max_entries,
        )
    }
}

/// Options a JSONL body takes in the query string.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct QueryOptions {
    leaf_id: Option<String>,
    keep_recent_tokens: Option<u64>,
    reserve_tokens: Option<u64>,
    context_window: Option<u64>,
    messages: Option<bool>,
    include_messages: Option<bool>,
    custom_instructions: Option<String>,
    prompt_override: Option<String>,
    short_summary: Option<bool>,
    model: Option<String>,
    reason: Option<crate::pipeline::input::CompactReason>,
    dry_run: Option<bool>,
    old_leaf_id: Option<String>,
    target_id: Option<String>,
    replace_instructions: Option<bool>,
    protect_tokens: Option<u64>,
    minimum_savings: Option<u64>,
    /// Comma-separated tool names (empty: none protected).
    protected_tools: Option<String>,
}

pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, ApiError> {
    let raw = content_type.unwrap_or("");
    let mime = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/json" => Ok(BodyFormat::Json),
        "application/x-ndjson"
        | "application/jsonl"
        | "application/json-lines"
        | "application/x-jsonlines" => Ok(BodyFormat::Jsonl),
        m if m.starts_with("application/") && m.ends_with("+json") => Ok(BodyFormat::Json),
        "" => Err(ApiError::UnsupportedMediaType("no content-type".into())),
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "`{}`",
            crate::session::truncate_for_message(&mime)
        ))),
    }
}

impl FromRequest<AppState> for SessionBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let format = body_format(
            req.headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        )?;
        let query = match Query::<QueryOptions>::try_from_uri(req.uri()) {
            Ok(Query(q)) => SessionOptions {
                leaf_id: q.leaf_id,
                keep_recent_tokens: q.keep_recent_tokens,
                reserve_tokens: q.reserve_tokens,
                context_window: q.context_window,
                include_messages: q.messages.or(q.include_messages),
                custom_instructions: q.custom_instructions,
                prompt_override: q.prompt_override,
                additional_context: Vec::new(),
                short_summary: q.short_summary,
                preserve_data: None,
                model: q.model,
                reason: q.reason,
                dry_run: q.dry_run,
                old_leaf_id: q.old_leaf_id,
                target_id: q.target_id,
                replace_instructions: q.replace_instructions,
                protect_tokens: q.protect_tokens,
                minimum_savings: q.minimum_savings,
                protected_tools: q.protected_tools.map(|t| {
                    t.split(',')
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .map(String::from)
                        .collect()
                }),
            },
            Err(e) => {
                return Err(ApiError::InvalidParameter {
                    message: e.body_text(),
                })
            }
        };
        let limit = state.config.max_body_bytes;
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::BodyTooLarge { limit }
            } else {
                ApiError::InvalidParameter {
                    message: format!("could not read the body: {}", e.body_text()),
                }
            }
        })?;
        Ok(SessionBody {
            bytes,
            format,
            query,
            max_entries: state.config.max_entries,
        })
    }
}
