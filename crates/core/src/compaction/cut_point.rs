//! Where to cut: keep roughly `keepRecentTokens` of the newest messages verbatim.

use crate::session::{Entry, EntryBody, Role};

use super::message::AgentMessage;
use super::tokens::estimate;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// Path index of the first entry kept verbatim.
    pub first_kept: usize,
    /// Path index of the user message that starts the turn being split.
    pub turn_start: Option<usize>,
    pub is_split_turn: bool,
}

/// An entry the kept region may start at: never a tool result, which must stay with
/// its tool call.
fn is_valid_cut_point(e: &Entry) -> bool {
    match &e.body {
        EntryBody::Message(m) => matches!(
            m.role,
            Role::User
                | Role::Assistant
                | Role::BashExecution
                | Role::Custom
                | Role::BranchSummary
                | Role::CompactionSummary
        ),
        EntryBody::CustomMessage { .. } | EntryBody::BranchSummary { .. } => true,
        _ => false,
    }
}

fn is_turn_start(e: &Entry) -> bool {
    match &e.body {
        EntryBody::Message(m) => matches!(m.role, Role::User | Role::BashExecution),
        EntryBody::CustomMessage { .. } | EntryBody::BranchSummary { .. } => true,
        _ => false,
    }
}

/// pi's `findTurnStartIndex`: the nearest turn start at or before `index`.
pub(crate) fn find_turn_start(path: &[&Entry], index: usize, start: usize) -> Option<usize> {
    (start..=index).rev().find(|&i| is_turn_start(path[i]))
}

