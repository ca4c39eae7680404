//! Pinned items: the ledger of what is being summarized (`compaction::ledger::extract`
//! over the transcript's parts), so the summary states the user's rules, constraints,
//! preferences, facts and the decisions verbatim, exactly as the verification after the
//! summary looks for them.
//!
//! The transcript carries no entry ids, so items have none here; the pipeline's own
//! ledger (built from the session entries) is the one that travels in `details.pinned`.

use std::collections::VecDeque;

use super::diagnostics::{command_error, tool_error};
use super::transcript::{
    classify_user, parse_calls, split_parts, strip_truncation, Call, CallKind, Label, UserPart,
};
use compactd_core::compaction::ledger::{extract, Kind, Ledger, PinnedItem, Source, SourceRole};

/// One part as the ledger reads it, with the strings it needs owned.
enum Piece<'a> {
    Carried(&'a str),
    User(&'a str),
    Assistant(&'a str),
    Summary(&'a str),
    Result {
        tool: String,
        call: Option<String>,
        failed: bool,
        text: &'a str,
    },
}

/// The ledger of a serialized conversation (files modified are pinned too), after the
/// statements an earlier summary carried.
pub(super) fn ledger_of(carried: &[&str], conversation: &str, modified: &[String]) -> Ledger {
    let mut pieces: Vec<Piece<'_>> = carried.iter().map(|t| Piece::Carried(t)).collect();
    let mut pending: VecDeque<Call> = VecDeque::new();
    for part in split_parts(conversation) {
        match part.label {
            Label::User => pieces.push(match classify_user(part.text) {
                UserPart::Request(t) => Piece::User(t),
                UserPart::Summary(t) => Piece::Summary(t),
                UserPart::Bash {
                    command,
                    output,
                    exit_code,
                } => Piece::Result {
                    tool: "bash".into(),
                    failed: command_error(&command, output, exit_code).is_some(),
                    call: Some(command),
                    text: output,
                },
            }),
            Label::Assistant => pieces.push(Piece::Assistant(part.text)),
            Label::Thinking => {}
            Label::ToolCalls => pending = parse_calls(part.text).into(),
            Label::ToolResult => {
                let output = strip_truncation(part.text);
                let call = pending.pop_front();
                let (tool, what, failed) = match &call {
                    Some(c) if c.kind() == CallKind::Bash && c.command().is_some() => {
                        let command = c.command().unwrap_or_default();
                        let failed = command_error(&command, output, None).is_some();
                        (c.name.clone(), Some(command), failed)
                    }
                    Some(c) => (c.name.clone(), c.path(), tool_error(output).is_some()),
                    None => ("tool".to_string(), None, tool_error(output).is_some()),
                };
                pieces.push(Piece::Result {
                    tool,
                    call: what,
                    failed,
                    text: output,
                });
            }
        }
    }
    let sources: Vec<Source<'_>> = pieces
        .iter()
        .map(|p| match p {
            Piece::Carried(t) => source(SourceRole::Carried, t),
            Piece::User(t) => source(SourceRole::User, t),
            Piece::Assistant(t) => source(SourceRole::Assistant, t),
            Piece::Summary(t) => source(SourceRole::Summary, t),
            Piece::Result {
                tool,
                call,
                failed,
                text,
            } => source(
                SourceRole::ToolResult {
                    is_error: *failed,
                    tool_name: tool,
                    call: call.as_deref(),
                },
                text,
            ),
        })
        .collect();
    extract(&sources, modified)
}

fn source<'a>(role: SourceRole<'a>, text: &'a str) -> Source<'a> {
    Source {
        entry_id: None,
        role,
        text,
    }
}

/// The active items of the kinds a summary states verbatim, oldest first: rules,
/// constraints, preferences, goal states and facts.
pub(super) fn standing(ledger: &Ledger) -> Vec<&PinnedItem> {
    ledger
        .active()
        .filter(|i| {
            matches!(
                i.kind,
                Kind::Rule | Kind::Constraint | Kind::Preference | Kind::Goal | Kind::Fact
            )
        })
        .collect()
}

/// The active decisions, oldest first.
pub(super) fn decisions(ledger: &Ledger) -> impl Iterator<Item = &str> {
    ledger
        .active()
        .filter(|i| i.kind == Kind::Decision)
        .map(|i| i.text.as_str())
}

/// The errors the ledger holds open (no later success of the same call), oldest first.
pub(super) fn open_errors(ledger: &Ledger) -> impl Iterator<Item = &str> {
    ledger
        .active()
        .filter(|i| i.kind == Kind::Error)
        .map(|i| i.text.as_str())
}
