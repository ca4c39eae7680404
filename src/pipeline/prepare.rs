//! `/v1/prepare` and `compactd prepare`: the cut and the summarizer requests, no model.
//!
//! The answer holds only the parts `include` asks for (`pipeline::include`), and each
//! part is computed only when asked for. The conversation text is built once and
//! shared ([`SharedText`]) by `conversation` and the `requests` whose prompts embed it:
//! a [`PreparedRequest`] is its prompt in parts (`<conversation>\n`, the shared text,
//! the tail). [`PrepareResponse::to_json`] (`prepare_json`) writes the answer in one
//! pass; `Serialize` writes the same bytes through serde (the CLI's pretty printing,
//! and the tests that hold the two to each other).

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::pipeline::core_schemas::FileListsSchema;
use crate::summarize::{PromptOptions, Prompts, RequestKind, SummaryRequest, CONVERSATION_OPEN};
use compactd_core::compaction::conversation_json::JsonText;
use compactd_core::compaction::file_ops::FileLists;
use compactd_core::compaction::prepare::{prepare_compaction, NotCompactable, Preparation};
use compactd_core::compaction::{AgentMessage, Settings, Wrappers};
use compactd_core::json::write::write_str_contents;
use compactd_core::session::entry::{value_of, value_of_str, RawJson};
use compactd_core::session::{Entry, EntryBody, InputError};

use super::include::{Include, IncludePart};
use super::input::SessionInput;
use super::numbers::JsNumber;
use super::options::PrepareOptions;

/// The answer of `/v1/prepare`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PrepareResponse<'a> {
    Compactable(Box<Compactable<'a>>),
    NotCompactable(NotCompactableResponse),
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Compactable<'a> {
    /// Always `true`.
    pub compactable: bool,
    pub first_kept_entry_id: String,
    /// Index of the first kept entry on the path.
    pub first_kept_entry_index: usize,
    /// Index of the first kept entry in the input (header = 0): what a v1 file's
    /// compaction `firstKeptEntryIndex` means.
    pub first_kept_entry_input_index: usize,
    pub is_split_turn: bool,
    pub turn_start_entry_id: Option<String>,
    pub turn_start_index: Option<usize>,
    pub tokens_before: JsNumber,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub should_compact: Option<bool>,
    /// The summary of the previous compaction, which the history summary updates
    /// (part `conversation`).
    #[serde(skip_serializing_if = "Skip::is_skipped")]
    #[schema(value_type = Option<String>, required = false)]
    pub previous_summary: Skip<Option<String>>,
    /// Ids of the entries from the start of the summarized region up to the cut
    /// (part `messages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<String>, required = false)]
    pub summarized_entry_ids: Option<Vec<String>>,
    /// The messages the history summary replaces (part `messages`; omitted with
    /// `messages=false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages_to_summarize: Option<Vec<MessageJson<'a>>>,
    /// The messages of a split turn's prefix (part `messages`; omitted with
    /// `messages=false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub turn_prefix_messages: Option<Vec<MessageJson<'a>>>,
    /// The file lists (part `files`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = FileListsSchema, required = false)]
    pub details: Option<FileLists>,
    /// The serialized conversation (part `conversation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Conversation, required = false)]
    pub conversation: Option<Conversation>,
    /// The summarizer calls, each a valid `/v1/summarize` body (part `requests`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<crate::summarize::SummaryRequest>, required = false)]
    pub requests: Option<Vec<PreparedRequest>>,
    pub settings: SettingsJson,
}

/// A field that may be left out of the answer, and may be `null` when present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip<T> {
    Kept(T),
    Skipped,
}

impl<T> Skip<T> {
    pub fn is_skipped(&self) -> bool {
        matches!(self, Skip::Skipped)
    }

    pub fn kept(&self) -> Option<&T> {
        match self {
            Skip::Kept(v) => Some(v),
            Skip::Skipped => None,
        }
    }
}

impl<T: Serialize> Serialize for Skip<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Skip::Kept(v) => v.serialize(s),
            Skip::Skipped => s.serialize_unit(),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotCompactableResponse {
    /// Always `false`.
    pub compactable: bool,
    /// Why, in words.
    pub reason: &'static str,
    /// `empty`, `already-compacted` or `nothing-to-summarize`.
    pub reason_code: &'static str,
    pub tokens_before: JsNumber,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub should_compact: Option<bool>,
    pub settings: SettingsJson,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    #[schema(value_type = String)]
    pub history: SharedText,
    #[schema(value_type = Option<String>)]
    pub turn_prefix: Option<SharedText>,
}

