//! Where the summarized window starts and ends (contract sections 4 and 7): the protected
//! head and its decay, the two tool-group alignments, and the token-budget tail cut with
//! its last-user and last-visible-assistant anchors.
//!
//! The window is `messages[compressStart..compressEnd]` with
//! `compressStart = align_forward(head_size(…))` and `compressEnd = tail_cut(…, compressStart, …)`.
//!
//! Design decisions:
//! * Each function is hermes's method of the same role, step for step, including the
//!   steps that look redundant (the soft walk, then the raw re-walk, then the fallback),
//!   because each changes the cut for some list.
//! * [`tail_cut`] can return `n` (everything after the head is summarized) and `n + 1`
//!   when the head already covers the list (`h ≥ n`). hermes returns the same; the
//!   caller treats `compressStart ≥ n` as H2, so the value is kept, not clamped.
//! * Messages that are not objects, or have no string role, have no role here (H1):
//!   they are neither `tool`, `user` nor `assistant`.
//! * The token estimate E is a parameter of [`tail_cut_by`] so the walks can be checked
//!   on their own; [`tail_cut`] passes `tokens::budget`.

use super::message::{content, has_role};
use super::py;
use super::settings::{HermesSettings, HermesState};
use super::summaries::is_handoff_summary;
use serde_json::Value;

/// The message-count floor of the tail walk never exceeds this (`_MAX_TAIL_MESSAGE_FLOOR`).
const MAX_TAIL_FLOOR: usize = 8;

/// Non-system head messages protected this time (`_effective_protect_first_n`, H7):
/// `protectFirstN` on a first compaction, 0 once the session was compacted, carries a
/// previous summary, or holds a handoff summary (`summary_present`, from
/// `summaries::present`: any message but a leading system message).
pub fn protect_first_n(
    settings: &HermesSettings,
    state: &HermesState,
    summary_present: bool,
) -> usize {
    if state.compression_count >= 1 || state.has_previous_summary() || summary_present {
        0
    } else {
        settings.protect_first_n
    }
}

/// Messages in the protected head (`_protect_head_size`): a leading system message plus
/// `protect_first_n` (the decayed value from [`protect_first_n`]).
pub fn head_size(msgs: &[Value], protect_first_n: usize) -> usize {
    usize::from(msgs.first().is_some_and(|m| has_role(m, "system"))) + protect_first_n
}

/// Pushes a window start past tool results (`_align_boundary_forward`), so the window
/// never opens mid-group. Stops at `msgs.len()`.
pub(crate) fn align_forward(msgs: &[Value], mut i: usize) -> usize {
    while i < msgs.len() && has_role(&msgs[i], "tool") {
        i += 1;
    }
    i
}

/// Pulls a window end back before a tool-call group it would split
/// (`_align_boundary_backward`): over the `tool` messages before `i` to their assistant,
/// when that assistant has truthy `tool_calls`. Unchanged for `i == 0` or `i ≥ n`.
pub(crate) fn align_backward(msgs: &[Value], i: usize) -> usize {
    if i == 0 || i >= msgs.len() {
        return i;
    }
    let mut check = i;
    while check > 0 && has_role(&msgs[check - 1], "tool") {
        check -= 1;
    }
    // `check - 1` is the message before the tool run, if any.
    match check.checked_sub(1).map(|c| (c, &msgs[c])) {
        Some((c, m))
            if has_role(m, "assistant") && m.get("tool_calls").is_some_and(py::is_truthy) =>
        {
            c
        }
        _ => i,
    }
}

/// The first index of the protected tail (`_find_tail_cut_by_tokens`, section 7) for a
/// window starting at `h`, with hermes's budget estimate E (`tokens::budget`). See
/// [`tail_cut_by`].
pub(crate) fn tail_cut(
    msgs: &[Value],
    h: usize,
    protect_last_n: usize,
    budget: u64,
    ours: &str,
) -> usize {
    tail_cut_by(msgs, h, protect_last_n, budget, ours, super::tokens::budget)
}

