//! Session entries: a typed view over the parts of an entry the core interprets, with
//! the entry's original JSON text kept for everything else.
//!
//! Parsing borrows from the input wherever it can: ids, long texts and opaque values
//! point into the request body. Fields the core does not interpret are never decoded,
//! so they survive untouched (the raw text is what gets echoed back).
//!
//! This file holds the types and their accessors. Reading them: `parse` reads an entry
//! into the shapes of `raw`, with `scan` (the strict JSON lexer of `crate::json`, for the
//! usual entry) or serde (for anything the scanner does not vouch for, and for the
//! wording of every error), then checks it with `fields` and `content`.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer};
use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::error::{Origin, Violation};
use super::id::Id;
use super::text::Text;

mod content;
mod fields;
mod parse;
mod raw;
pub(crate) mod scan;

pub use fields::truthy;
pub use parse::{parse_entry, parse_entry_hinted, parse_message};

/// The text of a JSON value as sent, already validated by the parser (a borrowed
/// `RawValue`, which the fast scanner can build without serde).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawJson<'a>(pub(crate) &'a str);

impl<'a> RawJson<'a> {
    pub fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|r| RawJson(r.get()))
    }
}

/// A session entry (any line but the header).
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Position in the input: the index into the JSON `entries` array or among the
    /// non-blank lines of a JSONL body (the header, when present, is position 0).
    pub index: usize,
    pub origin: Origin,
    /// The entry's JSON text as sent.
    pub raw: &'a str,
    pub entry_type: Cow<'a, str>,
    pub id: Option<Id<'a>>,
    pub parent_id: Option<Id<'a>>,
    /// `id`/`parentId` were assigned by the v1 migration and are not in `raw`.
    pub migrated_ids: bool,
    pub timestamp: Option<RawJson<'a>>,
    pub body: EntryBody<'a>,
}

#[derive(Debug, Clone)]
pub enum EntryBody<'a> {
    Message(Message<'a>),
    CustomMessage {
        content: Content<'a>,
    },
    BranchSummary {
        summary: Text<'a>,
        details: Option<RawJson<'a>>,
        from_hook: bool,
    },
    Compaction(CompactionEntry<'a>),
    /// Metadata and unknown entry types: carried, never interpreted.
    Other,
}

#[derive(Debug, Clone)]
pub struct CompactionEntry<'a> {
    pub summary: Text<'a>,
    pub first_kept_entry_id: Option<Id<'a>>,
    /// v1 files: index into the file's entries (header = 0); resolved by migration.
    pub first_kept_entry_index: Option<f64>,
    pub tokens_before: Option<RawJson<'a>>,
    pub details: Option<RawJson<'a>>,
    pub from_hook: bool,
}

/// An AgentMessage as stored in a `message` entry.
#[derive(Debug, Clone)]
pub struct Message<'a> {
    pub role: Role,
    pub content: Content<'a>,
    pub usage: Option<Usage>,
    /// `stopReason` is `aborted` or `error`: the usage is not trustworthy.
    pub stop_failed: bool,
    pub bash: Option<BashExecution<'a>>,
    /// branchSummary / compactionSummary messages.
    pub summary: Option<Text<'a>>,
    /// The v2 → v3 migration renamed the role (`hookMessage` → `custom`).
    pub migrated_role: bool,
    /// This message's JSON text as sent (a slice of its entry's `raw`), when the
    /// scanner read the entry; `None` on the serde path. Migration never rewrites
    /// `raw` (a renamed role is applied by the reader of this text), so it stays right.
    pub(crate) text: Option<RawJson<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Custom,
    BranchSummary,
    CompactionSummary,
    /// v2 `hookMessage` (becomes `custom` in v3).
    HookMessage,
    Other,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: f64,
}

impl Usage {
    /// pi's `calculateContextTokens`.
    pub fn context_tokens(&self) -> f64 {
        if self.total_tokens != 0.0 && !self.total_tokens.is_nan() {
            self.total_tokens
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }
}

#[derive(Debug, Clone)]
pub struct BashExecution<'a> {
    pub command: Text<'a>,
    pub output: Text<'a>,
    pub exit_code: Option<RawJson<'a>>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<Text<'a>>,
    pub exclude_from_context: bool,
}

