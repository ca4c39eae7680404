//! The outline of a session for the inspector: per entry its id, parent, kind, token
//! estimate and where its JSON text sits in the body, plus the path to the leaf.
//!
//! Design decisions:
//! * Columns, not rows: one array per field (`ids`, `parents`, `kinds`, `tokens`,
//!   `offsets`, `lengths`), so a 20 MB session of 100,000 entries costs a few arrays
//!   of numbers rather than 100,000 objects, and the page reads them into typed arrays.
//! * No text by default: the page already holds the body it sent, so it reads an
//!   entry's text from `offsets`/`lengths` (byte positions in the body as sent) when
//!   the entry is hovered. `previews` (the start of each entry's text) is asked for
//!   only where there is no body to read from: the self-contained report.
//! * Entries are numbered by their position among the non-header entries (the
//!   session's order); `path` lists the positions from the root to the leaf, which is
//!   what `/v1/prepare`'s `firstKeptEntryIndex` and `turnStartIndex` count along.
//! * Token estimates are pi's chars/4 of the message an entry gives a compaction (a
//!   compaction entry: its summary); entries that give no message count 0.

use serde::Serialize;

use compactd_core::compaction::message::{for_compaction, AgentMessage};
use compactd_core::compaction::tokens::estimate;
use compactd_core::session::{Block, Content, Entry, EntryBody, InputError, Role, Text};

use super::input::SessionInput;
use super::options::PrepareOptions;

/// Kinds, by the number `kinds` holds (the index into this list).
pub const KIND_NAMES: [&str; 8] = [
    "user",
    "assistant",
    "toolResult",
    "bash",
    "custom",
    "compaction",
    "branchSummary",
    "other",
];

/// UTF-16 units of text kept per entry in `previews`.
pub const PREVIEW_UNITS: usize = 160;

/// The answer of `/v1/inspect/outline`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outline {
    /// Entries (header excluded).
    pub count: usize,
    /// The names of the numbers in `kinds`.
    pub kind_names: [&'static str; 8],
    /// Each entry's id (`null` when it has none).
    pub ids: Vec<Option<String>>,
    /// Each entry's parent position (-1: a root).
    pub parents: Vec<i64>,
    /// Each entry's kind, as an index into `kindNames`.
    pub kinds: Vec<u8>,
    /// Each entry's token estimate.
    pub tokens: Vec<u64>,
    /// Byte offset of each entry's JSON text in the body as sent (-1: not in the body).
    pub offsets: Vec<i64>,
    /// Byte length of each entry's JSON text.
    pub lengths: Vec<usize>,
    /// Positions from the root to the leaf (`leafId`, default the last entry).
    pub path: Vec<usize>,
    /// Positions of the entries no other entry names as its parent.
    pub leaves: Vec<usize>,
    /// The start of each entry's text (only with `previews`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previews: Option<Vec<String>>,
}

/// The outline of `input`, whose entries were parsed from `body`.
pub fn outline<O: AsRef<PrepareOptions>>(
    input: &SessionInput<'_, O>,
    body: &[u8],
    previews: bool,
) -> Result<Outline, InputError> {
    let entries = &input.session.entries;
    let path = input.path(input.options.as_ref().leaf_id.as_deref())?;
    let n = entries.len();
    let mut parents = Vec::with_capacity(n);
    let mut has_child = vec![false; n];
    for e in entries {
        let parent = e
            .parent_id
            .as_deref()
            .and_then(|p| input.session.position(p));
        if let Some(p) = parent {
            has_child[p] = true;
        }
        parents.push(parent.map_or(-1, |p| p as i64));
    }
    let base = body.as_ptr() as usize;
    let offset = |e: &Entry| {
        let at = (e.raw.as_ptr() as usize).wrapping_sub(base);
        if at <= body.len() && at + e.raw.len() <= body.len() {
            at as i64
        } else {
            -1
        }
    };
    Ok(Outline {
        count: n,
        kind_names: KIND_NAMES,
        ids: entries.iter().map(|e| e.id().map(str::to_string)).collect(),
        parents,
        kinds: entries.iter().map(kind).collect(),
        tokens: entries.iter().map(tokens).collect(),
        offsets: entries.iter().map(offset).collect(),
        lengths: entries.iter().map(|e| e.raw.len()).collect(),
        path,
        leaves: (0..n).filter(|&i| !has_child[i]).collect(),
        previews: previews.then(|| entries.iter().map(preview).collect()),
    })
}

