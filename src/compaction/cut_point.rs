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
pub fn find_turn_start(path: &[&Entry], index: usize, start: usize) -> Option<usize> {
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
