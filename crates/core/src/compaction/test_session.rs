//! A compact way to write the sessions the core's unit tests run on.
//!
//! Tests describe a path entry by entry; the builder writes the JSONL a pi session file
//! would hold (a v3 header, then one line per entry chained by `parentId`) and the test
//! parses it with [`Session::from_jsonl`], so the rules are checked on the same parsed
//! entries production sees. The entry at path index `i` has the id `e{i}`, so a test can
//! name entries by their place.

use serde_json::{json, Map, Value};

use crate::session::tree::Leaf;
use crate::session::{Entry, Session};

use super::message::{for_compaction, AgentMessage};

/// A session being written, oldest entry first.
#[derive(Debug, Default, Clone)]
pub struct SessionText {
    lines: Vec<String>,
}

/// Text of `tokens` estimated tokens (4 ASCII characters each).
pub fn tokens(tokens: usize) -> String {
    "x".repeat(4 * tokens)
}

impl SessionText {
    pub fn new() -> Self {
        SessionText::default()
    }

    /// Id of the entry at path index `i`.
    pub fn id(i: usize) -> String {
        format!("e{i}")
    }

    /// Any entry: `type` plus its own fields, chained to the previous entry.
    pub fn entry(mut self, kind: &str, fields: Value) -> Self {
        let n = self.lines.len();
        let mut line = Map::new();
        line.insert("type".into(), kind.into());
        line.insert("id".into(), Self::id(n).into());
        line.insert(
            "parentId".into(),
            if n == 0 {
                Value::Null
            } else {
                Self::id(n - 1).into()
            },
        );
        line.insert("timestamp".into(), "2026-01-01T00:00:00.000Z".into());
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        self.lines.push(Value::Object(line).to_string());
        self
    }

    /// A `message` entry holding `message`.
    pub fn message(self, message: Value) -> Self {
        self.entry("message", json!({ "message": message }))
    }

    pub fn user(self, text: &str) -> Self {
        self.message(json!({ "role": "user", "content": text }))
    }

    /// An assistant message with one text block.
    pub fn assistant(self, text: &str) -> Self {
        self.assistant_blocks(json!([{ "type": "text", "text": text }]))
    }

    pub fn assistant_blocks(self, content: Value) -> Self {
        self.message(json!({ "role": "assistant", "content": content, "stopReason": "stop" }))
    }

    /// An assistant message calling one tool.
    pub fn tool_call(self, name: &str, arguments: Value) -> Self {
        self.assistant_blocks(json!([{
            "type": "toolCall", "id": "call", "name": name, "arguments": arguments
        }]))
    }

    pub fn tool_result(self, text: &str) -> Self {
        self.message(json!({
            "role": "toolResult", "toolCallId": "call", "toolName": "bash",
            "content": [{ "type": "text", "text": text }], "isError": false
        }))
    }

    /// A user `!command`: a bashExecution message.
    pub fn bash(self, command: &str, output: &str) -> Self {
        self.message(json!({
            "role": "bashExecution", "command": command, "output": output,
            "exitCode": 0, "cancelled": false, "truncated": false
        }))
    }

    pub fn custom_message(self, text: &str) -> Self {
        self.entry(
            "custom_message",
            json!({ "customType": "note", "content": text, "display": true }),
        )
    }

    pub fn branch_summary(self, summary: &str) -> Self {
        self.entry(
            "branch_summary",
            json!({ "fromId": "elsewhere", "summary": summary }),
        )
    }

    pub fn compaction(self, summary: &str, first_kept: &str) -> Self {
        self.entry(
            "compaction",
            json!({ "summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": 1 }),
        )
    }

    /// A metadata entry (no message).
    pub fn model_change(self) -> Self {
        self.entry("model_change", json!({ "provider": "p", "modelId": "m" }))
    }

    pub fn label(self) -> Self {
        self.entry("label", json!({ "targetId": "e0", "label": "l" }))
    }

    /// The JSONL text: a v3 header, then the entries.
    pub fn jsonl(&self) -> String {
        let mut out = String::from(r#"{"type":"session","version":3,"id":"test"}"#);
        for l in &self.lines {
            out.push('\n');
            out.push_str(l);
        }
        out
    }
}

/// Parses a session written by [`SessionText::jsonl`].
pub fn parse(jsonl: &str) -> Session<'_> {
    Session::from_jsonl(jsonl).expect("a test session parses")
}

/// The path from the last entry to the root, root first.
pub fn path<'s, 'a>(session: &'s Session<'a>) -> Vec<&'s Entry<'a>> {
    session
        .path(Leaf::Last, "leafId")
        .expect("a test session has a path")
        .iter()
        .map(|&i| &session.entries[i])
        .collect()
}

/// The messages of every entry, in input order (compactions and metadata give none).
pub fn messages<'s, 'a>(session: &'s Session<'a>) -> Vec<AgentMessage<'s, 'a>> {
    session.entries.iter().filter_map(for_compaction).collect()
}

/// Property-test settings: a fixed seed, so `cargo test` is deterministic and a failure
/// replays by running the test again, and no regression files in the source tree.
/// `PROPTEST_RNG_SEED` and `PROPTEST_CASES` override the seed and the case count.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x00c0_ffee);
    }
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}

/// One entry of a generated path: its kind and a size in tokens.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    User,
    Assistant,
    ToolCall,
    ToolResult,
    Bash,
    CustomMessage,
    BranchSummary,
    Compaction,
    ModelChange,
    Label,
}

/// A path of up to `max_len` entries of every kind, each message up to 300 tokens.
pub fn any_path(max_len: usize) -> impl proptest::strategy::Strategy<Value = SessionText> {
    use proptest::prelude::*;
    use Kind::*;
    let kind = prop::sample::select(vec![
        User,
        User,
        Assistant,
        Assistant,
        ToolCall,
        ToolResult,
        ToolResult,
        ToolResult,
        Bash,
        CustomMessage,
        BranchSummary,
        Compaction,
        ModelChange,
        Label,
    ]);
    // Round sizes too, so sums meet a round budget exactly.
    let size = prop_oneof![0..300usize, (0..6usize).prop_map(|k| k * 50)];
    prop::collection::vec((kind, size), 1..=max_len).prop_map(|entries| {
        entries
            .into_iter()
            .fold(SessionText::new(), |s, (kind, n)| {
                let t = tokens(n);
                match kind {
                    User => s.user(&t),
                    Assistant => s.assistant(&t),
                    ToolCall => s.tool_call("bash", json!({ "command": t })),
                    ToolResult => s.tool_result(&t),
                    Bash => s.bash("make", &t),
                    CustomMessage => s.custom_message(&t),
                    BranchSummary => s.branch_summary(&t),
                    Compaction => s.compaction("s", "e0"),
                    ModelChange => s.model_change(),
                    Label => s.label(),
                }
            })
    })
}
