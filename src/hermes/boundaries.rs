//! Where the summarized window starts and ends (contract sections 4 and 7): the protected
//! head and its decay, the two tool-group alignments, and the token-budget tail cut with
//! its last-user and last-visible-assistant anchors.
//!
//! The window is `messages[compressStart..compressEnd]` with
//! `compressStart = align_forward(head_size(…))` and `compressEnd = tail_cut_by(…, compressStart, …)`.
//!
//! Design decisions:
//! * Each function is hermes's method of the same role, step for step, including the
//!   steps that look redundant (the soft walk, then the raw re-walk, then the fallback),
//!   because each changes the cut for some list.
//! * [`tail_cut_by`] can return `n` (everything after the head is summarized) and `n + 1`
//!   when the head already covers the list (`h ≥ n`). hermes returns the same; the
//!   caller treats `compressStart ≥ n` as H2, so the value is kept, not clamped.
//! * Messages that are not objects, or have no string role, have no role here (H1):
//!   they are neither `tool`, `user` nor `assistant`.
//! * The token estimate E is a parameter of [`tail_cut_by`] so the walks can be checked
//!   on their own; the pipeline passes `tokens::budget`.

use super::message::{content, has_role};
use super::py;
use super::settings::{Settings, State};
use super::summaries::is_handoff_summary;
use serde_json::Value;

/// The message-count floor of the tail walk never exceeds this (`_MAX_TAIL_MESSAGE_FLOOR`).
const MAX_TAIL_FLOOR: usize = 8;

