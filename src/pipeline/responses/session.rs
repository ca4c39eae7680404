//! The pi session built from Responses items, one piece at a time: consecutive assistant
//! pieces join one assistant message, and every entry remembers its first item.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::items::Piece;

/// The pi session being built from pieces.
pub(super) struct Session<'t> {
    timestamp: &'t str,
    entries: Vec<Value>,
    first_items: HashMap<String, usize>,
    /// The assistant message being built: its first item and its blocks.
    assistant: Option<(usize, Vec<Value>)>,
    /// Tool names by call id, for the results.
    calls: HashMap<String, String>,
    /// Where the previous summary is waiting for the id of the entry after it.
    open_summary: Option<usize>,
}

pub(super) struct Entries {
    pub entries: Vec<Value>,
    pub first_items: HashMap<String, usize>,
}

impl<'t> Session<'t> {
    pub fn new(timestamp: &'t str) -> Self {
        let header = json!({
            "type": "session",
            "version": 3,
            "id": "responses",
            "timestamp": timestamp,
            "cwd": "",
        });
        Session {
            timestamp,
            entries: vec![header],
            first_items: HashMap::new(),
            assistant: None,
            calls: HashMap::new(),
            open_summary: None,
        }
    }

    pub fn push(&mut self, index: usize, piece: Piece) {
        match piece {
            Piece::Assistant(blocks) => {
                for b in &blocks {
                    if b["type"] == "toolCall" {
                        let id = b["id"].as_str().unwrap_or_default().to_string();
                        let name = b["name"].as_str().unwrap_or_default().to_string();
                        self.calls.insert(id, name);
                    }
                }
                self.assistant
                    .get_or_insert_with(|| (index, Vec::new()))
                    .1
                    .extend(blocks);
            }
            Piece::User(content) => {
                self.flush();
                self.message(
                    index,
                    json!({"role": "user", "content": content, "timestamp": 0}),
                );
            }
            Piece::ToolResult {
                call_id,
                text,
                is_error,
            } => {
                self.flush();
                let name = self.calls.get(&call_id).cloned().unwrap_or_default();
                self.message(
                    index,
                    json!({
                        "role": "toolResult",
                        "toolCallId": call_id,
                        "toolName": name,
                        "content": [{"type": "text", "text": text}],
                        "isError": is_error,
                        "timestamp": 0,
                    }),
                );
            }
            Piece::Summary(summary) => {
                self.flush();
                let id = self.next_id();
                self.open_summary = Some(self.entries.len());
                self.first_items.insert(id.clone(), index);
                let parent = self.parent();
                self.entries.push(json!({
                    "type": "compaction",
                    "id": id,
                    "parentId": parent,
                    "timestamp": self.timestamp,
                    "summary": summary,
                    "firstKeptEntryId": "",
                    "tokensBefore": 0,
                }));
            }
            Piece::Opaque => {}
        }
    }

    fn flush(&mut self) {
        if let Some((index, content)) = self.assistant.take() {
            let calls = content.iter().any(|b| b["type"] == "toolCall");
            self.message(
                index,
                json!({
                    "role": "assistant",
                    "content": content,
                    "stopReason": if calls { "toolUse" } else { "stop" },
                    "timestamp": 0,
                }),
            );
        }
    }

    fn next_id(&self) -> String {
        format!("i{}", self.entries.len())
    }

    fn parent(&self) -> Value {
        match self.entries.len() {
            1 => Value::Null,
            n => self.entries[n - 1]["id"].clone(),
        }
    }

    fn message(&mut self, index: usize, message: Value) {
        let id = self.next_id();
        if let Some(at) = self.open_summary.take() {
            // The kept messages of the fed-back summary start right after it.
            self.entries[at]["firstKeptEntryId"] = Value::String(id.clone());
        }
        self.first_items.insert(id.clone(), index);
        let parent = self.parent();
        self.entries.push(json!({
            "type": "message",
            "id": id,
            "parentId": parent,
            "timestamp": self.timestamp,
            "message": message,
        }));
    }

    pub fn finish(mut self) -> Entries {
        self.flush();
        if let Some(at) = self.open_summary {
            // Nothing after the summary: it keeps nothing.
            let own = self.entries[at]["id"].clone();
            self.entries[at]["firstKeptEntryId"] = own;
        }
        Entries {
            entries: self.entries,
            first_items: self.first_items,
        }
    }
}