/// The kind number of an entry (see [`KIND_NAMES`]).
pub fn kind(e: &Entry) -> u8 {
    match &e.body {
        EntryBody::Message(m) => match m.role {
            Role::User => 0,
            Role::Assistant => 1,
            Role::ToolResult => 2,
            Role::BashExecution => 3,
            Role::Custom | Role::HookMessage => 4,
            Role::CompactionSummary => 5,
            Role::BranchSummary => 6,
            Role::Other => 7,
        },
        EntryBody::CustomMessage { .. } => 4,
        EntryBody::Compaction(_) => 5,
        EntryBody::BranchSummary { .. } => 6,
        EntryBody::Other => 7,
    }
}

fn tokens(e: &Entry) -> u64 {
    match &e.body {
        EntryBody::Compaction(c) => estimate(AgentMessage::CompactionSummary(&c.summary)),
        _ => for_compaction(e).map_or(0, estimate),
    }
}

/// The start of an entry's text: the first text of its message, a bash command, a
/// tool call's name, a summary; the entry type for anything else.
pub fn preview(e: &Entry) -> String {
    let mut out = String::new();
    let text = |t: &Text, out: &mut String| {
        t.push_prefix_to(out, PREVIEW_UNITS);
    };
    let content = |c: &Content, out: &mut String| match c {
        Content::Absent => {}
        Content::Text(t) => text(t, out),
        Content::Blocks(blocks) => {
            for b in blocks {
                match b {
                    Block::Text(t) | Block::Thinking(t) if !t.is_empty() => {
                        return text(t, out);
                    }
                    Block::ToolCall(call) => {
                        out.push_str("→ ");
                        return text(&call.name, out);
                    }
                    Block::Image => return out.push_str("[image]"),
                    _ => {}
                }
            }
        }
    };
    match &e.body {
        EntryBody::Message(m) => {
            if let Some(bash) = &m.bash {
                out.push_str("$ ");
                text(&bash.command, &mut out);
            } else if let Some(summary) = &m.summary {
                text(summary, &mut out);
            } else {
                content(&m.content, &mut out);
            }
        }
        EntryBody::CustomMessage { content: c } => content(c, &mut out),
        EntryBody::BranchSummary { summary, .. } => text(summary, &mut out),
        EntryBody::Compaction(c) => text(&c.summary, &mut out),
        EntryBody::Other => out.push_str(&e.entry_type),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::BodyFormat;

    const SESSION: &str = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"hello there","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"read","arguments":{}}],"timestamp":2}}"#,
        "\n",
        r#"{"type":"model_change","id":"c","parentId":"a","timestamp":"2025-01-01T00:00:03Z"}"#,
        "\n",
    );

    #[test]
    fn columns_point_into_the_body() {
        let input = SessionInput::parse(
            SESSION.as_bytes(),
            BodyFormat::Jsonl,
            PrepareOptions::default(),
        )
        .unwrap();
        let o = outline(&input, SESSION.as_bytes(), true).unwrap();
        assert_eq!(o.count, 3);
        assert_eq!(
            o.ids,
            [Some("a".into()), Some("b".into()), Some("c".into())]
        );
        assert_eq!(o.parents, [-1, 0, 0]);
        assert_eq!(o.kinds, [0, 1, 7]);
        assert_eq!(o.tokens[0], 3); // "hello there": 11 chars
        assert_eq!(o.path, [0, 2]);
        assert_eq!(o.leaves, [1, 2]);
        let (at, len) = (o.offsets[1] as usize, o.lengths[1]);
        assert!(SESSION[at..at + len].starts_with(r#"{"type":"message","id":"b""#));
        assert!(SESSION[at..at + len].ends_with('}'));
        let previews = o.previews.unwrap();
        assert_eq!(previews, ["hello there", "→ read", "model_change"]);
    }
}
