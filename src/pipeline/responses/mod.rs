//! `POST /v1/responses/compact`: OpenAI's Responses compaction with any configured model,
//! and an answer anyone can read.
//!
//! The request's `input` items become a pi session (`items`), the session is compacted by
//! the same plan and run as `/v1/compact` (keep-recent cut, split turns, checked summary,
//! `settings` and query options), and the answer's `output` is the summary as one plain
//! user message followed by the kept items exactly as they were sent. Where OpenAI answers
//! an encrypted `compaction` item only its own models can read, this output can be sent to
//! any provider's Responses API, and back here: the summary message is recognized by its
//! wrapper and becomes the previous summary (the update path).
//!
//! The request's other fields: `model` names a configured candidate (an unknown name means
//! the default, as on `/v1/chat/completions`); `instructions` (the agent's system prompt,
//! which the client sends again with every request) reaches the summarizer as additional
//! context and is not repeated in the output; `previous_response_id` is refused, since
//! compactd stores no responses; `prompt_cache_key` is ignored. Every other property is a
//! compaction option, read as `/v1/compact` reads a JSON body's.

mod answer;
mod items;
pub mod on_request;
mod session;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use compactd_core::compaction::Wrappers;
use compactd_core::json::value_of_str;
use compactd_core::session::error::strip_position;
use compactd_core::session::{InputError, Violation};

use super::compact::system_prompt_context;
pub use answer::{CompactedResponse, InputTokensDetails, OutputTokensDetails, ResponseUsage};
pub use items::SummaryWrapper;
use items::{piece, Piece};
use session::Session;

/// The request's `input` as a pi session, and the way back to the items.
#[derive(Debug)]
pub struct Converted {
    /// The items as sent (a string `input` becomes one user message item).
    items: Vec<Box<RawValue>>,
    /// The pi session's entries, header first.
    entries: Vec<Value>,
    /// The request's compaction options (and `instructions` as additional context).
    options: Map<String, Value>,
    /// Each entry's id and the index of the first item it holds.
    entry_items: HashMap<String, usize>,
    /// The request's model, when it sets one.
    pub model: Option<String>,
    /// The index of the newest fed-back summary (0: none). The items before it are the
    /// client's preamble (a developer message it sends first every time): the previous
    /// summary does not stand for them, so they stay in front of the output, as sent.
    preamble_end: usize,
}

/// The fields of a request that are not compaction options (`entries` would replace the
/// session built from `input`).
const REQUEST_FIELDS: [&str; 6] = [
    "entries",
    "model",
    "input",
    "instructions",
    "previous_response_id",
    "prompt_cache_key",
];

fn invalid(pointer: String, message: impl Into<String>) -> InputError {
    InputError::invalid(Violation {
        pointer,
        message: message.into(),
        line: None,
    })
}

/// The summary wrapper of `wrappers` (the compaction summary's template).
pub fn summary_wrapper(wrappers: &Wrappers) -> SummaryWrapper {
    const MARK: &str = "\u{0}";
    let whole = wrappers
        .compaction_summary
        .render(|k| (k == "summary").then_some(MARK));
    let (prefix, suffix) = whole.split_once(MARK).unwrap_or((whole.as_str(), ""));
    SummaryWrapper {
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
    }
}

