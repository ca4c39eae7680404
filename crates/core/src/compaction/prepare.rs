//! Preparing a compaction: everything up to the summarizer call (pi's
//! `prepareCompaction`, with D1 and D4).

use std::ops::Range;

use crate::session::{Entry, EntryBody, Text};

use super::context::{context_messages, context_tokens};
use super::cut_point::{find_cut_point, CutPoint};
use super::file_ops::FileOps;
use super::message::{for_compaction, AgentMessage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            keep_recent_tokens: 20_000,
            reserve_tokens: 16_384,
        }
    }
}

/// Why a path cannot be compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotCompactable {
    /// The path has no entries.
    Empty,
    /// The newest entry is already a compaction.
    AlreadyCompacted,
    /// The cut leaves nothing before it to summarize (D4).
    NothingToSummarize,
}

impl NotCompactable {
    pub fn reason(self) -> &'static str {
        match self {
            NotCompactable::Empty => "the session has no entries",
            NotCompactable::AlreadyCompacted => "the newest entry is already a compaction",
            NotCompactable::NothingToSummarize => {
                "everything on the path fits in keepRecentTokens: nothing before the cut to summarize"
            }
        }
    }
}

/// A prepared compaction over a path.
#[derive(Debug)]
pub struct Preparation<'s, 'a> {
    pub path: &'s [&'s Entry<'a>],
    pub settings: Settings,
    pub boundary_start: usize,
    /// Path index of the previous compaction, if any.
    pub previous_compaction: Option<usize>,
    pub previous_summary: Option<&'s Text<'a>>,
    pub cut: CutPoint,
    pub tokens_before: f64,
    /// Path indexes whose messages are summarized as history.
    pub history: Range<usize>,
    /// Path indexes of the split turn's prefix (empty unless split).
    pub turn_prefix: Range<usize>,
    pub file_ops: FileOps,
}

impl<'s, 'a> Preparation<'s, 'a> {
    pub fn first_kept(&self) -> &'s Entry<'a> {
        self.path[self.cut.first_kept]
    }

    pub fn history_messages(&self) -> impl Iterator<Item = AgentMessage<'s, 'a>> + '_ {
        self.path[self.history.clone()]
            .iter()
            .filter_map(|e| for_compaction(e))
    }

    pub fn turn_prefix_messages(&self) -> impl Iterator<Item = AgentMessage<'s, 'a>> + '_ {
        self.path[self.turn_prefix.clone()]
            .iter()
            .filter_map(|e| for_compaction(e))
    }

    /// Entries whose content the summary replaces: history and turn prefix, in order.
    pub fn summarized_entries(&self) -> impl Iterator<Item = &'s Entry<'a>> + '_ {
        self.path[self.history.clone()]
            .iter()
            .chain(&self.path[self.turn_prefix.clone()])
            .copied()
    }
}

/// Tokens of the path's context (`tokensBefore`).
pub fn tokens_before(path: &[&Entry]) -> f64 {
    context_tokens(&context_messages(path))
}

/// The latest compaction on the path and where the not-yet-summarized region starts:
/// at that compaction's first kept entry, or right after it when that entry is not
/// on the path; 0 without a compaction.
pub fn boundary(path: &[&Entry]) -> (Option<usize>, usize) {
    let Some(pi) = path
        .iter()
        .rposition(|e| matches!(e.body, EntryBody::Compaction(_)))
    else {
        return (None, 0);
    };
    let kept = path[pi]
        .compaction()
        .and_then(|c| c.first_kept_entry_id.as_deref())
        .and_then(|id| path.iter().position(|e| e.id() == Some(id)));
    (Some(pi), kept.unwrap_or(pi + 1))
}

