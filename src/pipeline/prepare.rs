//! `/v1/prepare` and `compactd prepare`: the cut and the summarizer requests, no model.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::compaction::file_ops::FileLists;
use crate::compaction::prepare::{prepare_compaction, NotCompactable, Preparation};
use crate::compaction::{serialize_conversation, AgentMessage, Settings};
use crate::session::entry::{value_of, value_of_str, RawJson};
use crate::session::{Entry, EntryBody, InputError};
use crate::summarize::{PromptOptions, Prompts, SummaryRequest};

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
    pub previous_summary: Option<String>,
    /// Ids of the entries from the start of the summarized region up to the cut.
    pub summarized_entry_ids: Vec<String>,
    /// The messages the history summary replaces (omitted with `messages=false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages_to_summarize: Option<Vec<MessageJson<'a>>>,
    /// The messages of a split turn's prefix (omitted with `messages=false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub turn_prefix_messages: Option<Vec<MessageJson<'a>>>,
    pub details: FileLists,
    pub conversation: Conversation,
    pub requests: Vec<SummaryRequest>,
    pub settings: SettingsJson,
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
    pub history: String,
    pub turn_prefix: Option<String>,
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
    Raw(&'a RawValue),
    Built(Value),
}

impl Serialize for MessageJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MessageJson::Raw(r) => r.serialize(s),
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
    let plan = plan_requests(&prep, prompts, &prompt_options(options));
    let include_messages = options.include_messages.unwrap_or(true);
    let first_kept = prep.first_kept();
    let turn_start = prep.cut.turn_start.filter(|_| prep.cut.is_split_turn);
    let messages = |range: std::ops::Range<usize>| {
        include_messages.then(|| {
            path[range]
                .iter()
                .filter_map(|e| {
                    crate::compaction::message::for_compaction(e).map(|m| message_json(m, e))
                })
                .collect()
        })
    };
    // Borrow the path entries from the session so the answer outlives `path`.
    let messages_to_summarize = messages(prep.history.clone());
    let turn_prefix_messages = messages(prep.turn_prefix.clone());
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
        previous_summary: prep.previous_summary.map(|s| s.decode().into_owned()),
        summarized_entry_ids: path
            [prep.boundary_start..prep.cut.first_kept.max(prep.boundary_start)]
            .iter()
            .filter_map(|e| e.id().map(str::to_string))
            .collect(),
        messages_to_summarize,
        turn_prefix_messages,
        details: prep.file_ops.lists(),
        conversation: Conversation {
            history: plan.history_text,
            turn_prefix: plan.turn_prefix_text,
        },
        requests: plan.requests,
        settings: settings.into(),
    })))
}

pub fn prompt_options(options: &PrepareOptions) -> PromptOptions<'_> {
    PromptOptions {
        custom_instructions: options.custom_instructions.as_deref(),
        prompt_override: options.prompt_override.as_deref(),
        additional_context: &options.additional_context,
    }
}

/// The serialized conversation and the summarizer calls a compaction makes.
pub struct RequestPlan {
    pub history_text: String,
    pub turn_prefix_text: Option<String>,
    /// The history is summarized by a model (false: split turn with no history, where
    /// the history summary is the literal `No prior history.`).
    pub has_history_request: bool,
    pub requests: Vec<SummaryRequest>,
}

/// ALGORITHM.md §8: one history summary, or history and turn prefix concurrently.
pub fn plan_requests(prep: &Preparation, prompts: &Prompts, opts: &PromptOptions) -> RequestPlan {
    let w = &prompts.wrappers;
    let history_text = serialize_conversation(prep.history_messages(), w);
    let previous = prep.previous_summary.map(|s| s.decode());
    let reserve = prep.settings.reserve_tokens;
    let split_with_prefix = prep.cut.is_split_turn && prep.turn_prefix_messages().next().is_some();
    let mut requests = Vec::with_capacity(2);
    let mut turn_prefix_text = None;
    let mut has_history_request = true;
    if split_with_prefix {
        has_history_request = prep.history_messages().next().is_some();
        if has_history_request {
            requests.push(prompts.history_request(
                &history_text,
                previous.as_deref(),
                reserve,
                opts,
            ));
        }
        let prefix = serialize_conversation(prep.turn_prefix_messages(), w);
        requests.push(prompts.turn_prefix_request(&prefix, reserve));
        turn_prefix_text = Some(prefix);
    } else {
        if prep.cut.is_split_turn {
            turn_prefix_text = Some(String::new());
        }
        requests.push(prompts.history_request(&history_text, previous.as_deref(), reserve, opts));
    }
    RequestPlan {
        history_text,
        turn_prefix_text,
        has_history_request,
        requests,
    }
}

/// The JSON of an AgentMessage as pi would hold it after migration.
pub fn message_json<'a>(msg: AgentMessage<'_, 'a>, entry: &Entry<'a>) -> MessageJson<'a> {
    match msg {
        AgentMessage::Stored(m) if !m.migrated_role => match entry.message_raw() {
            Some(raw) => MessageJson::Raw(raw),
            None => MessageJson::Built(Value::Null),
        },
        AgentMessage::Stored(_) => {
            let mut v = entry
                .message_raw()
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