/// Reads a request body and builds its pi session.
pub fn convert(body: &str, wrapper: &SummaryWrapper) -> Result<Converted, InputError> {
    // Each property read raw: the items are kept as sent, and a lone surrogate escape
    // (valid JSON a Rust string cannot hold) reads as U+FFFD rather than failing.
    let fields: Vec<(String, &RawValue)> = serde_json::from_str::<RawFields>(body)
        .map_err(|e| {
            if e.is_data() {
                invalid(String::new(), "the body must be a JSON object")
            } else {
                InputError::Malformed {
                    message: strip_position(&e.to_string()).to_string(),
                    line: e.line(),
                    column: e.column(),
                }
            }
        })?
        .0;
    let field = |name: &str| {
        fields
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| value_of_str(v.get()))
    };
    if field("previous_response_id").is_some_and(|v| !v.is_null()) {
        return Err(invalid(
            "/previous_response_id".into(),
            "compactd stores no responses: send the conversation as `input`",
        ));
    }
    let model = match field("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m).filter(|m| !m.is_empty()),
        Some(_) => return Err(invalid("/model".into(), "`model` must be a string")),
    };
    let instructions = match field("instructions") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        _ => None,
    };
    let input = fields
        .iter()
        .rev()
        .find(|(k, _)| k == "input")
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            invalid(
                "/input".into(),
                "missing `input`: the conversation to compact",
            )
        })?;
    let items = input_items(input)?;
    let mut session = Session::new();
    let mut preamble_end = 0;
    for (index, item) in items.iter().enumerate() {
        let value = value_of_str(item.get());
        if value.is_null() && item.get().trim() != "null" {
            return Err(invalid(
                format!("/input/{index}"),
                "the item is nested too deeply to read",
            ));
        }
        let piece = piece(&value, wrapper).map_err(|m| invalid(format!("/input/{index}"), m))?;
        if matches!(piece, Piece::Summary(_)) {
            preamble_end = index;
        }
        session.push(index, piece);
    }
    let entries = session.finish();
    let mut options: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| !REQUEST_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), value_of_str(v.get())))
        .collect();
    if let Some(instructions) = instructions {
        let context = options
            .entry("additionalContext")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = context {
            list.push(Value::String(system_prompt_context(&instructions)));
        }
    }
    Ok(Converted {
        items,
        entries: entries.entries,
        options,
        entry_items: entries.first_items,
        model,
        preamble_end,
    })
}

/// A JSON object's properties in order, each value as its raw text.
struct RawFields<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for RawFields<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Fields<'a> {
            type Value = RawFields<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(RawFields(out))
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData))
    }
}

impl Converted {
    /// The id of the entry holding the first item (none for an empty input).
    pub fn first_entry_id(&self) -> Option<&str> {
        self.entry_items
            .iter()
            .min_by_key(|(_, &item)| item)
            .map(|(id, _)| id.as_str())
    }

    /// The session as a JSON body: `entries` and the request's options, which
    /// [`SessionInput`](crate::pipeline::SessionInput) reads as `/v1/compact` reads a body.
    pub fn session_json(&self) -> String {
        let mut body = Map::with_capacity(self.options.len() + 1);
        body.insert("entries".into(), Value::Array(self.entries.clone()));
        body.extend(self.options.clone());
        Value::Object(body).to_string()
    }

    /// The session as a pi session file (JSONL), for the inspector.
    pub fn session_jsonl(&self) -> String {
        self.entries.iter().map(|e| format!("{e}\n")).collect()
    }
}

/// `input` as items, each as sent: an array of items, or a string (one user message).
fn input_items(raw: &RawValue) -> Result<Vec<Box<RawValue>>, InputError> {
    if let Value::String(text) = value_of_str(raw.get()) {
        let item = json!({"role": "user", "content": text});
        return Ok(vec![to_raw(&item)]);
    }
    let list: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(|_| {
        invalid(
            "/input".into(),
            "`input` must be a string or an array of items",
        )
    })?;
    Ok(list.into_iter().map(RawValue::to_owned).collect())
}

fn to_raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).expect("a serialized value is JSON")
}

/// The compacted `output`: the preamble before a fed-back summary and the unreadable
/// provider items first (as sent), the summary as a user message, then the items from the
/// first kept entry on, as sent.
pub fn output(
    conv: &Converted,
    wrapper: &SummaryWrapper,
    first_kept_entry_id: &str,
    summary: &str,
) -> Vec<Box<RawValue>> {
    let first_kept = conv
        .entry_items
        .get(first_kept_entry_id)
        .copied()
        .unwrap_or(conv.items.len());
    let is_opaque = |item: &RawValue| {
        serde_json::from_str::<items::TypeOnly>(item.get())
            .is_ok_and(|t| t.kind.as_deref() == Some("compaction"))
    };
    let summary_item = json!({
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": wrapper.wrap(summary)}],
    });
    let (preamble, rest) = conv.items.split_at(conv.preamble_end);
    preamble
        .iter()
        .chain(rest.iter().filter(|i| is_opaque(i)))
        .cloned()
        .chain(std::iter::once(to_raw(&summary_item)))
        .chain(
            conv.items[first_kept..]
                .iter()
                .filter(|i| !is_opaque(i))
                .cloned(),
        )
        .collect()
}