/// [`tail_cut`] with the token estimate `e` given: the soft walk (1.5 × `budget`), the
/// raw re-walk when everything fitted, the message-count fallback, the backward
/// alignment, the last-real-user and last-visible-assistant anchors, and a final forward
/// alignment. `ours` is our summary prefix (a summary is not a real user turn).
pub(crate) fn tail_cut_by(
    msgs: &[Value],
    h: usize,
    protect_last_n: usize,
    budget: u64,
    ours: &str,
    e: impl Fn(&Value) -> u64,
) -> usize {
    let n = msgs.len();
    // 1. The message-count floor, leaving two messages to summarize on short lists.
    let avail = n.saturating_sub(h + 1);
    let floor = protect_last_n.clamp(3, MAX_TAIL_FLOOR);
    let cap = avail.saturating_sub(2).max(3);
    let min_tail = if avail > 1 {
        floor.min(cap).min(avail)
    } else {
        0
    };
    // Python's int(budget * 1.5).
    let soft = (budget as f64 * 1.5) as u64;

    // 2. Soft walk: the message that overflows stays out, once the floor is met.
    let mut acc: u64 = 0;
    let mut cut = n;
    for i in (h..n).rev() {
        let t = e(&msgs[i]);
        if acc.saturating_add(t) > soft && n - i >= min_tail {
            break;
        }
        acc = acc.saturating_add(t);
        cut = i;
    }

    // 3. Everything fitted: walk again with the raw budget; the overflowing message is in.
    if cut <= h && acc <= soft && acc > 0 {
        let mut raw: u64 = 0;
        for j in (h..n).rev() {
            let t = e(&msgs[j]);
            cut = j;
            if raw.saturating_add(t) > budget && n - j >= min_tail {
                break;
            }
            raw = raw.saturating_add(t);
        }
    }

    // 4. Keep at least min_tail messages, and summarize at least one.
    let fallback = n - min_tail;
    cut = cut.min(fallback);
    if cut <= h {
        cut = fallback.max(h + 1);
    }

    // 5–7. Alignment and the two anchors.
    cut = align_backward(msgs, cut);
    cut = anchor_last_user(msgs, cut, h, ours);
    cut = anchor_last_assistant(msgs, cut, h);

    // 8. The floor may land inside a call group: skip to its end.
    align_forward(msgs, cut.max(h + 1))
}

/// `_ensure_last_user_message_in_tail`: the last real user turn stays in the tail; when
/// it is the window's first message, its whole turn goes into the window instead.
fn anchor_last_user(msgs: &[Value], cut: usize, h: usize, ours: &str) -> usize {
    let Some(u) = last_real_user(msgs, h, ours) else {
        return cut;
    };
    if u >= cut {
        cut
    } else if u > h {
        u
    } else {
        pair_end(msgs, u).max(h + 1)
    }
}

/// The last `user` message at or after `h` that is not a handoff summary
/// (`_find_last_user_message_idx`).
fn last_real_user(msgs: &[Value], h: usize, ours: &str) -> Option<usize> {
    (h..msgs.len())
        .rev()
        .find(|&i| has_role(&msgs[i], "user") && !is_handoff_summary(content(&msgs[i]), ours))
}

/// The index after the turn starting at user `u` (`_find_turn_pair_end`): `u + 1`, or,
/// when an assistant follows, the index after it and its tool results.
fn pair_end(msgs: &[Value], u: usize) -> usize {
    let n = msgs.len();
    let mut i = u + 1;
    if i >= n || !has_role(&msgs[i], "assistant") {
        return i;
    }
    i += 1;
    while i < n && has_role(&msgs[i], "tool") {
        i += 1;
    }
    i
}

/// `_ensure_last_assistant_message_in_tail`: the last visible assistant reply stays in
/// the tail, with the call group before it.
fn anchor_last_assistant(msgs: &[Value], cut: usize, h: usize) -> usize {
    match last_visible_assistant(msgs, h) {
        Some(a) if a < cut => align_backward(msgs, a).max(h + 1),
        _ => cut,
    }
}

/// The last assistant at or after `h` with visible text, else the last assistant of any
/// kind (`_find_last_assistant_message_idx`).
fn last_visible_assistant(msgs: &[Value], h: usize) -> Option<usize> {
    let mut last_any = None;
    for i in (h..msgs.len()).rev() {
        let m = &msgs[i];
        if !has_role(m, "assistant") {
            continue;
        }
        last_any.get_or_insert(i);
        if is_visible(content(m)) {
            return Some(i);
        }
    }
    last_any
}

/// Non-blank string content, or a list with an object part whose `text` (when truthy,
/// else `content`) is a non-blank string.
fn is_visible(content: Option<&Value>) -> bool {
    let non_blank = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|s| !py::strip(s).is_empty())
    };
    match content {
        Some(Value::String(_)) => non_blank(content),
        Some(Value::Array(parts)) => parts.iter().filter(|p| p.is_object()).any(|p| {
            // Python's `part.get("text") or part.get("content")`.
            let text = p.get("text").filter(|t| py::is_truthy(t));
            non_blank(text.or_else(|| p.get("content")))
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
