//! The pi session built from Responses items, one piece at a time: consecutive assistant
//! pieces join one assistant message, and every entry remembers its first item.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::super::pi_writer::PiWriter;
use super::items::Piece;

/// The pi session being built from pieces.
pub(super) struct Session {
    writer: PiWriter,
    first_items: HashMap<String, usize>,
    /// The assistant message being built: its first item and its blocks.
    assistant: Option<(usize, Vec<Value>)>,
    /// Tool names by call id, for the results.
    calls: HashMap<String, String>,
}

pub(super) struct Entries {
    pub entries: Vec<Value>,
    pub first_items: HashMap<String, usize>,
}

impl Session {
    pub fn new() -> Self {
        Session {
            writer: PiWriter::new("responses", "i"),
            first_items: HashMap::new(),
            assistant: None,
            calls: HashMap::new(),
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
                let id = self.writer.compaction(&summary, None);
                self.first_items.insert(id, index);
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

    fn message(&mut self, index: usize, message: Value) {
        let id = self.writer.message(message);
        self.first_items.insert(id, index);
    }

    pub fn finish(mut self) -> Entries {
        self.flush();
        self.writer.keep_nothing_after();
        Entries {
            entries: self.writer.into_entries(),
            first_items: self.first_items,
        }
    }
}
