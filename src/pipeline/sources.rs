//! The messages being summarized as the pinned ledger's sources, and the
//! previous compaction's ledger read back from its `details.pinned`.
//!
//! The ledger (`compaction::ledger`) takes a small type of its own ([`Source`]); this
//! module maps the session's messages onto it, borrowing each text from the session unless
//! it must be unescaped or joined from several blocks:
//! * user and assistant messages: their text blocks, joined (thinking is left out: it is
//!   not what was said);
//! * tool results: their text, `isError`, `toolName`, and what the matching call ran
//!   (its `command`, else its `path`), found by `toolCallId` among the assistant calls
//!   seen earlier in the same span (a call outside the span leaves it unknown);
//! * `!` bash executions of the user: a `bash` result with the command, failed when the
//!   exit code is not 0 (cancelled runs and those excluded from the context are skipped);
//! * compaction and branch summaries: `Summary` (the ledger reads nothing from them:
//!   what they had to keep travels in the previous ledger);
//! * custom messages (an extension's): left out, neither the user's nor the agent's word.
//!
//! Design: the tool-call ids and a result's `toolName` / `isError` are not in the parsed
//! session types (nothing else needs them), so they are read from the entry's raw JSON,
//! only for tool results and for assistant messages that hold a call.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use compactd_core::compaction::ledger::{Ledger, Source, SourceRole};
use compactd_core::compaction::message::AgentMessage;
use compactd_core::session::entry::value_of_str;
use compactd_core::session::{Block, Content, Entry, Message, Role};

/// One source: its text borrowed from the session where it needs no unescaping or
/// joining (most messages), so the sources of a large span are not a second copy of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSource<'s> {
    pub entry_id: Option<&'s str>,
    pub role: OwnedRole,
    pub text: Cow<'s, str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedRole {
    User,
    Assistant,
    ToolResult {
        is_error: bool,
        tool_name: String,
        call: Option<String>,
    },
    Summary,
}

impl SessionSource<'_> {
    /// The borrowed form the ledger reads.
    pub fn source(&self) -> Source<'_> {
        Source {
            entry_id: self.entry_id,
            role: match &self.role {
                OwnedRole::User => SourceRole::User,
                OwnedRole::Assistant => SourceRole::Assistant,
                OwnedRole::ToolResult {
                    is_error,
                    tool_name,
                    call,
                } => SourceRole::ToolResult {
                    is_error: *is_error,
                    tool_name,
                    call: call.as_deref(),
                },
                OwnedRole::Summary => SourceRole::Summary,
            },
            text: &self.text,
        }
    }
}

/// The sources of these messages (each with the entry it came from), in order.
pub fn sources_of<'s, 'a: 's>(
    messages: impl IntoIterator<Item = (AgentMessage<'s, 'a>, &'s Entry<'a>)>,
) -> Vec<SessionSource<'s>> {
    let mut calls = HashMap::new();
    let mut out = Vec::new();
    push_sources(messages, &mut calls, &mut out);
    out
}

/// The sources of `head` then `tail` as [`sources_of`] gives them chained, and how many
/// came from `head`.
pub fn sources_in_two<'s, 'a: 's>(
    head: impl IntoIterator<Item = (AgentMessage<'s, 'a>, &'s Entry<'a>)>,
    tail: impl IntoIterator<Item = (AgentMessage<'s, 'a>, &'s Entry<'a>)>,
) -> (Vec<SessionSource<'s>>, usize) {
    let mut calls = HashMap::new();
    let mut out = Vec::new();
    push_sources(head, &mut calls, &mut out);
    let at = out.len();
    push_sources(tail, &mut calls, &mut out);
    (out, at)
}

fn push_sources<'s, 'a: 's>(
    messages: impl IntoIterator<Item = (AgentMessage<'s, 'a>, &'s Entry<'a>)>,
    calls: &mut HashMap<String, String>,
    out: &mut Vec<SessionSource<'s>>,
) {
    for (message, entry) in messages {
        crate::cancel::checkpoint();
        let entry_id = entry.id();
        let (role, text) = match message {
            AgentMessage::Stored(m) => match stored(m, entry, calls) {
                Some(rt) => rt,
                None => continue,
            },
            AgentMessage::BranchSummary(t) | AgentMessage::CompactionSummary(t) => {
                (OwnedRole::Summary, t.decode())
            }
            AgentMessage::Custom(_) => continue,
        };
        if !text.trim().is_empty() {
            out.push(SessionSource {
                entry_id,
                role,
                text,
            });
        }
    }
}

