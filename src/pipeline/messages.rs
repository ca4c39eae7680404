//! `POST /v1/messages` with `compaction`: Anthropic's Messages API asked to compact. The
//! conversation in Messages format becomes a pi session (`convert`) that compactd's own
//! compaction plans and runs, so the summary gets the configured summarizer, retries,
//! fallback, secret scrub and checked retention like `/v1/compact`.
//!
//! Anthropic's `compaction` block stands for everything before it: the next request drops
//! the messages it replaces. So the whole conversation is summarized, the newest user
//! request included. pi's cut always keeps the newest message verbatim; the session
//! therefore ends in an empty user message after the conversation, the cut is made there
//! (`keepRecentTokens` 0), and that message, which holds nothing, is the only one kept.
//!
//! A `compaction` block fed back is the previous summary: it becomes pi's `compaction`
//! entry, whose kept region starts after it, so the update prompt merges it with what
//! followed (what came before the newest such block is already in it).

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::summarize::templates::four_fifths;
use crate::summarize::Prompts;
use compactd_core::compaction::NotCompactable;
use compactd_core::session::{InputError, Violation};

use super::compact::{
    plan_compaction, system_prompt_context, CompactPlan, NothingToCompact, PlanError,
};
use super::input::{BodyFormat, SessionInput};
use super::options::CompactOptions;
use crate::config::Config;

mod convert;
#[cfg(test)]
mod tests;

pub use convert::session_entries;

/// A Messages API request; only the fields compactd honours are read (docs/api.md,
/// "Anthropic compaction"); every other field is accepted and ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct MessagesRequest {
    /// A configured model candidate (by name, model id or `name/model`); an unknown name
    /// means the default candidates.
    pub model: Option<String>,
    /// An upper bound on the summary's output budget, which is at most four fifths of
    /// COMPACTD_RESERVE_TOKENS (clients send their agent model's budget here).
    pub max_tokens: Option<u64>,
    /// A string or text blocks: shown to the summarizer as context, not summarized (the
    /// client sends it again with every request).
    #[schema(value_type = Option<Object>)]
    pub system: Option<Value>,
    /// The conversation: `user` and `assistant` messages, content a string or blocks.
    pub messages: Vec<InputMessage>,
    /// Required: `{"type": "summarize", "instructions"?}`.
    pub compaction: Option<CompactionConfig>,
    /// `true`: the answer as Anthropic's stream events, sent once the summary is complete.
    pub stream: Option<bool>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct InputMessage {
    pub role: MessageRole,
    /// A string, or content blocks (text, image, document, tool_use, tool_result,
    /// thinking, server tool blocks, compaction, …).
    #[schema(value_type = Object)]
    pub content: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    User,
    Assistant,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct CompactionConfig {
    /// `summarize`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Replaces compactd's summarization instructions for this request (blank: absent).
    pub instructions: Option<String>,
}

fn invalid(pointer: &str, message: impl Into<String>) -> InputError {
    InputError::invalid(Violation {
        pointer: pointer.into(),
        message: message.into(),
        line: None,
    })
}

/// The body `/v1/compact` would take for `req`: the session and the options that make it
/// summarize everything (see the module documentation). `reserve_tokens` is the configured
/// reserve, whose four fifths is the summary's budget unless `max_tokens` is lower.
pub fn compact_body(req: &MessagesRequest, reserve_tokens: u64) -> Result<Vec<u8>, InputError> {
    let compaction = req
        .compaction
        .as_ref()
        .ok_or_else(|| invalid("/compaction", "`compaction` is required"))?;
    if compaction.kind != "summarize" {
        return Err(invalid(
            "/compaction/type",
            format!(
                "the only compaction type is `summarize`, not {:?}",
                compactd_core::session::truncate_for_message(&compaction.kind)
            ),
        ));
    }
    if req.messages.is_empty() {
        return Err(invalid(
            "/messages",
            "`messages` is empty: nothing to compact",
        ));
    }
    let mut body = Map::new();
    body.insert(
        "entries".into(),
        Value::Array(session_entries(&req.messages)),
    );
    body.insert("keepRecentTokens".into(), json!(0));
    if let Some(m) = req.max_tokens {
        if m == 0 {
            return Err(invalid("/max_tokens", "max_tokens must be at least 1"));
        }
        // Anthropic's `max_tokens` is a ceiling, and clients send their agent model's
        // (64000 and more), which a summarizer's window may not hold.
        if m < four_fifths(reserve_tokens) {
            body.insert("reserveTokens".into(), json!(reserve_for(m)));
        }
    }
    if let Some(model) = &req.model {
        body.insert("model".into(), json!(model));
    }
    if let Some(i) = compaction
        .instructions
        .as_deref()
        .filter(|i| !i.trim().is_empty())
    {
        body.insert("promptOverride".into(), json!(i));
    }
    if let Some(system) = req
        .system
        .as_ref()
        .map(system_text)
        .filter(|s| !s.is_empty())
    {
        body.insert(
            "additionalContext".into(),
            json!([system_prompt_context(&system)]),
        );
    }
    Ok(serde_json::to_vec(&Value::Object(body)).expect("a JSON value serializes"))
}

/// The smallest reserve whose four fifths (the summary's budget) is `max_tokens`.
fn reserve_for(max_tokens: u64) -> u64 {
    max_tokens
        .checked_mul(5)
        .map_or(u64::MAX, |r| r.div_ceil(4))
}

/// `system` as text: a string, or its text blocks joined (other blocks as JSON).
fn system_text(system: &Value) -> String {
    match system {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Plans the compaction of a body [`compact_body`] wrote.
pub fn plan(body: &[u8], prompts: &Prompts, config: &Config) -> Result<CompactPlan, PlanError> {
    // COMPACTD_MAX_ENTRIES counts the conversation's entries: not the header and the empty
    // message compactd adds.
    let input = SessionInput::<CompactOptions>::parse_limited(
        body,
        BodyFormat::Json,
        CompactOptions::default(),
        config.max_entries.saturating_add(2),
    )?;
    let plan = plan_compaction(&input, prompts, config.settings(), config.checking())?;
    // Messages without text (an empty string, no blocks) would ask for a summary of
    // nothing, and Anthropic's block may not be empty.
    if plan.history_parts.is_empty() && plan.turn_prefix.is_none() {
        return Err(PlanError::NothingToCompact(NothingToCompact {
            reason: NotCompactable::NothingToSummarize,
            tokens_before: plan.tokens_before,
        }));
    }
    Ok(plan)
}
