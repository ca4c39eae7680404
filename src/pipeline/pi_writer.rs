//! A pi session written entry by entry, for requests in a provider's shape (OpenAI
//! Responses items, Anthropic messages) that compactd compacts as pi sessions: one path of
//! entries under a header, each the child of the one before, ids numbered in order.

use serde_json::{json, Map, Value};

/// The timestamp of every entry: the requests carry none, and pi's algorithm reads none.
const EPOCH: &str = "1970-01-01T00:00:00.000Z";

pub struct PiWriter {
    entries: Vec<Value>,
    /// What every id starts with (`i3`, `m3`).
    prefix: &'static str,
}

impl PiWriter {
    /// A session with its header (`session_id`), entry ids `prefix` and their position.
    pub fn new(session_id: &str, prefix: &'static str) -> Self {
        let header = json!({
            "type": "session", "version": 3, "id": session_id, "timestamp": EPOCH, "cwd": "",
        });
        PiWriter {
            entries: vec![header],
            prefix,
        }
    }

    /// The id the next entry gets.
    pub fn next_id(&self) -> String {
        format!("{}{}", self.prefix, self.entries.len())
    }

    /// Appends a `message` entry; its id.
    pub fn message(&mut self, message: Value) -> String {
        let mut e = Map::new();
        e.insert("type".into(), json!("message"));
        e.insert("message".into(), message);
        self.push(e)
    }

    /// Appends a `compaction` entry (a summary fed back), whose kept region starts at the
    /// entry after it (see [`keep_nothing_after`](Self::keep_nothing_after) when none
    /// follows); its id. `details` are compactd's, when the summary carried them.
    pub fn compaction(&mut self, summary: &str, details: Option<Map<String, Value>>) -> String {
        let mut e = Map::new();
        e.insert("type".into(), json!("compaction"));
        e.insert("summary".into(), json!(summary));
        let next = format!("{}{}", self.prefix, self.entries.len() + 1);
        e.insert("firstKeptEntryId".into(), json!(next));
        e.insert("tokensBefore".into(), json!(0));
        if let Some(d) = details {
            e.insert("details".into(), Value::Object(d));
        }
        self.push(e)
    }

    /// When the last entry is a compaction, it keeps nothing: its kept region is itself.
    pub fn keep_nothing_after(&mut self) {
        if let Some(last) = self.entries.last_mut() {
            if last["type"] == "compaction" {
                last["firstKeptEntryId"] = last["id"].clone();
            }
        }
    }

    pub fn into_entries(self) -> Vec<Value> {
        self.entries
    }

    fn push(&mut self, mut entry: Map<String, Value>) -> String {
        let id = self.next_id();
        let parent = match self.entries.len() {
            1 => Value::Null,
            n => self.entries[n - 1]["id"].clone(),
        };
        entry.insert("id".into(), json!(id));
        entry.insert("parentId".into(), parent);
        entry.insert("timestamp".into(), json!(EPOCH));
        self.entries.push(Value::Object(entry));
        id
    }
}

/// Strings longer than this (in chars) are elided in the description of what has no text
/// of its own: base64 images and file data say nothing to a summarizer.
const DESCRIBED_STRING_MAX: usize = 1000;

/// Compact JSON of `v` (an unknown item or block), long strings elided: what a summarizer
/// reads of something that has no text of its own.
pub fn describe(v: &Value) -> String {
    elided(v).to_string()
}

/// `v` with every string over [`DESCRIBED_STRING_MAX`] chars replaced by its length.
pub fn elided(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > DESCRIBED_STRING_MAX => {
            Value::String(format!("[{} characters]", s.chars().count()))
        }
        Value::Array(a) => Value::Array(a.iter().map(elided).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), elided(v))).collect()),
        other => other.clone(),
    }
}