/// A serialized conversation, held once by the answer and shared by the parts that
/// show it: the contents of its JSON string as the answer writes them (escaped), the
/// text itself decoded from them only when asked for (`as_str`: the CLI's pretty
/// printing, `Serialize`, the tests).
#[derive(Debug, Clone)]
pub struct SharedText(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    json: Vec<u8>,
    text: OnceLock<String>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        super::conversation::give_back(std::mem::take(&mut self.json));
    }
}

impl SharedText {
    /// The contents (no quotes) of a JSON string, escaped as `json::write` escapes.
    pub fn from_json(json: JsonText) -> Self {
        SharedText(Arc::new(Shared {
            json: json.0,
            text: OnceLock::new(),
        }))
    }

    pub fn from_text(text: String) -> Self {
        let mut json = Vec::with_capacity(text.len());
        write_str_contents(&mut json, &text);
        SharedText(Arc::new(Shared {
            json,
            text: OnceLock::from(text),
        }))
    }

    /// The escaped contents of the JSON string.
    pub fn json(&self) -> &[u8] {
        &self.0.json
    }

    pub fn as_str(&self) -> &str {
        self.0.text.get_or_init(|| {
            let mut quoted = Vec::with_capacity(self.0.json.len() + 2);
            quoted.push(b'"');
            quoted.extend_from_slice(&self.0.json);
            quoted.push(b'"');
            // The escaper's own output always reads back; lossy only defensively.
            serde_json::from_slice(&quoted)
                .unwrap_or_else(|_| String::from_utf8_lossy(&self.0.json).into_owned())
        })
    }

    /// The same shared text (not merely equal).
    pub fn same(&self, other: &SharedText) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

impl Eq for SharedText {}

impl Serialize for SharedText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A summarizer call with its prompt in parts: `<conversation>\n`, the conversation
/// text (shared with the answer's `conversation`), then `tail`. Serializes as a
/// `SummaryRequest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedRequest {
    pub kind: RequestKind,
    pub system_prompt: String,
    pub conversation: SharedText,
    pub tail: String,
    pub max_tokens: u64,
}

impl PreparedRequest {
    /// The whole prompt, as one string.
    pub fn prompt(&self) -> String {
        PromptParts(self).to_string()
    }

    /// The request as `/v1/compact` would make it.
    pub fn to_request(&self) -> SummaryRequest {
        SummaryRequest {
            kind: self.kind,
            system_prompt: self.system_prompt.clone(),
            prompt: self.prompt(),
            max_tokens: self.max_tokens,
            strategy: None,
            model: None,
            ledger: None,
        }
    }
}

/// The prompt of a [`PreparedRequest`], written piece by piece.
struct PromptParts<'r>(&'r PreparedRequest);

impl fmt::Display for PromptParts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(CONVERSATION_OPEN)?;
        f.write_str(self.0.conversation.as_str())?;
        f.write_str(&self.0.tail)
    }
}

impl Serialize for PromptParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for PreparedRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = s.serialize_struct("SummaryRequest", 4)?;
        r.serialize_field("kind", &self.kind)?;
        r.serialize_field("systemPrompt", &self.system_prompt)?;
        r.serialize_field("prompt", &PromptParts(self))?;
        r.serialize_field("maxTokens", &self.max_tokens)?;
        r.end()
    }
}

#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsJson {
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
}

impl From<Settings> for SettingsJson {
    fn from(s: Settings) -> Self {
        SettingsJson {
            keep_recent_tokens: s.keep_recent_tokens,
            reserve_tokens: s.reserve_tokens,
        }
    }
}

/// An AgentMessage as JSON: the stored text when the message is stored verbatim.
#[derive(Debug)]
pub enum MessageJson<'a> {
    Raw(RawJson<'a>),
    Built(Value),
}

impl Serialize for MessageJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // Text the parser accepted: serde_json reads it back (serde has no other way
            // to write text verbatim); the one-pass writer copies it.
            MessageJson::Raw(r) => match serde_json::from_str::<&RawValue>(r.get()) {
                Ok(raw) => raw.serialize(s),
                Err(_) => value_of_str(r.get()).serialize(s),
            },
            MessageJson::Built(v) => v.serialize(s),
        }
    }
}

pub fn reason_code(n: NotCompactable) -> &'static str {
    match n {
        NotCompactable::Empty => "empty",
        NotCompactable::AlreadyCompacted => "already-compacted",
        NotCompactable::NothingToSummarize => "nothing-to-summarize",
    }
}

impl PrepareOptions {
    /// The parts of the answer: `include` (all when absent), less the messages with
    /// `includeMessages=false` (which keeps its meaning: only the two message arrays
    /// go).
    pub fn parts(&self) -> Include {
        self.include.unwrap_or(Include::ALL)
    }
}

