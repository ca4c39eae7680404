//! Messages-format conversation → pi session entries.
//!
//! Every block the client sent reaches the summarizer: text, thinking and tool calls map
//! onto pi's user / assistant / toolResult messages; images, documents and any block
//! type compactd does not know become text naming them (with their JSON for unknown
//! ones). Only `redacted_thinking` is left out: its data is encrypted, nothing a
//! summarizer can read.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::super::pi_writer::{describe, PiWriter};
use super::{InputMessage, MessageRole};

/// The session for `messages`: a header, one entry per message (tool results split off
/// as pi's toolResult messages, a fed-back compaction block as a `compaction` entry), and
/// an empty user message last, where the cut is made (see the module documentation).
pub fn session_entries(messages: &[InputMessage]) -> Vec<Value> {
    let mut s = Builder {
        writer: PiWriter::new("messages", "m"),
        tool_names: HashMap::new(),
    };
    for m in messages {
        match (&m.content, m.role) {
            (Value::String(text), MessageRole::User) => s.user(vec![text.clone()]),
            (Value::String(text), MessageRole::Assistant) => {
                s.assistant(vec![json!({"type": "text", "text": text})]);
            }
            (Value::Array(blocks), MessageRole::User) => s.user_blocks(blocks),
            (Value::Array(blocks), MessageRole::Assistant) => s.assistant_blocks(blocks),
            (other, MessageRole::User) => s.user(vec![other.to_string()]),
            (other, MessageRole::Assistant) => {
                s.assistant(vec![json!({"type": "text", "text": other.to_string()})]);
            }
        }
    }
    s.user(vec![String::new()]);
    s.writer.into_entries()
}

struct Builder {
    writer: PiWriter,
    /// Tool names by `tool_use` id, for the tool results.
    tool_names: HashMap<String, String>,
}

impl Builder {
    fn message(&mut self, message: Value) {
        self.writer.message(message);
    }

    /// A user message of text parts (an empty list writes nothing).
    fn user(&mut self, parts: Vec<String>) {
        if parts.is_empty() {
            return;
        }
        let text = parts.join("\n\n");
        self.message(
            json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}),
        );
    }

    fn assistant(&mut self, content: Vec<Value>) {
        if content.is_empty() {
            return;
        }
        self.message(
            json!({"role": "assistant", "content": content, "stopReason": "stop", "timestamp": 0}),
        );
    }

    fn tool_result(&mut self, id: &str, content: &Value, is_error: bool) {
        let name = self.tool_names.get(id).cloned().unwrap_or_default();
        let text = match content {
            Value::Null => String::new(),
            other => content_text(other),
        };
        self.message(json!({
            "role": "toolResult", "toolCallId": id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": 0
        }));
    }

    /// A fed-back block: the previous summary, whose kept region starts at the next entry.
    /// A block without content is a failed compaction, which stands for nothing.
    fn compaction(&mut self, block: &Value) {
        let Some(summary) = block.get("content").and_then(Value::as_str) else {
            return;
        };
        // compactd's own answer carries the details there (file lists, pinned ledger);
        // anything else in it is opaque and not ours to read.
        let details = block
            .get("encrypted_content")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Map<String, Value>>(t).ok());
        self.writer.compaction(summary, details);
    }

    fn user_blocks(&mut self, blocks: &[Value]) {
        let mut parts = Vec::new();
        for b in blocks {
            match kind(b) {
                "text" => parts.push(str_field(b, "text")),
                "tool_result" => {
                    self.user(std::mem::take(&mut parts));
                    let id = str_field(b, "tool_use_id");
                    let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                    self.tool_result(&id, b.get("content").unwrap_or(&Value::Null), is_error);
                }
                "compaction" => {
                    self.user(std::mem::take(&mut parts));
                    self.compaction(b);
                }
                "redacted_thinking" => {}
                _ => parts.push(block_text(b)),
            }
        }
        self.user(parts);
    }

    fn assistant_blocks(&mut self, blocks: &[Value]) {
        let mut content = Vec::new();
        for b in blocks {
            match kind(b) {
                "text" => content.push(json!({"type": "text", "text": str_field(b, "text")})),
                "thinking" => {
                    content.push(json!({"type": "thinking", "thinking": str_field(b, "thinking")}));
                }
                "redacted_thinking" => {}
                "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                    let id = str_field(b, "id");
                    let name = str_field(b, "name");
                    self.tool_names.insert(id.clone(), name.clone());
                    let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                    content.push(
                        json!({"type": "toolCall", "id": id, "name": name, "arguments": input}),
                    );
                }
                "compaction" => {
                    self.assistant(std::mem::take(&mut content));
                    self.compaction(b);
                }
                // A server tool's result (web search, code execution, MCP, …): the result
                // of the tool call before it, as pi keeps tool results.
                k if k.ends_with("_tool_result") && b.get("tool_use_id").is_some() => {
                    self.assistant(std::mem::take(&mut content));
                    let id = str_field(b, "tool_use_id");
                    let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                    self.tool_result(&id, b.get("content").unwrap_or(&Value::Null), is_error);
                }
                _ => content.push(json!({"type": "text", "text": block_text(b)})),
            }
        }
        self.assistant(content);
    }
}

fn kind(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

fn str_field(b: &Value, key: &str) -> String {
    match b.get(key) {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A tool result's content: a string, or blocks as text.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match kind(b) {
                "text" => str_field(b, "text"),
                _ => block_text(b),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// A block other than text as text the summarizer can read.
fn block_text(b: &Value) -> String {
    let source = b.get("source");
    let source_kind = source.map(kind).unwrap_or("");
    match (kind(b), source_kind) {
        ("image", _) => format!("[image: {}]", source_label(source)),
        ("document", "text") => format!(
            "[document{}]\n{}",
            title(b),
            source.map(|s| str_field(s, "data")).unwrap_or_default()
        ),
        ("document", "content") => format!(
            "[document{}]\n{}",
            title(b),
            source
                .and_then(|s| s.get("content"))
                .map(content_text)
                .unwrap_or_default()
        ),
        ("document", _) => format!("[document{}: {}]", title(b), source_label(source)),
        ("search_result", _) => format!(
            "[search result {}: {}]\n{}",
            str_field(b, "title"),
            str_field(b, "source"),
            b.get("content").map(content_text).unwrap_or_default()
        ),
        (k, _) => format!(
            "[{} block] {}",
            if k.is_empty() { "untyped" } else { k },
            describe(b)
        ),
    }
}

fn title(b: &Value) -> String {
    match b.get("title").and_then(Value::as_str) {
        Some(t) => format!(" {t:?}"),
        None => String::new(),
    }
}

/// What an image or a binary document is: its URL, file id or media type (never its
/// base64 data, which a summarizer cannot read).
fn source_label(source: Option<&Value>) -> String {
    let Some(s) = source else {
        return "no source".into();
    };
    for key in ["url", "file_id", "media_type"] {
        if let Some(v) = s.get(key).and_then(Value::as_str) {
            return v.to_string();
        }
    }
    kind(s).to_string()
}