/// Message content: a string or a list of blocks.
#[derive(Debug, Clone, Default)]
pub enum Content<'a> {
    #[default]
    Absent,
    Text(Text<'a>),
    Blocks(Vec<Block<'a>>),
}

#[derive(Debug, Clone)]
pub enum Block<'a> {
    Text(Text<'a>),
    Thinking(Text<'a>),
    ToolCall(ToolCall<'a>),
    Image,
    /// Unknown block types count nothing and are not serialized.
    Other,
}

#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    pub name: Text<'a>,
    pub arguments: RawJson<'a>,
}

impl<'a> Entry<'a> {
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn message(&self) -> Option<&Message<'a>> {
        match &self.body {
            EntryBody::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The JSON text of a `message` entry's message as sent. Read on demand: the
    /// single parsing pass does not keep it.
    pub fn message_raw(&self) -> Option<&'a RawValue> {
        self.message_raw_serde()
    }

    /// [`message_raw`](Self::message_raw) as text: where the scanner found it while
    /// parsing (no second read of the entry, which was most of the default answer's
    /// work), else found by the lexer (serde_json only when the lexer gives up): the
    /// entry was validated when it was parsed, this only finds where the message is.
    pub fn message_text(&self) -> Option<RawJson<'a>> {
        if let EntryBody::Message(Message { text: Some(t), .. }) = &self.body {
            return Some(*t);
        }
        match scan::field(self.raw, b"message") {
            Some(found) => found,
            None => self.message_raw_serde().map(|r| RawJson(r.get())),
        }
    }

    fn message_raw_serde(&self) -> Option<&'a RawValue> {
        #[derive(DeriveDeserialize)]
        struct OnlyMessage<'a> {
            #[serde(borrow)]
            message: Option<&'a RawValue>,
        }
        serde_json::from_str::<OnlyMessage<'a>>(self.raw)
            .ok()?
            .message
    }

    pub fn compaction(&self) -> Option<&CompactionEntry<'a>> {
        match &self.body {
            EntryBody::Compaction(c) => Some(c),
            _ => None,
        }
    }
}

/// The session header (`type: "session"`).
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub raw: &'a str,
    pub id: Option<Cow<'a, str>>,
    pub version: Option<f64>,
}

/// A parsed input line: the header or an entry.
#[allow(clippy::large_enum_variant)] // one per line, consumed at once
pub enum Parsed<'a> {
    Header(Header<'a>),
    Entry(Entry<'a>),
}

/// Why an entry could not be read.
pub enum EntryError {
    /// Not JSON: (message, column).
    Syntax(String, usize),
    Invalid(Violation),
}

impl From<Violation> for EntryError {
    fn from(v: Violation) -> Self {
        EntryError::Invalid(v)
    }
}

/// Re-reads raw JSON that may contain lone surrogate escapes (valid JSON, but not
/// representable in a Rust string): they become U+FFFD.
pub fn value_of(raw: RawJson) -> serde_json::Value {
    crate::json::value_of_str(raw.get())
}

/// [`value_of`] for JSON text known to be valid.
pub use crate::json::value_of_str;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    /// The message text kept at parse time is, byte for byte, what a second read of the
    /// entry finds (`scan::field`, serde_json when it gives up), on every entry of the
    /// real sessions and the corpus, v1/v2 files (migrated ids and roles) included.
    #[test]
    fn the_kept_message_text_is_what_a_second_read_finds() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests");
        let (mut kept, mut migrated, mut entries) = (0, 0, 0);
        for dir in ["fixtures/pi-sessions", "conformance/corpus"] {
            for f in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = f.unwrap().path();
                if p.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let body = std::fs::read_to_string(&p).unwrap();
                let Ok(session) = Session::from_jsonl(&body) else {
                    continue;
                };
                for e in &session.entries {
                    let reread = match scan::field(e.raw, b"message") {
                        Some(found) => found,
                        None => e.message_raw_serde().map(|r| RawJson(r.get())),
                    };
                    assert_eq!(e.message_text(), reread, "{} {}", p.display(), e.index);
                    if let Some(m) = e.message() {
                        kept += usize::from(m.text.is_some());
                        migrated += usize::from(m.migrated_role || e.migrated_ids);
                    }
                    entries += 1;
                }
            }
        }
        assert!(
            kept > 5000 && migrated > 10,
            "{kept} kept, {migrated} migrated"
        );
        assert!(entries > 10000, "{entries} entries");
    }

    #[test]
    fn entries_the_scanner_gives_up_on_find_their_message_by_reading_again() {
        // A surrogate pair: the strict scanner leaves the entry to serde_json.
        let json =
            r#"{"type":"message","id":"a","message":{"role":"user","content":"\ud83d\ude00"} }"#;
        let Ok(Parsed::Entry(e)) = parse_entry(json, 1, Origin::Line(1)) else {
            panic!("not an entry");
        };
        assert!(e.message().unwrap().text.is_none());
        let want = &json[json.find(r#"{"role""#).unwrap()..json.len() - 2];
        assert_eq!(e.message_text().unwrap().get(), want);
    }
}