/// pi's `findCutPoint` over `path[start..end]`, with divergence D1: when the budget is
/// reached inside a trailing run of tool results, cut at the last valid cut point
/// instead of the first (which would compact nothing).
pub fn find_cut_point(
    path: &[&Entry],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let first_valid = (start..end).find(|&i| is_valid_cut_point(path[i]));
    let Some(first_valid) = first_valid else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
            is_split_turn: false,
        };
    };

    let mut cut = first_valid;
    let mut accumulated = 0u64;
    for i in (start..end).rev() {
        let EntryBody::Message(m) = &path[i].body else {
            continue;
        };
        accumulated += estimate(AgentMessage::Stored(m));
        if accumulated >= keep_recent_tokens {
            cut = (i..end)
                .find(|&c| is_valid_cut_point(path[c]))
                .or_else(|| (start..end).rev().find(|&c| is_valid_cut_point(path[c])))
                .unwrap_or(first_valid);
            break;
        }
    }

    // Keep metadata that directly precedes the cut (model changes, labels, ...) with
    // the kept region; stop at messages and compactions.
    while cut > start {
        match path[cut - 1].body {
            EntryBody::Message(_) | EntryBody::Compaction(_) => break,
            _ => cut -= 1,
        }
    }

    let is_user = matches!(&path[cut].body, EntryBody::Message(m) if m.role == Role::User);
    let turn_start = if is_user {
        None
    } else {
        find_turn_start(path, cut, start)
    };
    CutPoint {
        first_kept: cut,
        turn_start,
        is_split_turn: turn_start.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_session::{parse, path, tokens, SessionText};
    use serde_json::json;

    /// The cut over the whole path of `s` with a `keep` token budget.
    fn cut(s: SessionText, keep: u64) -> CutPoint {
        let text = s.jsonl();
        let session = parse(&text);
        let path = path(&session);
        find_cut_point(&path, 0, path.len(), keep)
    }

    fn kept(first_kept: usize) -> CutPoint {
        CutPoint {
            first_kept,
            turn_start: None,
            is_split_turn: false,
        }
    }

    fn split(first_kept: usize, turn_start: usize) -> CutPoint {
        CutPoint {
            first_kept,
            turn_start: Some(turn_start),
            is_split_turn: true,
        }
    }

    #[test]
    fn user_assistant_bash_custom_and_summary_messages_are_valid_cut_points() {
        let text = SessionText::new()
            .user("u")
            .assistant("a")
            .bash("ls", "out")
            .message(json!({ "role": "custom", "customType": "n", "content": "c" }))
            .message(json!({ "role": "branchSummary", "summary": "b" }))
            .message(json!({ "role": "compactionSummary", "summary": "c" }))
            .custom_message("note")
            .branch_summary("branch")
            .jsonl();
        let session = parse(&text);
        assert!(session.entries.iter().all(is_valid_cut_point));
    }

    #[test]
    fn a_tool_result_is_never_a_valid_cut_point() {
        let text = SessionText::new().tool_result("r").jsonl();
        assert!(!is_valid_cut_point(&parse(&text).entries[0]));
    }

    #[test]
    fn compactions_and_metadata_are_not_valid_cut_points() {
        let text = SessionText::new()
            .compaction("s", "e0")
            .model_change()
            .label()
            .entry("thinking_level_change", json!({ "thinkingLevel": "high" }))
            .jsonl();
        let session = parse(&text);
        assert!(!session.entries.iter().any(is_valid_cut_point));
    }

    #[test]
    fn keep_recent_tokens_are_counted_from_the_newest_message() {
        let s = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .user(&tokens(100))
            .assistant(&tokens(100));
        // 100 + 100 reach 150 at index 2.
        assert_eq!(cut(s.clone(), 150), kept(2));
        assert_eq!(cut(s, 350), kept(0));
    }

    #[test]
    fn the_budget_is_reached_when_the_sum_equals_it() {
        let s = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .user(&tokens(100));
        // 100 reaches 100 at the newest user message; 101 needs the assistant too.
        assert_eq!(cut(s.clone(), 100), kept(2));
        assert_eq!(cut(s, 101), split(1, 0));
    }

    #[test]
    fn entries_other_than_messages_add_no_tokens_to_the_walk() {
        let s = SessionText::new()
            .user(&tokens(10))
            .assistant(&tokens(10))
            .custom_message(&tokens(1000))
            .user(&tokens(10));
        // Only the three messages count: 30 tokens are reached at index 0.
        assert_eq!(cut(s, 25).first_kept, 0);
    }

    #[test]
    fn a_cut_reached_at_a_tool_result_moves_forward_to_the_next_valid_cut_point() {
        let s = SessionText::new()
            .user(&tokens(10))
            .tool_call("bash", json!({}))
            .tool_result(&tokens(100))
            .assistant(&tokens(10));
        // The budget is reached at the tool result (index 2); the cut is the answer after it.
        assert_eq!(cut(s, 100), split(3, 0));
    }

    #[test]
    fn d1_a_budget_reached_in_trailing_tool_results_cuts_at_the_last_valid_cut_point() {
        let s = SessionText::new()
            .user(&tokens(10))
            .tool_call("bash", json!({}))
            .tool_result(&tokens(100))
            .tool_result(&tokens(100));
        // No valid cut point at or after index 2: the reference would cut at the first
        // one (index 0) and compact nothing; D1 cuts at the tool call.
        assert_eq!(cut(s, 150), split(1, 0));
    }

    #[test]
    fn a_budget_never_reached_cuts_at_the_first_valid_cut_point() {
        let s = SessionText::new()
            .tool_result(&tokens(1))
            .user(&tokens(1))
            .assistant(&tokens(1));
        assert_eq!(cut(s, 1000), kept(1));
    }

    #[test]
    fn no_valid_cut_point_cuts_at_the_boundary_start_without_a_split() {
        let text = SessionText::new()
            .tool_result(&tokens(100))
            .tool_result(&tokens(100))
            .tool_result(&tokens(100))
            .jsonl();
        let session = parse(&text);
        let path = path(&session);
        assert_eq!(find_cut_point(&path, 1, path.len(), 10), kept(1));
    }

    #[test]
    fn metadata_right_before_the_cut_stays_in_the_kept_region() {
        let s = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .model_change()
            .label()
            .user(&tokens(100));
        assert_eq!(cut(s, 100).first_kept, 2);
    }

    #[test]
    fn the_cut_moves_back_over_metadata_but_not_over_a_compaction() {
        let s = SessionText::new()
            .user(&tokens(100))
            .compaction("s", "e0")
            .label()
            .user(&tokens(100));
        assert_eq!(cut(s, 100).first_kept, 2);
    }

    #[test]
    fn a_cut_at_a_user_message_is_not_a_split_turn() {
        let s = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .user(&tokens(100))
            .assistant(&tokens(100));
        assert_eq!(cut(s, 200), kept(2));
    }

    #[test]
    fn a_cut_inside_a_turn_splits_it_at_the_turns_user_message() {
        let s = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .user(&tokens(100))
            .tool_call("bash", json!({}))
            .tool_result(&tokens(10))
            .assistant(&tokens(100));
        assert_eq!(cut(s, 100), split(5, 2));
    }

    #[test]
    fn a_bash_execution_starts_a_turn() {
        let s = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .bash("make", &tokens(100))
            .assistant(&tokens(100));
        assert_eq!(cut(s, 100), split(3, 2));
    }

    #[test]
    fn custom_message_and_branch_summary_entries_start_a_turn() {
        for s in [
            SessionText::new().custom_message("note"),
            SessionText::new().branch_summary("elsewhere"),
        ] {
            let s = s
                .tool_call("bash", json!({}))
                .tool_result(&tokens(10))
                .assistant(&tokens(100));
            assert_eq!(cut(s, 100), split(3, 0));
        }
    }

    #[test]
    fn a_turn_start_is_only_searched_back_to_the_boundary_start() {
        let text = SessionText::new()
            .user(&tokens(100))
            .assistant(&tokens(100))
            .assistant(&tokens(100))
            .jsonl();
        let session = parse(&text);
        let path = path(&session);
        assert_eq!(find_cut_point(&path, 1, path.len(), 100), kept(2));
        assert_eq!(find_cut_point(&path, 0, path.len(), 100), split(2, 0));
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::compaction::test_session::{any_path, parse, path, proptest_config};
    use proptest::prelude::*;

    fn message_tokens(e: &Entry) -> u64 {
        match &e.body {
            EntryBody::Message(m) => estimate(AgentMessage::Stored(m)),
            _ => 0,
        }
    }

    proptest! {
        #![proptest_config(proptest_config(512))]

        /// The kept region starts at a valid cut point, or at metadata right before one;
        /// at the boundary start only when there is no valid cut point. It starts exactly
        /// where the newest messages reach keepRecentTokens when that entry is a valid
        /// cut point, and a split turn starts at the nearest turn start.
        #[test]
        fn the_cut_is_a_valid_cut_point_that_keeps_the_budget(
            s in any_path(30),
            keep in prop_oneof![0..3000u64, (0..20u64).prop_map(|k| k * 50)],
            start in any::<prop::sample::Index>(),
        ) {
            let text = s.jsonl();
            let session = parse(&text);
            let path = path(&session);
            let start = start.index(path.len());
            let end = path.len();
            let cut = find_cut_point(&path, start, end, keep);
            prop_assert!((start..end).contains(&cut.first_kept));

            let valid = (cut.first_kept..end).find(|&i| is_valid_cut_point(path[i]));
            match valid {
                None => {
                    prop_assert!(!(start..end).any(|i| is_valid_cut_point(path[i])));
                    prop_assert_eq!(cut.first_kept, start);
                }
                Some(c) => prop_assert!(path[cut.first_kept..c]
                    .iter()
                    .all(|e| !matches!(e.body, EntryBody::Message(_) | EntryBody::Compaction(_)))),
            }

            // Where the newest messages first reach the budget.
            let mut sum = 0;
            let reached = (start..end).rev().find(|&i| {
                sum += message_tokens(path[i]);
                matches!(path[i].body, EntryBody::Message(_)) && sum >= keep
            });
            if let Some(i) = reached.filter(|&i| is_valid_cut_point(path[i])) {
                // The first message kept (metadata before it may be kept too).
                let first_message = (cut.first_kept..end)
                    .find(|&j| matches!(path[j].body, EntryBody::Message(_)));
                prop_assert_eq!(first_message, Some(i));
                let kept: u64 = path[i..].iter().map(|e| message_tokens(e)).sum();
                prop_assert!(kept >= keep);
            }

            prop_assert_eq!(cut.is_split_turn, cut.turn_start.is_some());
            if let Some(t) = cut.turn_start {
                prop_assert!((start..=cut.first_kept).contains(&t));
                prop_assert!(is_turn_start(path[t]));
                prop_assert!(!(t + 1..=cut.first_kept).any(|i| is_turn_start(path[i])));
                prop_assert!(
                    !matches!(&path[cut.first_kept].body, EntryBody::Message(m) if m.role == Role::User)
                );
            }
        }
    }
}
