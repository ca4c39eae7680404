//! The static fallback summary and the failure's error text (section 12 of
//! `docs/hermes.md`; hermes 0.19.0 `_build_static_fallback_summary` 1923–2115).
//!
//! When the summarizer fails and the pipeline does not abort, hermes writes a summary
//! locally from the turns it drops: the last user ask, the actions and tool results, the
//! paths mentioned, error lines and the last dropped turns. [`build`] gathers the same data
//! the same way and fills our wording of that template (`prompts/hermes/fallback.md`).
//!
//! Design decisions:
//! * The data formats (`User asked: …`, `1. …`, `- …`, `None.`, the failure reason
//!   sentence) are hermes's, written by code, so the conformance harness can lift the slot
//!   values out of hermes's output and refill our text with them (`prompts/hermes/README.md`).
//! * Tool calls are read as hermes iterates them: a list's items, a string's characters
//!   and an object's keys all count as calls (the last two as calls without a name).
//! * The 8,000-character cut counts the prefix, as hermes's does.

use serde_json::Value;

use crate::answer::{redact_if, with_prefix};
use crate::py;
use crate::texts::{fill, HermesTexts};
use crate::Switches;

mod gather;

use gather::Gathered;

/// Longest error text reported; longer ones are cut to [`ERROR_CUT`] + `...`.
const ERROR_MAX: usize = 220;
const ERROR_CUT: usize = 217;

/// Longest fallback summary, prefix included; the cut keeps the marker within it.
const SUMMARY_MAX: usize = 8000;
const SUMMARY_CUT: usize = 7958;
const SUMMARY_TRUNCATED: &str = "\n...[fallback summary truncated]";

/// `{task}` when no user ask was dropped.
pub(crate) const UNKNOWN_TASK: &str = "Unknown from deterministic fallback.";
/// `{completed}` when no action was dropped.
pub(crate) const NO_COMPLETED: &str = "None recoverable from compacted turns.";
/// An empty bullet list.
const NONE: &str = "None.";

const MAX_FILES: usize = 12;
const MAX_DROPPED: usize = 8;
const MAX_COMPLETED: usize = 12;
const MAX_BLOCKERS: usize = 5;

/// The error text of a failure as hermes reports it: the message stripped, and when over
/// 220 code points, its first 217 right-stripped + `...`. (hermes writes the exception's
/// type name for an empty message; compactd's failures always have a message.)
pub fn error_text(message: &str) -> String {
    let text = py::strip(message);
    if py::len(text) > ERROR_MAX {
        format!("{}...", py::rstrip(py::head(text, ERROR_CUT)))
    } else {
        text.to_string()
    }
}

/// The static fallback summary of `turns` (prefix included), with the failure `reason`.
/// `previous_summary` is the state's (or the one found in the messages); a non-empty one
/// adds the note that an earlier summary existed.
pub fn build(
    turns: &[Value],
    previous_summary: Option<&str>,
    reason: Option<&str>,
    texts: &HermesTexts,
    opts: &Switches,
) -> String {
    let s = Slots::gather(turns, previous_summary, reason, opts);
    let previous_note = if s.previous_note {
        format!("\n\n{}", texts.fallback_note)
    } else {
        String::new()
    };
    let body = fill(
        &texts.fallback,
        &[
            ("task", &s.task),
            ("previous_note", &previous_note),
            ("completed", &s.completed),
            ("blockers", &s.blockers),
            ("files", &s.files),
            ("dropped", &s.dropped),
            ("count", &s.count),
            ("reason", &s.reason),
        ],
    );
    let summary = with_prefix(&redact_if(py::strip(&body), opts), texts);
    if py::len(&summary) > SUMMARY_MAX {
        format!(
            "{}{SUMMARY_TRUNCATED}",
            py::rstrip(py::head(&summary, SUMMARY_CUT))
        )
    } else {
        summary
    }
}

/// The values of the fallback's slots, each written as hermes writes its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slots {
    /// `User asked: pyrepr(last ask)`, or [`UNKNOWN_TASK`].
    pub task: String,
    /// Whether the note that a previous summary existed goes in.
    pub previous_note: bool,
    /// `1. …` lines (actions, then tool actions, at most 12), or [`NO_COMPLETED`].
    pub completed: String,
    /// `- …` lines (at most 5), or `None.`.
    pub blockers: String,
    /// `- …` lines (at most 12), or `None.`.
    pub files: String,
    /// `- LABEL: …` lines (the last 8), or `None.`.
    pub dropped: String,
    /// The number of turns.
    pub count: String,
    /// ` Summary failure reason: {reason}.`, or `""`.
    pub reason: String,
}

impl Slots {
    /// Gathers the slot values from the dropped `turns`.
    pub fn gather(
        turns: &[Value],
        previous_summary: Option<&str>,
        reason: Option<&str>,
        opts: &Switches,
    ) -> Slots {
        let mut data = Gathered::default();
        let calls = data.pass_a(turns, opts);
        data.pass_b(turns, &calls, opts);
        let completed: Vec<String> = data
            .actions
            .iter()
            .chain(&data.tool_actions)
            .take(MAX_COMPLETED)
            .enumerate()
            .map(|(i, item)| format!("{}. {item}", i + 1))
            .collect();
        Slots {
            task: match data.asks.last() {
                Some(ask) => format!("User asked: {}", py::repr_str(ask)),
                None => UNKNOWN_TASK.to_string(),
            },
            previous_note: previous_summary.is_some_and(|p| !p.is_empty()),
            completed: if completed.is_empty() {
                NO_COMPLETED.to_string()
            } else {
                completed.join("\n")
            },
            blockers: bullets(&data.blockers, MAX_BLOCKERS),
            files: bullets(&data.files, MAX_FILES),
            dropped: bullets(&data.dropped, MAX_DROPPED),
            count: turns.len().to_string(),
            reason: match reason {
                Some(r) if !r.is_empty() => format!(" Summary failure reason: {r}."),
                _ => String::new(),
            },
        }
    }
}

/// `_bullets`: the first `limit` distinct non-blank items, stripped, as `- item` lines,
/// or `None.`.
fn bullets(items: &[String], limit: usize) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for item in items {
        let item = py::strip(item);
        if item.is_empty() || unique.contains(&item) {
            continue;
        }
        unique.push(item);
        if unique.len() >= limit {
            break;
        }
    }
    if unique.is_empty() {
        return NONE.to_string();
    }
    unique
        .iter()
        .map(|item| format!("- {item}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
