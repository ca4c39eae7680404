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
        if !c.from_hook {
            file_ops.add_details(c.details);
        }
    }
    for m in prep.history_messages().chain(prep.turn_prefix_messages()) {
        file_ops.add_message(m);
    }
    Ok(Preparation { file_ops, ..prep })
}
