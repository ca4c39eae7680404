//! `targetTokens`: a context budget the compacted context must fit (the summary plus
//! the kept messages, counted as `tokensAfter` is), with the cut and the summary's
//! budget chosen here instead of by `keepRecentTokens` / `reserveTokens`.
//!
//! Decisions (pinned items first, then as many recent messages verbatim as fit):
//! * The pinned items are priced first, as the restored section would list them all
//!   (over the widest summarized span, which holds the most). The file lists the summary
//!   ends with and a small frame for its headings come next. What is left of the target
//!   is the tail: the cut keeps as many recent messages as fit in it, and at least the
//!   newest one (pi's cut never keeps less).
//! * The cut is found with pi's own `findCutPoint` by adjusting `keepRecentTokens` (a
//!   cut keeps up to one message more than asked): the whole tail first, then a binary
//!   search, a bounded number of linear preparations. A split turn is avoided when its
//!   whole turn fits; when it does not, its prefix is summarized with the history (one
//!   summary, no turn-prefix call and no split-turn heading: two summaries of one small
//!   budget would each pay for their own headings). `isSplitTurn` still says where the
//!   cut is.
//! * The summary gets everything the kept messages leave: `target − kept`. A model may
//!   drop pinned items and fill its budget, so with a model part of it (at most half, at
//!   most what the pinned items need) is held back for the restored section; the
//!   extractive summarizer states the pinned items itself and gets it all.

use compactd_core::compaction::file_ops::format_file_lists;
use compactd_core::compaction::message::for_context;
use compactd_core::compaction::prepare::{prepare_compaction, Preparation};
use compactd_core::compaction::tokens::estimate;
use compactd_core::compaction::{NotCompactable, Settings};
use compactd_core::session::Entry;

use super::{CompactPlan, SPLIT_TURN_HEADING};
use crate::pipeline::chunks::tokens_of;

/// Tokens kept for the summary's headings beside the pinned items.
const FRAME_TOKENS: u64 = 16;
/// Preparations tried for a cut that fits the tail (a binary search over 2^24 tokens).
const TRIES: usize = 24;

/// What a target left for the summary, carried to the summarizer stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The client's context budget.
    pub tokens: u64,
    /// What the pinned items would take restored (all of them).
    pub pinned_tokens: u64,
}

/// Estimated tokens of the messages a preparation keeps.
pub(super) fn kept_tokens(prep: &Preparation<'_, '_>) -> u64 {
    prep.path[prep.cut.first_kept..]
        .iter()
        .filter_map(|e| for_context(e))
        .map(estimate)
        .sum()
}

fn prefix_tokens(prep: &Preparation<'_, '_>) -> u64 {
    prep.turn_prefix_messages().map(estimate).sum()
}

/// The preparation whose kept messages fit `target` after the pinned items (priced by
/// `pinned_tokens`), and that price.
pub(super) fn fit<'s, 'a>(
    path: &'s [&'s Entry<'a>],
    target: u64,
    base: Settings,
    pinned_tokens: impl Fn(&Preparation<'s, 'a>) -> u64,
) -> Result<(Preparation<'s, 'a>, Target), (NotCompactable, f64)> {
    let with_keep = |keep: u64| Settings {
        keep_recent_tokens: keep.max(1),
        ..base
    };
    let widest = prepare_compaction(path, with_keep(1))?;
    let pinned = pinned_tokens(&widest);
    let files = tokens_of(&format_file_lists(&widest.file_ops.lists()));
    let tail = target.saturating_sub(pinned + files + FRAME_TOKENS);
    let fitted = Target {
        tokens: target,
        pinned_tokens: pinned,
    };
    // The largest `keepRecentTokens` whose cut keeps at most the tail: the whole tail
    // first (most cuts land within it), else a binary search (what a cut keeps grows
    // with what it is asked to keep).
    let mut best = widest;
    let (mut lo, mut hi) = (1, tail);
    let mut first = true;
    for _ in 0..TRIES {
        if lo >= hi {
            break;
        }
        let mid = if first {
            hi
        } else {
            lo + (hi - lo).div_ceil(2)
        };
        first = false;
        match prepare_compaction(path, with_keep(mid)) {
            Ok(p) if kept_tokens(&p) <= tail => {
                best = p;
                lo = mid;
            }
            // Keeps too much, or everything (then nothing would be summarized).
            Ok(_) | Err((NotCompactable::NothingToSummarize, _)) => hi = mid - 1,
            Err(e) => return Err(e),
        }
    }
    if best.cut.is_split_turn {
        let whole = kept_tokens(&best) + prefix_tokens(&best);
        if whole <= tail {
            if let Ok(p) = prepare_compaction(path, with_keep(whole)) {
                if !p.cut.is_split_turn && kept_tokens(&p) <= whole {
                    best = p;
                }
            }
        }
    }
    Ok((best, fitted))
}

/// `reserveTokens` whose summary budget (four fifths of it) is `summary_tokens`.
pub(super) fn reserve_for(summary_tokens: u64) -> u64 {
    summary_tokens.saturating_mul(5).div_ceil(4)
}

/// The `reserveTokens` of the history and the turn-prefix summaries under a target: what
/// the kept messages and the file lists leave, less the room held back for restoring
/// pinned items a model may drop (see `target`); a turn prefix takes at most its own
/// length and half of that, the history the rest.
pub(super) fn reserves(plan: &CompactPlan, t: Target, extractive: bool) -> (u64, u64) {
    let files = tokens_of(&format_file_lists(&plan.details));
    let split = if plan.turn_prefix.is_some() {
        tokens_of(SPLIT_TURN_HEADING)
    } else {
        0
    };
    let room = t
        .tokens
        .saturating_sub(plan.kept_tokens)
        .saturating_sub(files + split);
    let held = if extractive || !plan.checking.pin {
        0
    } else {
        t.pinned_tokens.min(room / 2)
    };
    let room = room - held;
    let (history, prefix) = match (&plan.turn_prefix, plan.history_messages > 0) {
        (Some(p), true) => {
            let prefix = tokens_of(p).min(room / 2);
            (room - prefix, prefix)
        }
        (Some(_), false) => (0, room),
        (None, _) => (room, 0),
    };
    (reserve_for(history.max(1)), reserve_for(prefix.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::templates::four_fifths;

    #[test]
    fn the_reserve_gives_exactly_the_summary_budget() {
        for s in [0, 1, 2, 3, 4, 7, 99, 100, 101, 555, 16_383] {
            assert_eq!(four_fifths(reserve_for(s)), s, "{s}");
        }
    }
}