pub fn prepare_compaction<'s, 'a>(
    path: &'s [&'s Entry<'a>],
    settings: Settings,
) -> Result<Preparation<'s, 'a>, (NotCompactable, f64)> {
    let tokens = tokens_before(path);
    let Some(last) = path.last() else {
        return Err((NotCompactable::Empty, tokens));
    };
    if matches!(last.body, EntryBody::Compaction(_)) {
        return Err((NotCompactable::AlreadyCompacted, tokens));
    }

    let (previous_compaction, boundary_start) = boundary(path);
    let previous_summary = previous_compaction
        .and_then(|pi| path[pi].compaction())
        .map(|c| &c.summary);

    let cut = find_cut_point(
        path,
        boundary_start,
        path.len(),
        settings.keep_recent_tokens,
    );
    let history_end = match cut.turn_start {
        Some(t) if cut.is_split_turn => t,
        _ => cut.first_kept,
    };
    let history = boundary_start..history_end.max(boundary_start);
    let turn_prefix = match cut.turn_start {
        Some(t) if cut.is_split_turn => t..cut.first_kept,
        _ => cut.first_kept..cut.first_kept,
    };

    let prep = Preparation {
        path,
        settings,
        boundary_start,
        previous_compaction,
        previous_summary,
        cut,
        tokens_before: tokens,
        history,
        turn_prefix,
        file_ops: FileOps::default(),
    };
    if prep.history_messages().next().is_none() && prep.turn_prefix_messages().next().is_none() {
        return Err((NotCompactable::NothingToSummarize, tokens));
    }
    let mut file_ops = FileOps::default();
    if let Some(pi) = previous_compaction {
        let c = path[pi]
            .compaction()
            .expect("rposition matched a compaction");
        file_ops.add_details(c.details, c.from_hook);
    }
    for m in prep.history_messages().chain(prep.turn_prefix_messages()) {
        file_ops.add_message(m);
    }
    Ok(Preparation { file_ops, ..prep })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_session::{parse, path, tokens, SessionText};
    use serde_json::json;

    fn keep(keep_recent_tokens: u64) -> Settings {
        Settings {
            keep_recent_tokens,
            ..Settings::default()
        }
    }

    /// Four messages of 100 tokens: user, assistant, user, assistant.
    fn two_turns() -> SessionText {
        SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .user(&tokens(100))
            .assistant(&tokens(100))
    }

    #[test]
    fn an_empty_path_is_not_compactable() {
        let err = prepare_compaction(&[], Settings::default()).unwrap_err();
        assert_eq!(err.0, NotCompactable::Empty);
    }

    #[test]
    fn a_path_ending_in_a_compaction_is_not_compactable() {
        let text = two_turns().compaction("s", "e2").jsonl();
        let session = parse(&text);
        let err = prepare_compaction(&path(&session), keep(1)).unwrap_err();
        assert_eq!(err.0, NotCompactable::AlreadyCompacted);
    }

    #[test]
    fn d4_a_path_within_keep_recent_tokens_has_nothing_to_summarize() {
        let text = two_turns().jsonl();
        let session = parse(&text);
        let (why, tokens) = prepare_compaction(&path(&session), keep(20_000)).unwrap_err();
        assert_eq!(why, NotCompactable::NothingToSummarize);
        assert_eq!(tokens, 400.0, "tokensBefore is reported all the same");
    }

    #[test]
    fn the_history_is_everything_before_the_first_kept_entry() {
        let text = two_turns().jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(150)).unwrap();
        assert_eq!(prep.cut.first_kept, 2);
        assert!(!prep.cut.is_split_turn);
        assert_eq!(prep.history, 0..2);
        assert!(prep.turn_prefix.is_empty());
        assert_eq!(prep.first_kept().id(), Some("e2"));
    }

    #[test]
    fn a_split_turn_summarizes_the_history_before_the_turn_and_the_turn_prefix_apart() {
        let text = two_turns().jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(100)).unwrap();
        assert!(prep.cut.is_split_turn);
        assert_eq!(prep.history, 0..2);
        assert_eq!(prep.turn_prefix, 2..3);
        assert_eq!(prep.history_messages().count(), 2);
        assert_eq!(prep.turn_prefix_messages().count(), 1);
    }

    #[test]
    fn tokens_before_is_the_context_of_the_whole_path() {
        let text = two_turns().jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(150)).unwrap();
        assert_eq!(prep.tokens_before, 400.0);
    }

    /// Two turns, a compaction keeping the second, then a third turn.
    fn compacted_once(first_kept: &str) -> SessionText {
        two_turns()
            .compaction("the earlier work", first_kept)
            .user(&tokens(100))
            .assistant(&tokens(100))
    }

    #[test]
    fn preparation_starts_at_the_previous_compactions_first_kept_entry() {
        let text = compacted_once("e2").jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(150)).unwrap();
        assert_eq!(prep.previous_compaction, Some(4));
        assert_eq!(prep.boundary_start, 2);
        assert_eq!(prep.cut.first_kept, 5);
        // The compaction itself gives no message to summarize.
        assert_eq!(prep.history, 2..5);
        assert_eq!(prep.history_messages().count(), 2);
    }

    #[test]
    fn preparation_starts_after_the_previous_compaction_when_its_kept_entry_is_off_the_path() {
        let text = compacted_once("nowhere").jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(100)).unwrap();
        assert_eq!(prep.boundary_start, 5);
        // Only the new turn is left to cut: the budget is never reached.
        assert_eq!(
            prepare_compaction(&path, keep(1000)).unwrap_err().0,
            NotCompactable::NothingToSummarize
        );
    }

    #[test]
    fn the_previous_compactions_summary_is_carried() {
        let text = compacted_once("e2").jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(150)).unwrap();
        assert_eq!(
            prep.previous_summary.map(|s| s.decode().into_owned()),
            Some("the earlier work".to_string())
        );
    }

    #[test]
    fn an_empty_branch_summary_is_still_a_message_to_summarize() {
        let text = SessionText::new()
            .branch_summary("")
            .user(&tokens(100))
            .user(&tokens(100))
            .jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(100)).unwrap();
        assert_eq!(prep.history, 0..2);
        assert_eq!(prep.history_messages().count(), 2);
    }

    #[test]
    fn file_operations_come_from_the_history_the_turn_prefix_and_the_previous_details() {
        let text = SessionText::new()
            .user(&tokens(100))
            .entry(
                "compaction",
                json!({
                    "summary": "s", "firstKeptEntryId": "e0", "tokensBefore": 1,
                    "details": { "readFiles": ["old-read"], "modifiedFiles": ["old-mod"] }
                }),
            )
            .tool_call("read", json!({ "path": "history.rs" }))
            .tool_result("ok")
            .user(&tokens(100))
            .tool_call("edit", json!({ "path": "prefix.rs" }))
            .tool_result("ok")
            .assistant(&tokens(100))
            .jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(100)).unwrap();
        assert_eq!(prep.turn_prefix, 4..7);
        let lists = prep.file_ops.lists();
        assert_eq!(lists.read_files, ["history.rs", "old-read"]);
        assert_eq!(lists.modified_files, ["old-mod", "prefix.rs"]);
    }

    /// The read files a compaction with these `details` and `fromHook` passes on to the
    /// next one (one message after it, so there is something to summarize).
    fn carried_reads(details: serde_json::Value, from_hook: bool) -> Vec<String> {
        let text = SessionText::new()
            .user(&tokens(100))
            .entry(
                "compaction",
                json!({
                    "summary": "s", "firstKeptEntryId": "e0", "tokensBefore": 1,
                    "details": details, "fromHook": from_hook
                }),
            )
            .user(&tokens(100))
            .jsonl();
        let session = parse(&text);
        let path = path(&session);
        let prep = prepare_compaction(&path, keep(100)).unwrap();
        prep.file_ops.lists().read_files
    }

    #[test]
    fn details_of_a_previous_compaction_from_another_extension_are_not_carried() {
        // pi's rule for hook entries: their details are the extension's own business.
        let lists = json!({ "readFiles": ["old-read"], "modifiedFiles": [] });
        assert!(carried_reads(lists.clone(), true).is_empty());
        assert_eq!(carried_reads(lists, false), ["old-read"]);
        // Look-alikes of compactd's marks are someone else's too.
        for details in [
            json!({ "readFiles": ["old-read"], "producer": "other" }),
            json!({ "readFiles": ["old-read"], "pinned": ["a", "b"] }),
            json!({ "readFiles": ["old-read"], "pinned": { "version": "1", "items": [] } }),
            json!({ "readFiles": ["old-read"], "pinned": { "version": 1 } }),
        ] {
            assert!(carried_reads(details.clone(), true).is_empty(), "{details}");
        }
    }

    #[test]
    fn d7_details_compactd_wrote_are_carried_from_a_hook_entry() {
        // What pi stores when compactd answered through the extension hook: marked …
        let marked = json!({
            "readFiles": ["a.rs", "b.rs"], "modifiedFiles": [],
            "pinned": { "version": 1, "items": [] }, "producer": "compactd"
        });
        assert_eq!(carried_reads(marked, true), ["a.rs", "b.rs"]);
        // … or, written before the mark, recognised by its pinned ledger.
        let ledger_only = json!({
            "readFiles": ["a.rs"], "modifiedFiles": [], "pinned": { "version": 1, "items": [] }
        });
        assert_eq!(carried_reads(ledger_only, true), ["a.rs"]);
        let mark_only = json!({ "readFiles": ["a.rs"], "producer": "compactd" });
        assert_eq!(carried_reads(mark_only, true), ["a.rs"]);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::compaction::test_session::{any_path, parse, path, proptest_config};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(proptest_config(256))]

        /// History and turn prefix together are exactly the entries from the boundary
        /// start to the first kept entry, and hold at least one message (D4).
        #[test]
        fn the_summarized_entries_run_from_the_boundary_to_the_first_kept_entry(
            s in any_path(30),
            keep in 0..3000u64,
        ) {
            let text = s.jsonl();
            let session = parse(&text);
            let path = path(&session);
            if let Ok(prep) = prepare_compaction(&path, Settings { keep_recent_tokens: keep, ..Settings::default() }) {
                let summarized: Vec<*const Entry> =
                    prep.summarized_entries().map(|e| e as *const Entry).collect();
                let expected: Vec<*const Entry> = path[prep.boundary_start..prep.cut.first_kept]
                    .iter()
                    .map(|e| *e as *const Entry)
                    .collect();
                prop_assert_eq!(summarized, expected);
                prop_assert!(prep.history_messages().chain(prep.turn_prefix_messages()).next().is_some());
                prop_assert_eq!(prep.tokens_before, tokens_before(&path));
            }
        }
    }
}