/// This round's ledger: `previous` carried through the sources and the modified files.
pub fn ledger_of(
    previous: Ledger,
    sources: &[SessionSource<'_>],
    modified_files: &[String],
) -> Ledger {
    let borrowed: Vec<Source<'_>> = sources.iter().map(SessionSource::source).collect();
    compactd_core::compaction::ledger::update(previous, &borrowed, modified_files)
}

/// [`ledger_of`], and the ledger of the first `head` sources alone (see
/// `ledger::update_with_head`), from one pass.
pub fn ledger_with_head(
    previous: Ledger,
    sources: &[SessionSource<'_>],
    head: usize,
    modified_files: &[String],
) -> (Ledger, Ledger) {
    let borrowed: Vec<Source<'_>> = sources.iter().map(SessionSource::source).collect();
    compactd_core::compaction::ledger::update_with_head(previous, &borrowed, head, modified_files)
}

/// The ledger in a compaction entry's `details` (empty when it has none).
pub fn previous_ledger(entry: &Entry) -> Ledger {
    ledger_in(entry).unwrap_or_default()
}

/// The ledger in a compaction entry's `details`, when they carry one (`pinned`).
pub fn ledger_in(entry: &Entry) -> Option<Ledger> {
    let details = value_of_str(entry.compaction()?.details?.get());
    details
        .get("pinned")
        .is_some()
        .then(|| Ledger::from_details(&details))
}

fn stored<'s>(
    m: &'s Message<'_>,
    entry: &Entry,
    calls: &mut HashMap<String, String>,
) -> Option<(OwnedRole, Cow<'s, str>)> {
    match m.role {
        Role::User => Some((OwnedRole::User, text_in(&m.content))),
        Role::Assistant => {
            remember_calls(m, entry, calls);
            Some((OwnedRole::Assistant, text_in(&m.content)))
        }
        Role::ToolResult => {
            let raw = entry.message_raw()?;
            let r: ResultFields = serde_json::from_str(raw.get()).unwrap_or_default();
            let call = r
                .tool_call_id
                .as_ref()
                .and_then(|id| calls.get(id))
                .cloned();
            Some((
                OwnedRole::ToolResult {
                    is_error: r.is_error == Some(true),
                    tool_name: r.tool_name.unwrap_or_default(),
                    call,
                },
                text_in(&m.content),
            ))
        }
        Role::BashExecution => {
            let bash = m.bash.as_ref()?;
            if bash.cancelled || bash.exclude_from_context {
                return None;
            }
            let exit = bash.exit_code.map(|c| c.get().trim().to_string());
            let failed = !matches!(exit.as_deref(), None | Some("0") | Some("null"));
            Some((
                OwnedRole::ToolResult {
                    is_error: failed,
                    tool_name: "bash".into(),
                    call: Some(bash.command.decode().into_owned()),
                },
                bash.output.decode(),
            ))
        }
        Role::BranchSummary | Role::CompactionSummary => {
            m.summary.as_ref().map(|s| (OwnedRole::Summary, s.decode()))
        }
        Role::Custom | Role::HookMessage | Role::Other => None,
    }
}

/// [`text_of`], borrowed when one text needs no unescaping.
fn text_in<'s>(content: &'s Content<'_>) -> Cow<'s, str> {
    match content {
        Content::Text(t) => t.decode(),
        Content::Blocks(blocks) => {
            let mut texts = blocks.iter().filter_map(|b| match b {
                Block::Text(t) => Some(t),
                _ => None,
            });
            match (texts.next(), texts.next()) {
                (Some(only), None) => only.decode(),
                _ => Cow::Owned(text_of(content)),
            }
        }
        Content::Absent => Cow::Borrowed(""),
    }
}

/// Text blocks joined by a blank line (a plain string content as is).
pub(super) fn text_of(content: &Content) -> String {
    match content {
        Content::Absent => String::new(),
        Content::Text(t) => t.decode().into_owned(),
        Content::Blocks(blocks) => {
            let mut out = String::new();
            for b in blocks {
                if let Block::Text(t) = b {
                    if !out.is_empty() {
                        out.push_str("\n\n");
                    }
                    t.push_to(&mut out);
                }
            }
            out
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultFields {
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    is_error: Option<bool>,
}

/// Records what each tool call of an assistant message runs, by call id.
fn remember_calls(m: &Message, entry: &Entry, calls: &mut HashMap<String, String>) {
    let Content::Blocks(blocks) = &m.content else {
        return;
    };
    if !blocks.iter().any(|b| matches!(b, Block::ToolCall(_))) {
        return;
    }
    let Some(raw) = entry.message_raw() else {
        return;
    };
    #[derive(Deserialize)]
    struct Calls {
        #[serde(default)]
        content: Vec<Value>,
    }
    let Ok(parsed) = serde_json::from_str::<Calls>(raw.get()) else {
        return;
    };
    for block in parsed.content {
        if block.get("type").and_then(Value::as_str) != Some("toolCall") {
            continue;
        }
        let (Some(id), Some(args)) = (
            block.get("id").and_then(Value::as_str),
            block.get("arguments"),
        ) else {
            continue;
        };
        let ran = ["command", "path", "file_path", "pattern", "url"]
            .iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str));
        if let Some(ran) = ran {
            calls.insert(id.to_string(), ran.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use compactd_core::compaction::message::for_compaction;
    use compactd_core::compaction::test_session::{parse, path, SessionText};

    /// A source with what it borrowed copied, to outlive the session it was read from.
    #[derive(Debug)]
    struct Copied {
        entry_id: Option<String>,
        role: OwnedRole,
        text: String,
    }

    fn sources(text: &SessionText) -> Vec<Copied> {
        let jsonl = text.jsonl();
        let session = parse(&jsonl);
        let entries = path(&session);
        sources_of(
            entries
                .iter()
                .filter_map(|e| for_compaction(e).map(|m| (m, *e))),
        )
        .into_iter()
        .map(|s| Copied {
            entry_id: s.entry_id.map(str::to_string),
            role: s.role,
            text: s.text.into_owned(),
        })
        .collect()
    }

    #[test]
    fn messages_map_to_sources_with_their_entry_ids() {
        let text = SessionText::new()
            .user("Never push to main.")
            .assistant_blocks(json!([
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Running the tests."},
                {"type": "toolCall", "id": "call", "name": "bash", "arguments": {"command": "npm test"}}
            ]))
            .message(json!({
                "role": "toolResult", "toolCallId": "call", "toolName": "bash",
                "content": [{"type": "text", "text": "FAIL: 2 tests"}], "isError": true
            }))
            .bash("cargo build", "error[E0425]")
            .custom_message("an extension's note")
            .branch_summary("Tried another approach.");
        let s = sources(&text);
        let roles: Vec<_> = s.iter().map(|s| (s.entry_id.as_deref(), &s.role)).collect();
        assert_eq!(roles.len(), 5, "{s:?}");
        assert_eq!(roles[0], (Some("e0"), &OwnedRole::User));
        assert_eq!(s[1].text, "Running the tests.", "thinking is left out");
        assert_eq!(
            s[2].role,
            OwnedRole::ToolResult {
                is_error: true,
                tool_name: "bash".into(),
                call: Some("npm test".into()),
            }
        );
        assert_eq!(s[2].entry_id.as_deref(), Some("e2"));
        // A user's `!` command with exit code 0 is a success.
        assert_eq!(
            s[3].role,
            OwnedRole::ToolResult {
                is_error: false,
                tool_name: "bash".into(),
                call: Some("cargo build".into()),
            }
        );
        assert_eq!(s[4].role, OwnedRole::Summary);
    }

    #[test]
    fn a_text_that_needs_no_unescaping_is_borrowed_from_the_session() {
        let text = SessionText::new()
            .user("Never push to main.")
            .user("Line one\nline two")
            .assistant_blocks(json!([
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"}
            ]));
        let jsonl = text.jsonl();
        let session = parse(&jsonl);
        let entries = path(&session);
        let s = sources_of(
            entries
                .iter()
                .filter_map(|e| for_compaction(e).map(|m| (m, *e))),
        );
        assert!(matches!(s[0].text, Cow::Borrowed(_)), "{s:?}");
        assert!(matches!(s[1].text, Cow::Owned(_)), "unescaped: {s:?}");
        assert_eq!(s[1].text, "Line one\nline two");
        assert!(matches!(s[2].text, Cow::Owned(_)), "joined: {s:?}");
        assert_eq!(s[2].text, "a\n\nb");
    }

    #[test]
    fn the_previous_ledger_is_read_from_details_pinned() {
        let ledger = ledger_of(
            Ledger::default(),
            &[SessionSource {
                entry_id: Some("u1"),
                role: OwnedRole::User,
                text: "Never push to main.".into(),
            }],
            &["src/a.rs".to_string()],
        );
        let text = SessionText::new().user("hi").entry(
            "compaction",
            json!({"summary": "s", "firstKeptEntryId": "e0", "tokensBefore": 1,
                "details": {"readFiles": [], "modifiedFiles": [], "pinned": ledger.to_value()}}),
        );
        let jsonl = text.jsonl();
        let session = parse(&jsonl);
        let entries = path(&session);
        assert_eq!(previous_ledger(entries[1]), ledger);
        assert!(previous_ledger(entries[0]).is_empty());
    }
}