/// Runs preparation and builds the answer of `/v1/prepare` (and of `/v1/compact` with
/// `dryRun`).
pub fn prepare_response<'a, O: AsRef<PrepareOptions>>(
    input: &'a SessionInput<'a, O>,
    prompts: &Prompts,
    defaults: Settings,
    default_context_window: Option<u64>,
) -> Result<PrepareResponse<'a>, InputError> {
    let options = input.options.as_ref();
    let session = &input.session;
    let positions = input.path(options.leaf_id.as_deref())?;
    let path: Vec<&Entry> = positions.iter().map(|&i| &session.entries[i]).collect();
    let settings = options.settings(defaults);
    let context_window = options.context_window.or(default_context_window);
    let should =
        |tokens: f64| context_window.map(|w| tokens > w as f64 - settings.reserve_tokens as f64);

    let prep = match prepare_compaction(&path, settings) {
        Ok(p) => p,
        Err((why, tokens)) => {
            return Ok(PrepareResponse::NotCompactable(NotCompactableResponse {
                compactable: false,
                reason: why.reason(),
                reason_code: reason_code(why),
                tokens_before: JsNumber(tokens),
                should_compact: should(tokens),
                settings: settings.into(),
            }))
        }
    };
    let include = options.parts();
    let text_wanted = include.has(IncludePart::Conversation) || include.has(IncludePart::Requests);
    let plan = text_wanted.then(|| plan_requests(&prep, prompts, &prompt_options(options)));
    let include_messages =
        include.has(IncludePart::Messages) && options.include_messages != Some(false);
    let first_kept = prep.first_kept();
    let turn_start = prep.cut.turn_start.filter(|_| prep.cut.is_split_turn);
    let messages = |range: std::ops::Range<usize>| {
        include_messages.then(|| {
            path[range]
                .iter()
                .filter_map(|e| {
                    compactd_core::compaction::message::for_compaction(e)
                        .map(|m| message_json(m, e))
                })
                .collect()
        })
    };
    // Borrow the path entries from the session so the answer outlives `path`.
    let messages_to_summarize = messages(prep.history.clone());
    let turn_prefix_messages = messages(prep.turn_prefix.clone());
    let (conversation, requests) = match plan {
        Some(plan) => (
            include
                .has(IncludePart::Conversation)
                .then(|| Conversation {
                    history: plan.history_text.clone(),
                    turn_prefix: plan.turn_prefix_text.clone(),
                }),
            include.has(IncludePart::Requests).then_some(plan.requests),
        ),
        None => (None, None),
    };
    Ok(PrepareResponse::Compactable(Box::new(Compactable {
        compactable: true,
        first_kept_entry_id: first_kept.id().unwrap_or_default().to_string(),
        first_kept_entry_index: prep.cut.first_kept,
        first_kept_entry_input_index: first_kept.index,
        is_split_turn: prep.cut.is_split_turn,
        turn_start_entry_id: turn_start.and_then(|t| path[t].id()).map(str::to_string),
        turn_start_index: turn_start,
        tokens_before: JsNumber(prep.tokens_before),
        should_compact: should(prep.tokens_before),
        previous_summary: match include.has(IncludePart::Conversation) {
            true => Skip::Kept(prep.previous_summary.map(|s| s.decode().into_owned())),
            false => Skip::Skipped,
        },
        summarized_entry_ids: include.has(IncludePart::Messages).then(|| {
            path[prep.boundary_start..prep.cut.first_kept.max(prep.boundary_start)]
                .iter()
                .filter_map(|e| e.id().map(str::to_string))
                .collect()
        }),
        messages_to_summarize,
        turn_prefix_messages,
        details: include
            .has(IncludePart::Files)
            .then(|| prep.file_ops.lists()),
        conversation,
        requests,
        settings: settings.into(),
    })))
}

pub fn prompt_options(options: &PrepareOptions) -> PromptOptions<'_> {
    PromptOptions {
        custom_instructions: options.custom_instructions.as_deref(),
        prompt_override: options.prompt_override.as_deref(),
        additional_context: &options.additional_context,
        // A client that calls its own model reads no trailer: no numbered statements.
        standing: None,
    }
}

/// The serialized conversation and the summarizer calls a compaction makes.
pub struct RequestPlan {
    pub history_text: SharedText,
    pub turn_prefix_text: Option<SharedText>,
    /// The history is summarized by a model (false: split turn with no history, where
    /// the history summary is the literal `No prior history.`).
    pub has_history_request: bool,
    pub requests: Vec<PreparedRequest>,
}