/// Non-system head messages protected this time (`_effective_protect_first_n`, H7):
/// `protectFirstN` on a first compaction, 0 once the session was compacted, carries a
/// previous summary, or holds a handoff summary (`summary_present`, from
/// `summaries::present`: any message but a leading system message).
pub fn protect_first_n(settings: &Settings, state: &State, summary_present: bool) -> usize {
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
pub fn align_forward(msgs: &[Value], mut i: usize) -> usize {
    while i < msgs.len() && has_role(&msgs[i], "tool") {
        i += 1;
    }
    i
}

/// Pulls a window end back before a tool-call group it would split
/// (`_align_boundary_backward`): over the `tool` messages before `i` to their assistant,
/// when that assistant has truthy `tool_calls`. Unchanged for `i == 0` or `i ≥ n`.
pub fn align_backward(msgs: &[Value], i: usize) -> usize {
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
/// window starting at `h`, with the token estimate `e` (hermes's E): the soft walk (1.5 × `budget`), the
/// raw re-walk when everything fitted, the message-count fallback, the backward
/// alignment, the last-real-user and last-visible-assistant anchors, and a final forward
/// alignment. `ours` is our summary prefix (a summary is not a real user turn).
pub fn tail_cut_by(
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
mod tests {
    use super::*;
    use crate::hermes::message::tool_calls;
    use serde_json::json;

    /// A stand-in for our summary prefix (the real one comes from `texts`).
    const OURS: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Our handoff words.";

    /// A list from a compact spec, built the same way by the Python that printed the
    /// expected values: `s` system, `u` user, `a` assistant, `A` assistant with one tool
    /// call (content null when the length is 0), `t` tool result, `b` assistant with
    /// blank content, `l` / `L` / `M` assistant with a text part (text / empty text and
    /// `content` / blank text and `content`), `S` user legacy summary, `O` user summary
    /// under our prefix, `r` no role; the number is the content length in `x`s.
    fn build(spec: &str) -> Vec<Value> {
        let call =
            json!({"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}});
        spec.split_whitespace()
            .map(|tok| {
                let (k, n) = tok.split_at(1);
                let x = "x".repeat(n.parse().unwrap_or(0));
                match k {
                    "s" => json!({"role": "system", "content": x}),
                    "u" => json!({"role": "user", "content": x}),
                    "a" => json!({"role": "assistant", "content": x}),
                    "A" => json!({"role": "assistant",
                        "content": if x.is_empty() { Value::Null } else { json!(x) },
                        "tool_calls": [call.clone()]}),
                    "t" => json!({"role": "tool", "tool_call_id": "c", "content": x}),
                    "S" => json!({"role": "user", "content": format!("[CONTEXT SUMMARY]: {x}")}),
                    "O" => json!({"role": "user", "content": format!("{OURS}{x}")}),
                    "b" => json!({"role": "assistant", "content": " ".repeat(x.len())}),
                    "l" => json!({"role": "assistant", "content": [{"type": "text", "text": x}]}),
                    "L" => json!({"role": "assistant",
                        "content": [{"type": "text", "text": "", "content": x}]}),
                    "M" => json!({"role": "assistant",
                        "content": [{"type": "text", "text": "  ", "content": x}]}),
                    "r" => json!({"content": x}),
                    _ => panic!("spec {tok}"),
                }
            })
            .collect()
    }

    /// hermes's E for the shapes `build` makes (each row also checks it against the
    /// values hermes printed).
    fn e(m: &Value) -> u64 {
        let len = match content(m) {
            Some(Value::String(s)) => py::len(s),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|p| p.get("text").and_then(Value::as_str).map_or(0, py::len))
                .sum(),
            _ => 0,
        };
        let calls: usize = tool_calls(m)
            .iter()
            .map(|c| py::len(&py::str_of(c)) / 4)
            .sum();
        (len / 4 + 10 + calls) as u64
    }

    /// (spec, h, protectLastN, budget, hermes's cut, hermes's E per message), printed by
    /// hermes 0.19.0's `_find_tail_cut_by_tokens(messages, h, token_budget=budget)`.
    type Row = (&'static str, usize, usize, u64, usize, &'static [u64]);
    const U5: &str = "s u100 a100 u100 a100 u100 a100 u100 a100 u100 a100";
    const E5: &[u64] = &[10, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35];
    const ROWS: &[Row] = &[
        // Soft walk: 35 × 3 fits 120, the fourth breaks; the fallback (n − 3) agrees.
        (U5, 1, 3, 80, 8, E5),
        // Soft walk stopping at index 2 (315 > 300).
        (U5, 1, 3, 200, 3, E5),
        // Everything fits 360; the raw re-walk keeps the message that overflows 240.
        (U5, 1, 3, 240, 4, E5),
        // Everything fits both walks: the re-walk ends at h, the fallback n − 3 wins.
        (U5, 1, 3, 1000, 8, E5),
        // Short list: cut ≤ h after the fallback, so max(fallback, h + 1).
        (
            "s u100 a100 u100 a100 u100 a100",
            1,
            3,
            1000,
            4,
            &[10, 35, 35, 35, 35, 35, 35],
        ),
        // protectLastN 20: min_tail = min(8, avail − 2) = 7 walks past the soft budget.
        (U5, 1, 20, 80, 4, E5),
        // protectLastN 0 and 5: the floor is at least 3.
        (U5, 1, 0, 80, 8, E5),
        (U5, 1, 5, 80, 6, E5),
        // Budget 0: only the message-count floor.
        (
            "s u10 a10 u10 a10 u10 a10 u10 a10",
            1,
            3,
            0,
            6,
            &[10, 12, 12, 12, 12, 12, 12, 12, 12],
        ),
        // Backward alignment: the cut at 7 would split A t t; it moves to 4.
        (
            "s u100 a100 u100 A0 t400 t400 a100 u100 a100",
            1,
            3,
            100,
            4,
            &[10, 35, 35, 35, 29, 110, 110, 35, 35, 35],
        ),
        // Last user (3) is before the cut (4): the cut moves to it.
        (
            "s u100 a100 u100 A0 t40 t40 A0 t40 a100",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 29, 20, 20, 29, 20, 35],
        ),
        // …and then the last visible assistant (2) pulls it further back.
        (
            "s u100 a100 u100 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            2,
            &[10, 35, 35, 35, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        // The only user is at h: the cut goes forward to the end of its turn (pairEnd);
        // no visible assistant, the last of any kind is in the tail.
        (
            "u100 A0 t40 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            0,
            3,
            100,
            3,
            &[35, 29, 20, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        (
            "s u100 A0 t40 A0 t40 A0 t40 A0 t40 A0 t40 b5 t4000",
            1,
            3,
            100,
            4,
            &[10, 35, 29, 20, 29, 20, 29, 20, 29, 20, 29, 20, 11, 1010],
        ),
        (
            "s u100 A0 t40 a40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            4,
            &[10, 35, 29, 20, 20, 29, 20, 29, 20, 29, 1010],
        ),
        // A summary is not a real user: legacy and ours (hermes run with SUMMARY_PREFIX
        // set to OURS) anchor on the user at 3; a real user at 11 keeps the cut at 9,
        // and the visible assistant at 8 takes its call group along (6).
        (
            "s u100 a100 u100 A0 t40 A0 t40 a40 A0 t40 S50 t4000",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 29, 20, 29, 20, 20, 29, 20, 27, 1010],
        ),
        (
            "s u100 a100 u100 A0 t40 A0 t40 a40 A0 t40 O50 t4000",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 29, 20, 29, 20, 20, 29, 20, 36, 1010],
        ),
        (
            "s u100 a100 u100 A0 t40 A0 t40 a40 A0 t40 u50 t4000",
            1,
            3,
            100,
            6,
            &[10, 35, 35, 35, 29, 20, 29, 20, 20, 29, 20, 22, 1010],
        ),
        // Visible assistants: plain text, a text part, a part's `content` when `text`
        // is empty, a call with text; blank ones and blank-but-truthy `text` are not.
        (
            "s u100 a100 u100 a40 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 20, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        (
            "s u100 a100 u100 l40 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 20, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        (
            "s u100 a100 u100 L40 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 10, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        (
            "s u100 a100 u100 A30 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            3,
            &[10, 35, 35, 35, 36, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        (
            "s u100 a100 u100 b5 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            2,
            &[10, 35, 35, 35, 11, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        (
            "s u100 a100 u100 M40 A0 t40 A0 t40 A0 t40 A0 t40 A0 t4000",
            1,
            3,
            100,
            2,
            &[10, 35, 35, 35, 10, 29, 20, 29, 20, 29, 20, 29, 20, 29, 1010],
        ),
        // The assistant anchor aligns backward: a40 at 6 takes A t (4).
        (
            "s u100 a100 u100 A0 t40 a40 A0 t4000 u10",
            1,
            3,
            100,
            4,
            &[10, 35, 35, 35, 29, 20, 20, 29, 1010, 12],
        ),
        // No visible assistant: the last of any kind (4) anchors.
        (
            "s u100 b0 u100 b0 u100 t4000 t4000 u10",
            1,
            3,
            100,
            4,
            &[10, 35, 10, 35, 10, 35, 1010, 1010, 12],
        ),
        // Messages without a role are no user.
        (
            "s r100 a100 r100 a100 u100 a100 r100 a100 r100 a100",
            1,
            3,
            80,
            5,
            &[10, 35, 35, 35, 35, 35, 35, 35, 35, 35, 35],
        ),
        ("u10 a10 u10 a10 u10", 0, 8, 5, 2, &[12, 12, 12, 12, 12]),
        // The assistant anchor's floor (h + 1) lands on a tool result: forward to n.
        (
            "s u10 a10 u10 a10 A0 t10",
            5,
            3,
            100,
            7,
            &[10, 12, 12, 12, 12, 29, 12],
        ),
        ("s u10 a10", 1, 3, 100, 2, &[10, 12, 12]),
        ("s u10", 1, 3, 100, 2, &[10, 12]),
        // The head covers the list (h ≥ n): n + 1, or h + 1 (H2 is the caller's).
        ("s", 1, 3, 100, 2, &[10]),
        ("", 0, 3, 100, 1, &[]),
        ("s t10 t10 t10", 4, 3, 100, 5, &[10, 12, 12, 12]),
        ("s u10 a10 u10 t10", 5, 3, 100, 6, &[10, 12, 12, 12, 12]),
    ];

    #[test]
    fn tail_cut_matches_hermes() {
        for &(spec, h, last_n, budget, want, es) in ROWS {
            let msgs = build(spec);
            let got_e: Vec<u64> = msgs.iter().map(e).collect();
            assert_eq!(got_e, es, "E of {spec}");
            let got = tail_cut_by(&msgs, h, last_n, budget, OURS, e);
            assert_eq!(
                got, want,
                "{spec} h={h} protectLastN={last_n} budget={budget}"
            );
        }
    }

    fn user() -> Value {
        json!({"role": "user", "content": "u"})
    }

    fn tool() -> Value {
        json!({"role": "tool", "content": "r"})
    }

    fn assistant(content: Value) -> Value {
        json!({"role": "assistant", "content": content})
    }

    #[test]
    fn align_backward_follows_tool_calls_truthiness() {
        // hermes: [align(i) for i in 0..=6] for [user, assistant(tool_calls=tc), tool,
        // tool, user] — a truthy tool_calls of any type pulls the group in.
        let pulled = [0, 1, 1, 1, 1, 5, 6];
        let kept = [0, 1, 2, 3, 4, 5, 6];
        for (tc, want) in [
            (json!([{"id": "c"}]), pulled),
            (json!("x"), pulled),
            (json!(1), pulled),
            (json!({"a": 1}), pulled),
            (json!([]), kept),
            (json!({}), kept),
            (json!(""), kept),
            (json!(0), kept),
            (json!(null), kept),
        ] {
            let mut a = assistant(json!("a"));
            a["tool_calls"] = tc.clone();
            let msgs = [user(), a, tool(), tool(), user()];
            let got: Vec<usize> = (0..=6).map(|i| align_backward(&msgs, i)).collect();
            assert_eq!(got, want, "{tc}");
        }
    }

    #[test]
    fn align_forward_skips_tool_results() {
        let msgs = [
            tool(),
            tool(),
            user(),
            tool(),
            json!({"content": "x"}),
            tool(),
        ];
        let got: Vec<usize> = (0..8).map(|i| align_forward(&msgs, i)).collect();
        assert_eq!(got, [2, 2, 2, 4, 4, 6, 6, 7]);
    }

    #[test]
    fn pair_end_covers_the_reply_and_its_results() {
        let msgs = [
            user(),
            assistant(json!("a")),
            tool(),
            tool(),
            user(),
            user(),
            assistant(json!("b")),
            assistant(json!("c")),
            json!({"role": "user"}),
        ];
        let got: Vec<usize> = (0..msgs.len()).map(|i| pair_end(&msgs, i)).collect();
        assert_eq!(got, [4, 2, 3, 4, 5, 7, 8, 8, 9]);
    }

    #[test]
    fn last_real_user_skips_summaries_in_every_form() {
        let s = "[CONTEXT SUMMARY]: s";
        let merged = format!("x {} {s}", crate::hermes::summaries::MERGE_DELIMITER);
        let msgs = [
            user(),
            json!({"role": "user", "content": [{"type": "text", "text": s}]}),
            json!({"role": "user"}),
            json!({"role": "user", "content": merged}),
            json!({"role": "USER", "content": "u"}),
        ];
        let got: Vec<Option<usize>> = (0..6).map(|h| last_real_user(&msgs, h, OURS)).collect();
        assert_eq!(got, [Some(2), Some(2), Some(2), None, None, None]);
    }

    #[test]
    fn visible_assistant_rules() {
        // hermes's index over [user, assistant("visible"), user, assistant(c), tool]:
        // 3 when c is visible, else 1.
        for (c, visible) in [
            (json!([{"type": "text", "text": 5, "content": "x"}]), false),
            (
                json!([{"type": "text", "text": "  ", "content": "x"}]),
                false,
            ),
            (json!([{"type": "text", "text": "", "content": "x"}]), true),
            (
                json!([{"type": "text", "text": null, "content": " \u{3000}"}]),
                false,
            ),
            (json!(["plain string part"]), false),
            (json!([{"type": "text", "text": "\u{200b}"}]), true),
            (json!([{"content": {"a": 1}}]), false),
            (json!("\u{3000}\n"), false),
            (json!("\u{200b}"), true),
            (json!(null), false),
            (json!(7), false),
        ] {
            let msgs = [
                user(),
                assistant(json!("visible")),
                user(),
                assistant(c.clone()),
                tool(),
            ];
            let want = if visible { 3 } else { 1 };
            assert_eq!(last_visible_assistant(&msgs, 0), Some(want), "{c}");
            assert_eq!(last_visible_assistant(&msgs, 4), None);
        }
    }

    #[test]
    fn head_decays_after_a_compaction_a_previous_summary_or_a_present_summary() {
        let s = Settings::default();
        let fresh = State::default();
        assert_eq!(protect_first_n(&s, &fresh, false), 3);
        // H7: a summary in the messages decays the head too.
        assert_eq!(protect_first_n(&s, &fresh, true), 0);
        let counted = State {
            compression_count: 1,
            previous_summary: None,
        };
        assert_eq!(protect_first_n(&s, &counted, false), 0);
        let summarized = State {
            compression_count: 0,
            previous_summary: Some("body".into()),
        };
        assert_eq!(protect_first_n(&s, &summarized, false), 0);
        // An empty previous summary is falsy in hermes.
        let empty = State {
            compression_count: 0,
            previous_summary: Some(String::new()),
        };
        assert_eq!(protect_first_n(&s, &empty, false), 3);
    }

    #[test]
    fn head_size_counts_a_leading_system_message() {
        let sys = json!({"role": "system", "content": "s"});
        assert_eq!(head_size(&[sys.clone(), user()], 3), 4);
        assert_eq!(head_size(&[user(), sys], 3), 3);
        assert_eq!(head_size(&[], 0), 0);
        assert_eq!(head_size(&[json!({"role": null})], 2), 2);
    }
}
