//! The rules of the boundaries, each checked with numbers printed by hermes 0.19.0.

use super::*;
use crate::message::tool_calls;
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
    let call = json!({"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}});
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
        // The real estimate agrees on these shapes, and so does the real cut.
        let real: Vec<u64> = msgs.iter().map(crate::tokens::budget).collect();
        assert_eq!(real, es, "budget estimate of {spec}");
        assert_eq!(tail_cut(&msgs, h, last_n, budget, OURS), want, "{spec}");
    }
}

#[test]
fn tail_cut_counts_with_the_budget_estimate() {
    // Replay fields, an image part and a tool call: E is hermes's
    // [10, 40, 85, 1611, 93, 110, 517, 11, 11, 11, 11], and the cuts for each budget
    // are hermes's `_find_tail_cut_by_tokens(msgs, 1, token_budget=b)`
    // (protect_last_n 3).
    let call = json!({"id": "call_1", "type": "function",
        "function": {"name": "terminal", "arguments": "{\"command\": \"ls -la\"}"}});
    let image = json!({"type": "image_url",
        "image_url": {"url": format!("data:image/png;base64,{}", "A".repeat(50))}});
    let msgs = [
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "first task é".repeat(10)}),
        json!({"role": "assistant", "content": "ok", "reasoning": "r".repeat(300)}),
        json!({"role": "user", "content": [{"type": "text", "text": "look"}, image]}),
        json!({"role": "assistant", "content": null, "tool_calls": [call],
            "reasoning_details": [{"type": "x", "text": "t".repeat(200)}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "out ".repeat(100)}),
        json!({"role": "assistant", "content": "done",
            "codex_reasoning_items": [{"encrypted_content": "E".repeat(2000)}]}),
        json!({"role": "user", "content": "next"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "answer"}]}),
        json!({"role": "user", "content": "more"}),
        json!({"role": "assistant", "content": "fine"}),
    ];
    let es: Vec<u64> = msgs.iter().map(crate::tokens::budget).collect();
    assert_eq!(es, [10, 40, 85, 1611, 93, 110, 517, 11, 11, 11, 11]);
    for (budget, want) in [(0, 8), (50, 7), (500, 4), (1000, 4), (2000, 3), (10000, 8)] {
        assert_eq!(tail_cut(&msgs, 1, 3, budget, OURS), want, "budget {budget}");
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
    let merged = format!("x {} {s}", crate::summaries::MERGE_DELIMITER);
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
    let s = HermesSettings::default();
    let fresh = HermesState::default();
    assert_eq!(protect_first_n(&s, &fresh, false), 3);
    // H7: a summary in the messages decays the head too.
    assert_eq!(protect_first_n(&s, &fresh, true), 0);
    let counted = HermesState {
        compression_count: 1,
        previous_summary: None,
    };
    assert_eq!(protect_first_n(&s, &counted, false), 0);
    let summarized = HermesState {
        compression_count: 0,
        previous_summary: Some("body".into()),
    };
    assert_eq!(protect_first_n(&s, &summarized, false), 0);
    // An empty previous summary is falsy in hermes.
    let empty = HermesState {
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