/// ALGORITHM.md §8: one history summary, or history and turn prefix concurrently.
/// Each conversation text is serialized once; the requests share it.
pub fn plan_requests(prep: &Preparation, prompts: &Prompts, opts: &PromptOptions) -> RequestPlan {
    let w = &prompts.wrappers;
    let history_text = conversation_text(&prep.path[prep.history.clone()], w);
    let previous = prep.previous_summary.map(|s| s.decode());
    let reserve = prep.settings.reserve_tokens;
    let split_with_prefix = prep.cut.is_split_turn && prep.turn_prefix_messages().next().is_some();
    let history_request = || {
        // Prompts::history_request, in parts.
        PreparedRequest {
            kind: RequestKind::History,
            system_prompt: prompts.system.clone(),
            conversation: history_text.clone(),
            tail: prompts.history_prompt_tail(previous.as_deref(), opts),
            max_tokens: crate::summarize::templates::four_fifths(reserve),
        }
    };
    let mut requests = Vec::with_capacity(2);
    let mut turn_prefix_text = None;
    let mut has_history_request = true;
    if split_with_prefix {
        has_history_request = prep.history_messages().next().is_some();
        if has_history_request {
            requests.push(history_request());
        }
        let prefix = conversation_text(&prep.path[prep.turn_prefix.clone()], w);
        // Prompts::turn_prefix_request, in parts.
        requests.push(PreparedRequest {
            kind: RequestKind::TurnPrefix,
            system_prompt: prompts.system.clone(),
            conversation: prefix.clone(),
            tail: prompts.turn_prefix_prompt_tail(),
            max_tokens: reserve / 2,
        });
        turn_prefix_text = Some(prefix);
    } else {
        if prep.cut.is_split_turn {
            turn_prefix_text = Some(SharedText::from_json(JsonText::default()));
        }
        requests.push(history_request());
    }
    RequestPlan {
        history_text,
        turn_prefix_text,
        has_history_request,
        requests,
    }
}

/// The serialized conversation of `entries` (their messages for compaction), written
/// straight as the answer's escaped JSON (`conversation_json`).
fn conversation_text(entries: &[&Entry], w: &Wrappers) -> SharedText {
    SharedText::from_json(super::conversation::write(entries, w))
}

/// The JSON of an AgentMessage as pi would hold it after migration.
pub fn message_json<'a>(msg: AgentMessage<'_, 'a>, entry: &Entry<'a>) -> MessageJson<'a> {
    match msg {
        AgentMessage::Stored(m) if !m.migrated_role => match entry.message_text() {
            Some(raw) => MessageJson::Raw(raw),
            None => MessageJson::Built(Value::Null),
        },
        AgentMessage::Stored(_) => {
            let mut v = entry
                .message_text()
                .map_or(Value::Null, |r| value_of_str(r.get()));
            if let Value::Object(o) = &mut v {
                o.insert("role".into(), Value::String("custom".into()));
            }
            MessageJson::Built(v)
        }
        _ => {
            let Value::Object(fields) = value_of_str(entry.raw) else {
                return MessageJson::Built(Value::Null);
            };
            MessageJson::Built(created_message(entry, fields))
        }
    }
}

/// pi's `createCustomMessage` / `createBranchSummaryMessage` /
/// `createCompactionSummaryMessage`, with `undefined` fields left out as
/// `JSON.stringify` does.
fn created_message(entry: &Entry, mut fields: Map<String, Value>) -> Value {
    let mut out = Map::new();
    let mut take = |out: &mut Map<String, Value>, key: &str| {
        if let Some(v) = fields.swap_remove(key) {
            out.insert(key.to_string(), v);
        }
    };
    match &entry.body {
        EntryBody::CustomMessage { .. } => {
            out.insert("role".into(), "custom".into());
            take(&mut out, "customType");
            take(&mut out, "content");
            take(&mut out, "display");
            take(&mut out, "details");
        }
        EntryBody::BranchSummary { .. } => {
            out.insert("role".into(), "branchSummary".into());
            take(&mut out, "summary");
            take(&mut out, "fromId");
        }
        EntryBody::Compaction(_) => {
            out.insert("role".into(), "compactionSummary".into());
            take(&mut out, "summary");
            take(&mut out, "tokensBefore");
        }
        _ => {}
    }
    out.insert("timestamp".into(), timestamp_ms(entry.timestamp));
    Value::Object(out)
}

/// `new Date(timestamp).getTime()` for ISO-8601 strings and numbers; null when invalid.
fn timestamp_ms(raw: Option<RawJson>) -> Value {
    let Some(raw) = raw else { return Value::Null };
    match value_of(raw) {
        Value::Number(n) => Value::Number(n),
        Value::String(s) => {
            use time::format_description::well_known::Rfc3339;
            match time::OffsetDateTime::parse(&s, &Rfc3339) {
                Ok(t) => Value::from((t.unix_timestamp_nanos() / 1_000_000) as i64),
                Err(_) => Value::Null,
            }
        }
        _ => Value::Null,
    }
}
