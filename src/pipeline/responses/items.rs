//! Responses API items as the pi messages compactd compacts.
//!
//! Each item becomes part of one pi session entry, and each entry remembers the first
//! item it came from, so a cut at an entry is a cut between items:
//!
//! * a user, system or developer message is a user message (pi has no system role; a
//!   developer rule must still reach the pinned ledger, which reads user messages);
//! * assistant messages, reasoning summaries, tool calls and the provider's own items
//!   (web search, image generation, …) that follow one another are one assistant
//!   message, so a cut never falls between two calls of one turn and their outputs;
//! * a tool's output (`function_call_output`, `custom_tool_call_output`, any
//!   `*_call_output`) is a tool result, where pi never cuts;
//! * a summary compactd wrote earlier (its wrapper around the text) is the previous
//!   compaction, so compacting an output again updates that summary;
//! * a provider's encrypted `compaction` item cannot be read: it is no part of the
//!   session and stays in front of the output, as sent.
//!
//! What has no text of its own (an image, a file, an unknown item) reaches the summarizer
//! as a short description, long strings elided, so nothing is silently left out.

use serde_json::{json, Map, Value};

use super::super::pi_writer::{describe, elided};

/// An item's `type`, read without the rest.
#[derive(serde::Deserialize)]
pub(super) struct TypeOnly {
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// One item as the session sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Starts a user message entry with this pi content.
    User(Vec<Value>),
    /// Joins the assistant message being built (pi content blocks).
    Assistant(Vec<Value>),
    /// A tool result entry.
    ToolResult {
        call_id: String,
        text: String,
        is_error: bool,
    },
    /// compactd's own earlier summary: the previous compaction.
    Summary(String),
    /// Unreadable (a provider's encrypted compaction): kept in front of the output.
    Opaque,
}

/// The wrapper compactd puts around a summary, split at the summary's place.
#[derive(Debug, Clone)]
pub struct SummaryWrapper {
    pub prefix: String,
    pub suffix: String,
}

impl SummaryWrapper {
    pub fn wrap(&self, summary: &str) -> String {
        format!("{}{summary}{}", self.prefix, self.suffix)
    }

    /// The summary inside `text` when `text` is one of ours.
    fn unwrap<'t>(&self, text: &'t str) -> Option<&'t str> {
        text.trim_end()
            .strip_prefix(&self.prefix)?
            .strip_suffix(self.suffix.trim_end())
    }
}

/// What `item` is for the session (`None`: not an object with a known shape, which the
/// caller reports with the item's index).
pub fn piece(item: &Value, wrapper: &SummaryWrapper) -> Result<Piece, String> {
    let Some(obj) = item.as_object() else {
        return Err("an input item must be an object".into());
    };
    let kind = obj.get("type").and_then(Value::as_str);
    match kind {
        None | Some("message") => message(obj, wrapper),
        Some("function_call") | Some("custom_tool_call") => {
            Ok(Piece::Assistant(vec![tool_call(obj)]))
        }
        Some("reasoning") => Ok(Piece::Assistant(reasoning(obj))),
        Some("compaction") => Ok(Piece::Opaque),
        Some(k) if k.ends_with("_output") || k.ends_with("_response") => Ok(tool_result(obj)),
        Some(k) if obj.contains_key("call_id") => {
            let mut call = tool_call(obj);
            call["name"] = Value::String(name_of(obj).unwrap_or(k).to_string());
            Ok(Piece::Assistant(vec![call]))
        }
        Some(_) => Ok(Piece::Assistant(vec![text_block(describe(item))])),
    }
}

fn message(obj: &Map<String, Value>, wrapper: &SummaryWrapper) -> Result<Piece, String> {
    let role = obj
        .get("role")
        .and_then(Value::as_str)
        .ok_or("a message item needs a `role`")?;
    let content = obj.get("content").ok_or("a message item needs `content`")?;
    let texts = content_texts(content)?;
    match role {
        "assistant" => Ok(Piece::Assistant(
            texts.into_iter().map(text_block).collect(),
        )),
        "user" | "system" | "developer" => {
            if role == "user" {
                if let [only] = texts.as_slice() {
                    if let Some(summary) = wrapper.unwrap(only) {
                        return Ok(Piece::Summary(summary.to_string()));
                    }
                }
            }
            Ok(Piece::User(texts.into_iter().map(text_block).collect()))
        }
        other => Err(format!(
            "unknown message role {:?} (user, assistant, system or developer)",
            compactd_core::session::truncate_for_message(other)
        )),
    }
}

/// The texts of a message's `content`: a string, or parts.
fn content_texts(content: &Value) -> Result<Vec<String>, String> {
    match content {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(parts) => Ok(parts.iter().map(part_text).collect()),
        _ => Err("`content` must be a string or an array of parts".into()),
    }
}

/// One content part as text: its text, or what it is.
fn part_text(part: &Value) -> String {
    let field = |k: &str| part.get(k).and_then(Value::as_str);
    match part.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text" | "text" | "summary_text" | "reasoning_text") => {
            field("text").unwrap_or_default().to_string()
        }
        Some("refusal") => format!("[refusal] {}", field("refusal").unwrap_or_default()),
        Some("input_image") => match field("image_url").filter(|u| !u.starts_with("data:")) {
            Some(url) => format!("[image: {url}]"),
            None => "[image]".into(),
        },
        Some("input_file") => match field("filename").or(field("file_url")).or(field("file_id")) {
            Some(name) => format!("[file: {name}]"),
            None => "[file]".into(),
        },
        Some("input_audio") => "[audio]".into(),
        _ => describe(part),
    }
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

fn name_of(obj: &Map<String, Value>) -> Option<&str> {
    obj.get("name").and_then(Value::as_str)
}

/// A call as pi's `toolCall` block: `function_call` arguments are a JSON string (an
/// object once parsed); other calls carry their fields as the arguments.
fn tool_call(obj: &Map<String, Value>) -> Value {
    let id = obj
        .get("call_id")
        .or_else(|| obj.get("id"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let arguments = match obj.get("arguments") {
        Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => json!({ "arguments": raw }),
        },
        Some(other @ Value::Object(_)) => other.clone(),
        _ => {
            let rest: Map<String, Value> = obj
                .iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "type" | "id" | "call_id" | "name" | "status")
                })
                .map(|(k, v)| (k.clone(), elided(v)))
                .collect();
            Value::Object(rest)
        }
    };
    json!({
        "type": "toolCall",
        "id": id,
        "name": name_of(obj).unwrap_or("tool"),
        "arguments": arguments,
    })
}

fn tool_result(obj: &Map<String, Value>) -> Piece {
    let call_id = obj
        .get("call_id")
        .or_else(|| obj.get("approval_request_id"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let text = match obj.get("output") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().map(part_text).collect::<Vec<_>>().join("\n"),
        Some(other) => describe(other),
        None => describe(&Value::Object(obj.clone())),
    };
    let is_error = obj.get("status").and_then(Value::as_str) == Some("incomplete");
    Piece::ToolResult {
        call_id,
        text,
        is_error,
    }
}

/// A reasoning item's readable summary as pi thinking blocks (encrypted content and
/// empty summaries add nothing a summarizer can read).
fn reasoning(obj: &Map<String, Value>) -> Vec<Value> {
    ["summary", "content"]
        .iter()
        .filter_map(|k| obj.get(*k).and_then(Value::as_array))
        .flatten()
        .map(part_text)
        .filter(|t| !t.trim().is_empty())
        .map(|t| json!({"type": "thinking", "thinking": t}))
        .collect()
}
