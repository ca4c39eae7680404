//! The user's requests in the summary: the objective in force (the first request and the
//! latest) under the goal, the requests in between with the progress, and a long message
//! quoted by its opening and the pinned statements it holds.

use super::super::facts::Facts;
use super::super::layout::{Sec, KEEP, PINNED};
use super::super::pinned::standing;
use super::super::text::{collapse_ws, shorten};
use super::Builder;
use compactd_core::compaction::ledger::is_labelled;
use compactd_core::session::text::utf16_len;

/// The longest a request between the first and the latest is quoted (pasted material
/// after an instruction is what gets cut).
const REQUEST_CHARS: usize = 240;
/// The longest an earlier request is listed with the progress: one line.
const DONE_CHARS: usize = 160;
/// Goals an earlier summary stated that stay under the goal (the rest is context).
const EARLIER_GOALS: usize = 2;
/// How a summary of ours names the latest request.
const LATEST: &str = "Latest request: ";

/// An earlier summary's goal, as the objective in force: its first goals stay (at most
/// [`EARLIER_GOALS`]), further ones are context; its latest request is an earlier request
/// once this span has one of its own.
pub(super) fn earlier_goal_items(b: &mut Builder, f: &Facts) {
    let newer_request = f.real_requests().next().is_some();
    let mut kept = 0;
    for e in f.earlier.iter().filter(|e| e.sec == Sec::Goal) {
        if let Some(request) = e.text.strip_prefix(LATEST).filter(|_| newer_request) {
            b.add(Sec::Done, shorten(request, DONE_CHARS), 9, false);
        } else if kept < EARLIER_GOALS || e.raw {
            kept += usize::from(!e.raw);
            b.add_item(Sec::Goal, e.text.clone(), e.raw, 9, true, Vec::new());
        } else {
            b.add(Sec::Critical, format!("Earlier goal: {}", e.text), 7, true);
        }
    }
}

/// The goal: the first real request (unless an earlier summary states the goal) and the
/// latest one; every request in between is listed with the progress (a task of the
/// checklist), or with
/// the standing statements when it carries one, verbatim (long ones cut to their opening
/// and their pinned statements): the user's instructions are what a continuing agent can
/// least reconstruct, so they go last of all but the pinned statements, the oldest first.
/// Chit-chat and pasted output are not requests.
pub(super) fn request_items(b: &mut Builder, f: &Facts, lead_kept: bool) {
    let real: Vec<&String> = f.real_requests().collect();
    let all_first = f.requests.first();
    // With no real request at all, the first message is still what the session is about.
    // Under an earlier summary's goal, this span's first request is no goal of its own:
    // it is progress, like the requests after it, and only its latest request is the
    // objective in force.
    let first = if lead_kept {
        real.first().copied().or(all_first)
    } else {
        None
    };
    let latest = if lead_kept {
        (real.len() > 1).then(|| real[real.len() - 1])
    } else {
        real.last().copied()
    };
    // An instruction that carries a pinned statement is pinned itself: it says the
    // statement in the user's words, with its context, and the statement is not repeated
    // (see `standing_items`).
    let statements: Vec<String> = standing(&f.ledger)
        .iter()
        .filter(|i| !is_labelled(&i.text))
        .map(|i| collapse_ws(&i.text))
        .collect();
    if let Some(first) = first {
        let tier = KEEP;
        let shorter = [300, 160, 80, 40]
            .iter()
            .map(|&n| quote(first, n, &statements))
            .collect();
        b.add_item(
            Sec::Goal,
            quote(first, 800, &statements),
            false,
            tier,
            false,
            shorter,
        );
    }
    for (n, r) in f.instructions().enumerate() {
        if Some(&r) == first || Some(&r) == latest {
            continue;
        }
        // The goal is the objective in force, not a log: a request between the first and
        // the latest is progress (done, or replaced by the latest), and one that carries a
        // standing statement is that statement in the user's words.
        let text = quote(&r, REQUEST_CHARS, &statements);
        if statements.iter().any(|st| text.contains(st.as_str())) {
            b.quoted.push(text.clone());
            b.add_ordered(Sec::Constraints, text, PINNED, usize::MAX / 2 + n, None);
        } else {
            let asked = quote(&r, DONE_CHARS, &statements);
            match f.outcome_of(&r) {
                // The outcome is the first thing to go when room is short.
                Some(outcome) => {
                    b.add_detailed(Sec::Done, format!("{asked} → {outcome}"), asked, 9)
                }
                None => b.add(Sec::Done, asked, 9, false),
            }
        }
    }
    if let Some(latest) = latest {
        let shorter = [300, 160, 80]
            .iter()
            .map(|&n| format!("{LATEST}{}", quote(latest, n, &statements)))
            .collect();
        let text = format!("{LATEST}{}", quote(latest, 600, &statements));
        b.add_item(Sec::Goal, text, false, KEEP, false, shorter);
    }
}

/// A user message quoted within `max` units: whole when it fits; else its opening and
/// then the pinned statements it holds, wherever they stand in it, so a rule at the end
/// of a long message is not what the cut takes.
fn quote(message: &str, max: usize, statements: &[String]) -> String {
    let text = collapse_ws(message);
    if utf16_len(&text) <= max {
        return text;
    }
    let mut held: Vec<(usize, &str)> = statements
        .iter()
        .filter_map(|st| text.find(st.as_str()).map(|at| (at, st.as_str())))
        .collect();
    held.sort_unstable();
    // Statements the opening already shows are not repeated.
    let head_len = max / 3;
    let head = shorten(&text, head_len.max(40));
    let head_core = head.trim_end_matches('…');
    let rest: Vec<&str> = held
        .into_iter()
        .filter(|(at, st)| at + st.len() > head_core.len())
        .map(|(_, st)| st)
        .collect();
    if rest.is_empty() {
        return shorten(&text, max);
    }
    let mut out = head.clone();
    for st in rest {
        let next = format!("{out} {st}");
        if utf16_len(&next) > max {
            break;
        }
        out = next;
    }
    if out == head {
        // Not even one fits beside the opening: the statement alone, cut.
        return shorten(rest_first(&text, statements, head_core.len()), max);
    }
    out
}

/// The first pinned statement of `text` that starts at or after `from`.
fn rest_first<'a>(text: &'a str, statements: &[String], from: usize) -> &'a str {
    statements
        .iter()
        .filter_map(|st| text.find(st.as_str()).filter(|&at| at + st.len() > from))
        .min()
        .map_or(text, |at| &text[at..])
}
