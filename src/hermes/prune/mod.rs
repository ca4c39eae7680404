//! Phase 1 of hermes's compaction: pruning old tool results without a model call
//! (contract §6, hermes `_prune_old_tool_results`).
//!
//! Three passes over copies of the messages: older duplicates of long tool outputs become
//! a back-reference (everywhere, the protected tail included); tool results before the
//! prune boundary lose their images or become a one-line summary ([`tool_summary`]); and
//! long tool-call arguments before the boundary have their long strings cut inside the
//! parsed JSON, so they stay valid JSON.
//!
//! Design decisions: the output starts as a copy of the input, and a replaced field keeps
//! its position in its object. Pass 3's JSON work is in [`args`]. The call index keys calls by
//! their `id` as a Python dictionary would (`1`, `1.0` and `true` are the same key), see
//! [`CallKey`]. Shapes on which hermes raises follow H1: `function` that is not an object
//! counts as `{}`, `arguments` that is not a string counts as `""` in pass 3, an
//! unhashable id or `tool_call_id` finds nothing, and a `_multimodal` `text_summary` that
//! cannot be sliced counts as absent.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::hermes::py::{self, PyValue};
use crate::hermes::{message, tokens, tool_summary};

mod args;
pub use args::shrink_args;

/// What pass 1 writes over an older duplicate.
pub const DUPLICATE_MARKER: &str = "[Duplicate tool output — same content as a more recent call]";
/// The placeholder older hermes versions wrote; pass 2 leaves it alone.
const CLEARED_PLACEHOLDER: &str = "[Old tool output cleared to save context space]";
/// What replaces an image part of an old tool result.
const SCREENSHOT_REMOVED: &str = "[screenshot removed to save context]";
/// Outputs shorter than this are not deduplicated.
const DEDUPE_MIN_CHARS: usize = 200;
/// Outputs longer than this are summarized.
const SUMMARIZE_OVER_CHARS: usize = 200;
/// Arguments longer than this are shrunk.
const ARGS_OVER_CHARS: usize = 500;

/// The pruned list and what changed in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruned {
    /// Same length and order as the input.
    pub messages: Vec<Value>,
    /// Indexes of the messages any pass replaced something in, ascending.
    pub changed: Vec<usize>,
    /// hermes's `pruned_count` (passes 1 and 2 only; hermes logs it).
    pub pruned: usize,
}

/// `_prune_old_tool_results(msgs, protect_tail_count, protect_tail_tokens)`.
pub fn prune(msgs: &[Value], protect_last_n: usize, tail_budget: u64) -> Pruned {
    let mut out: Vec<Value> = msgs.to_vec();
    let mut changed = vec![false; msgs.len()];
    let mut pruned = 0usize;
    let index = call_index(msgs);
    let boundary = prune_boundary(msgs, protect_last_n, tail_budget);

    // Pass 1: newest to oldest, every message.
    let mut seen = std::collections::HashSet::new();
    for i in (0..out.len()).rev() {
        if message::role(&out[i]) != Some("tool") {
            continue;
        }
        let Some(Value::String(text)) = message::content(&out[i]) else {
            continue;
        };
        if py::len(text) < DEDUPE_MIN_CHARS {
            continue;
        }
        if !seen.insert(py::md5_key(text)) {
            set_field(
                &mut out[i],
                "content",
                Value::String(DUPLICATE_MARKER.to_owned()),
            );
            changed[i] = true;
            pruned += 1;
        }
    }

    // Pass 2: tool results before the boundary.
    for i in 0..boundary {
        if message::role(&out[i]) != Some("tool") {
            continue;
        }
        let Some(new_content) = pruned_result(&out[i], &index) else {
            continue;
        };
        set_field(&mut out[i], "content", new_content);
        changed[i] = true;
        pruned += 1;
    }

    // Pass 3: long tool-call arguments before the boundary.
    for i in 0..boundary {
        if message::role(&out[i]) != Some("assistant") {
            continue;
        }
        let Some(Value::Array(calls)) = out[i].get("tool_calls") else {
            continue;
        };
        let mut modified = false;
        let new_calls: Vec<Value> = calls
            .iter()
            .map(|tc| match shrunk_call(tc) {
                Some(new) => {
                    modified = true;
                    new
                }
                None => tc.clone(),
            })
            .collect();
        if modified {
            set_field(&mut out[i], "tool_calls", Value::Array(new_calls));
            changed[i] = true;
        }
    }

    let changed = (0..msgs.len()).filter(|&i| changed[i]).collect();
    Pruned {
        messages: out,
        changed,
        pruned,
    }
}

/// The prune boundary: messages at indexes `≥` it are protected from passes 2 and 3.
pub fn prune_boundary(msgs: &[Value], protect_last_n: usize, tail_budget: u64) -> usize {
    let n = msgs.len();
    if tail_budget == 0 {
        return n.saturating_sub(protect_last_n);
    }
    let min_protect = protect_last_n.min(n);
    let mut acc = 0u64;
    let mut stop = n;
    for i in (0..n).rev() {
        let e = tokens::budget(&msgs[i]);
        // The message that overflows stays protected (unlike the tail walk).
        if acc + e > tail_budget && n - i >= min_protect {
            stop = i;
            break;
        }
        acc += e;
        stop = i;
    }
    n - (n - stop).max(min_protect)
}

/// A call id as a Python dictionary key: numbers that compare equal are one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CallKey {
    None,
    Str(String),
    /// An integral number (`true` is 1, `false` 0), as its decimal digits.
    Int(String),
    /// Any other float, as its `repr`.
    Float(String),
}

/// The key of an id value, or None when Python cannot hash it (a list or an object) or
/// when it is a NaN (never equal to anything, not even another NaN).
fn call_key(v: &Value) -> Option<CallKey> {
    match v {
        Value::Null => Some(CallKey::None),
        Value::String(s) => Some(CallKey::Str(s.clone())),
        Value::Bool(b) => Some(CallKey::Int(if *b { "1" } else { "0" }.to_owned())),
        Value::Number(_) => match PyValue::from_json(v) {
            PyValue::Int(d) => Some(CallKey::Int(canonical_int(&d))),
            PyValue::Float(f) if f.is_nan() => None,
            PyValue::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e38 => {
                Some(CallKey::Int(format!("{}", f as i128)))
            }
            PyValue::Float(f) => Some(CallKey::Float(PyValue::Float(f).to_str())),
            _ => None,
        },
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// Decimal digits without a sign on zero.
fn canonical_int(d: &str) -> String {
    if d.trim_start_matches('-').trim_start_matches('0').is_empty() {
        "0".to_owned()
    } else {
        d.to_owned()
    }
}

/// One entry of the call index: `function.name` and `function.arguments` as written.
#[derive(Debug, Clone)]
struct Call {
    name: Value,
    args: Value,
}

impl Call {
    fn unknown() -> Call {
        Call {
            name: Value::String("unknown".to_owned()),
            args: Value::String(String::new()),
        }
    }
}

/// tool_call_id → (name, arguments), built from every assistant message; a later id
/// overwrites an earlier one.
fn call_index(msgs: &[Value]) -> HashMap<CallKey, Call> {
    let mut index = HashMap::new();
    for m in msgs {
        if message::role(m) != Some("assistant") {
            continue;
        }
        // `msg.get("tool_calls") or []`: a string iterates its characters and an object
        // its keys, none of them a dict; a number would raise (H1: no calls).
        let items: Vec<Option<&Value>> = match m.get("tool_calls") {
            Some(Value::Array(a)) => a.iter().map(Some).collect(),
            Some(Value::String(s)) => s.chars().map(|_| None).collect(),
            Some(Value::Object(o)) => o.keys().map(|_| None).collect(),
            _ => Vec::new(),
        };
        for tc in items {
            match tc {
                Some(Value::Object(tc)) => {
                    let id = tc
                        .get("id")
                        .cloned()
                        .unwrap_or(Value::String(String::new()));
                    let Some(key) = call_key(&id) else {
                        continue;
                    };
                    // H1: `function: null` (or any non-object) counts as `{}`.
                    let empty = Map::new();
                    let f = tc
                        .get("function")
                        .and_then(Value::as_object)
                        .unwrap_or(&empty);
                    let call = Call {
                        name: f
                            .get("name")
                            .cloned()
                            .unwrap_or(Value::String("unknown".to_owned())),
                        args: f
                            .get("arguments")
                            .cloned()
                            .unwrap_or(Value::String(String::new())),
                    };
                    index.insert(key, call);
                }
                // A non-object call has no `id` attribute: it maps "" to unknown.
                _ => {
                    index.insert(CallKey::Str(String::new()), Call::unknown());
                }
            }
        }
    }
    index
}

/// Pass 2's new content for the tool message `m`, or None when it stays.
fn pruned_result(m: &Value, index: &HashMap<CallKey, Call>) -> Option<Value> {
    match message::content(m)? {
        Value::Array(parts) => {
            if !parts.iter().any(message::is_image_part) {
                return None;
            }
            let placeholder = || {
                let mut part = Map::new();
                part.insert("type".to_owned(), Value::String("text".to_owned()));
                part.insert(
                    "text".to_owned(),
                    Value::String(SCREENSHOT_REMOVED.to_owned()),
                );
                Value::Object(part)
            };
            let parts = parts
                .iter()
                .map(|p| {
                    if message::is_image_part(p) {
                        placeholder()
                    } else {
                        p.clone()
                    }
                })
                .collect();
            Some(Value::Array(parts))
        }
        Value::Object(env) if env.get("_multimodal").is_some_and(py::is_truthy) => {
            let summary = match env.get("text_summary") {
                Some(Value::String(s)) if !s.is_empty() => py::head(s, 200).to_owned(),
                // A list slices and prints as a list.
                Some(Value::Array(a)) if !a.is_empty() => {
                    py::str_of(&Value::Array(a.iter().take(200).cloned().collect()))
                }
                // Absent or falsy; H1 for what cannot be sliced (number, true, object).
                _ => SCREENSHOT_REMOVED.to_owned(),
            };
            Some(Value::String(format!("[screenshot removed] {summary}")))
        }
        Value::String(text) => {
            if text.is_empty()
                || text == CLEARED_PLACEHOLDER
                || text.starts_with("[Duplicate tool output")
                || py::len(text) <= SUMMARIZE_OVER_CHARS
            {
                return None;
            }
            let id = m
                .get("tool_call_id")
                .cloned()
                .unwrap_or(Value::String(String::new()));
            let unknown = Call::unknown();
            let call = call_key(&id)
                .and_then(|k| index.get(&k))
                .unwrap_or(&unknown);
            Some(Value::String(tool_summary::summarize_value(
                &call.name, &call.args, text,
            )))
        }
        _ => None,
    }
}

/// Pass 3 for one call: the call with shrunk arguments, or None when it stays.
fn shrunk_call(tc: &Value) -> Option<Value> {
    let Value::Object(call) = tc else {
        return None;
    };
    // H1: a non-object `function` counts as `{}`, non-string `arguments` as "" (a list or
    // object would pass the length test in hermes but then fail to parse: unchanged).
    let Some(Value::Object(f)) = call.get("function") else {
        return None;
    };
    let Some(Value::String(args)) = f.get("arguments") else {
        return None;
    };
    if py::len(args) <= ARGS_OVER_CHARS {
        return None;
    }
    let new_args = shrink_args(args)?;
    if new_args == *args {
        return None;
    }
    let mut f = f.clone();
    f.insert("arguments".to_owned(), Value::String(new_args));
    let mut call = call.clone();
    call.insert("function".to_owned(), Value::Object(f));
    Some(Value::Object(call))
}

/// Replaces (or adds) `key` in an object message, keeping its position.
fn set_field(m: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = m {
        map.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    //! Expected results come from hermes-agent 0.19.0's `_prune_old_tool_results` and
    //! `_truncate_tool_call_args_json` run on the same messages.

    use serde_json::json;

    use super::*;

    fn x(c: &str, n: usize) -> String {
        c.repeat(n)
    }

    fn content(p: &Pruned, i: usize) -> &Value {
        &p.messages[i]["content"]
    }

    /// Ten tool results of 300 distinct characters: E = 85 each.
    fn ten() -> Vec<Value> {
        (0..10u8)
            .map(|i| {
                let c = char::from(b'A' + i).to_string();
                json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": c.repeat(300)})
            })
            .collect()
    }

    #[test]
    fn boundary_walk() {
        let msgs = ten();
        assert_eq!(tokens::budget(&msgs[0]), 85);
        // (protect_last_n, budget) -> messages pruned (hermes: indexes 0..boundary change).
        let cases = [
            (1, 200, 7),
            (5, 200, 5),
            (4, 0, 6),
            (20, 0, 0),
            (3, 1_000_000_000, 0),
            // The message that overflows stays protected.
            (0, 85, 8),
            (0, 84, 9),
            (2, 170, 7),
        ];
        for (n, b, want) in cases {
            assert_eq!(prune_boundary(&msgs, n, b), want, "{n} {b}");
            let p = prune(&msgs, n, b);
            assert_eq!(p.changed, (0..want).collect::<Vec<_>>(), "{n} {b}");
            assert_eq!(p.pruned, want);
        }
        assert_eq!(
            prune(&[], 3, 100),
            Pruned {
                messages: vec![],
                changed: vec![],
                pruned: 0
            }
        );
    }

    /// The mixed session the reference was run on (protect 5, budget 0: boundary 19).
    fn scenario() -> Vec<Value> {
        let args = |v: Value| Value::String(v.to_string());
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"cargo test\"}"}},
                {"id": "r1", "type": "function", "function": {"name": "read_file", "arguments": args(json!({"path": "src/é.rs", "content_hint": x("x", 600)}))}},
                "junk",
                {"id": 1, "type": "function", "function": {"name": "web_search", "arguments": "{\"query\":\"q\"}"}},
                {"type": "function", "function": {"name": "patch", "arguments": format!("{{\"path\":\"p.py\",\"pad\":\"{}\"}}", x("p", 499))}},
                {"id": "w1", "type": "function", "function": {"name": "write_file", "arguments": format!("{{\"path\":\"w\",\"content\":\"{}\",\"pad\":\"{}\"}}", x("c", 100), x("d", 380))}},
                {"id": "n1", "function": {"arguments": "{\"k\":1}"}}
            ]},
            {"role": "tool", "tool_call_id": "t1", "content": format!("{{\"exit_code\": 0, \"output\": \"{}\"}}", x("ok\\n", 100))},
            {"role": "tool", "tool_call_id": "r1", "content": x("😀", 250)},
            {"role": "tool", "tool_call_id": 1.0, "content": x("r", 201)},
            {"role": "tool", "tool_call_id": true, "content": x("s", 201)},
            {"role": "tool", "content": x("u", 300)},
            {"role": "tool", "tool_call_id": "n1", "content": x("v", 300)},
            {"role": "tool", "tool_call_id": "zz", "content": x("w", 200)},
            {"role": "tool", "tool_call_id": "zz", "content": format!("[Duplicate tool output elsewhere{}", x("y", 300))},
            {"role": "tool", "tool_call_id": "zz", "content": CLEARED_PLACEHOLDER},
            {"role": "tool", "tool_call_id": "i1", "content": [{"type": "text", "text": x("t", 500)}, {"type": "image_url", "image_url": {"url": "data:x"}}, "s", {"type": "input_image", "image_url": "u"}, {"type": "image", "source": {}}]},
            {"role": "tool", "tool_call_id": "i2", "content": [{"type": "text", "text": x("t", 500)}]},
            {"role": "tool", "tool_call_id": "m1", "content": {"_multimodal": true, "content": [], "text_summary": x("é", 250)}},
            {"role": "tool", "tool_call_id": "m2", "content": {"_multimodal": true, "content": []}},
            {"role": "tool", "tool_call_id": "m3", "content": {"_multimodal": true, "text_summary": ["a", "b"]}},
            {"role": "tool", "tool_call_id": "m4", "content": {"_multimodal": false, "text_summary": "x"}},
            {"role": "tool", "tool_call_id": "d", "content": x("D", 250), "extra": 1},
            {"role": "user", "content": x("D", 250)},
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "tool_call_id": "d2", "content": x("D", 250)},
            {"role": "tool", "tool_call_id": "d2", "content": x("E", 199)},
            {"role": "tool", "tool_call_id": "d3", "content": x("E", 199)},
            {"role": "user", "content": "end"}
        ])
        .as_array()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn scenario_matches_the_reference() {
        let input = scenario();
        let before = input.clone();
        let p = prune(&input, 5, 0);
        assert_eq!(input, before, "the input is never modified");
        assert_eq!(p.changed, vec![2, 3, 4, 5, 6, 7, 8, 12, 14, 15, 16, 18]);
        assert_eq!(p.pruned, 11);
        let s = |i| content(&p, i).as_str().unwrap_or_default().to_owned();
        assert_eq!(
            s(3),
            "[terminal] ran `cargo test` -> exit 0, 1 lines output"
        );
        assert_eq!(s(4), "[read_file] read src/é.rs from line 1 (250 chars)");
        // Ids 1, 1.0 and true are one dictionary key.
        assert_eq!(s(5), "[web_search] query='q' (201 chars result)");
        assert_eq!(s(6), "[web_search] query='q' (201 chars result)");
        // No tool_call_id: "" — the id-less patch call overwrote the non-object call's "".
        assert_eq!(s(7), "[patch] replace in p.py (300 chars result)");
        assert_eq!(s(8), "[unknown] k=1 (300 chars result)");
        assert_eq!(s(14), format!("[screenshot removed] {}", x("é", 200)));
        assert_eq!(
            s(15),
            "[screenshot removed] [screenshot removed to save context]"
        );
        assert_eq!(s(16), "[screenshot removed] ['a', 'b']");
        // Older duplicate (key order and extra fields kept); the user copy is not a tool.
        assert_eq!(
            serde_json::to_string(&p.messages[18]).unwrap_or_default(),
            format!(
                r#"{{"role":"tool","tool_call_id":"d","content":"{DUPLICATE_MARKER}","extra":1}}"#
            )
        );
        let removed = json!({"type": "text", "text": SCREENSHOT_REMOVED});
        assert_eq!(
            content(&p, 12),
            &json!([{"type": "text", "text": x("t", 500)}, removed, "s", removed, removed])
        );
        for i in [0, 1, 9, 10, 11, 13, 17, 19, 20, 21, 22, 23] {
            assert_eq!(p.messages[i], input[i], "{i}");
        }
    }

    #[test]
    fn scenario_arguments_are_shrunk_in_place() {
        let p = prune(&scenario(), 5, 0);
        let calls = p.messages[2]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let args: Vec<&str> = calls
            .iter()
            .filter_map(|c| c["function"]["arguments"].as_str())
            .collect();
        let cut = |c: &str| format!("{}...[truncated]", x(c, 200));
        assert_eq!(
            args,
            vec![
                "{\"command\": \"cargo test\"}".to_owned(),
                format!(
                    "{{\"path\": \"src/é.rs\", \"content_hint\": \"{}\"}}",
                    cut("x")
                ),
                "{\"query\":\"q\"}".to_owned(),
                format!("{{\"path\": \"p.py\", \"pad\": \"{}\"}}", cut("p")),
                format!(
                    "{{\"path\": \"w\", \"content\": \"{}\", \"pad\": \"{}\"}}",
                    x("c", 100),
                    cut("d")
                ),
                "{\"k\":1}".to_owned(),
            ]
        );
        assert_eq!(calls[2], json!("junk"));
        assert_eq!(
            calls[1]
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec![
                "id".to_owned(),
                "type".to_owned(),
                "function".to_owned()
            ])
        );
    }

    #[test]
    fn dedupe_reaches_into_the_protected_tail() {
        let msgs = vec![
            json!({"role": "tool", "tool_call_id": "a", "content": x("z", 200)}),
            json!({"role": "tool", "tool_call_id": "b", "content": x("z", 200)}),
            json!({"role": "tool", "tool_call_id": "c", "content": x("z", 200)}),
        ];
        let p = prune(&msgs, 10, 0);
        assert_eq!(p.changed, vec![0, 1]);
        assert_eq!(content(&p, 1), &json!(DUPLICATE_MARKER));
        assert_eq!(content(&p, 2), &json!(x("z", 200)));
    }

    #[test]
    fn h1_shapes_do_not_panic() {
        let msgs = vec![
            json!({"role": "assistant", "tool_calls": [
                {"id": "f", "function": null},
                {"id": "g", "function": "text"},
                {"id": "h", "function": {"name": "terminal", "arguments": null}},
                {"id": ["unhashable"], "function": {"name": "x"}},
                {"id": "n", "function": {"name": null, "arguments": {"command": "ls"}}}
            ]}),
            json!({"role": "assistant", "tool_calls": 7}),
            json!({"role": "tool", "tool_call_id": "f", "content": x("a", 201)}),
            json!({"role": "tool", "tool_call_id": "g", "content": x("b", 201)}),
            json!({"role": "tool", "tool_call_id": "h", "content": x("c", 201)}),
            json!({"role": "tool", "tool_call_id": {"k": 1}, "content": x("d", 201)}),
            json!({"role": "tool", "tool_call_id": "n", "content": x("e", 201)}),
            json!({"role": "tool", "content": {"_multimodal": true, "text_summary": 5}}),
            json!({"role": null, "content": x("f", 201)}),
            json!("not a message"),
            json!({"role": "user", "content": "tail"}),
        ];
        let p = prune(&msgs, 1, 0);
        let s = |i| content(&p, i).as_str().unwrap_or_default().to_owned();
        assert_eq!(s(2), "[unknown] (201 chars result)");
        assert_eq!(s(3), "[unknown] (201 chars result)");
        assert_eq!(s(4), "[terminal] ran `` -> exit ?, 1 lines output");
        assert_eq!(s(5), "[unknown] (201 chars result)");
        assert_eq!(s(6), "[None] (201 chars result)");
        assert_eq!(
            s(7),
            "[screenshot removed] [screenshot removed to save context]"
        );
        assert_eq!(p.changed, vec![2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn pass3_keeps_arguments_it_cannot_shrink() {
        let big_int = format!(r#"{{"big":{},"pad":"{}"}}"#, x("9", 4301), x("p", 300));
        let msgs = vec![
            json!({"role": "assistant", "tool_calls": [
                {"id": "a", "function": {"name": "t", "arguments": big_int}},
                {"id": "b", "function": {"name": "t", "arguments": x("n", 600)}},
                {"id": "c", "function": {"name": "t", "arguments": format!("{{\"a\": \"{}\"}}", x("q", 200)) + &x(" ", 300)}}
            ]}),
            json!({"role": "user", "content": "tail"}),
        ];
        let p = prune(&msgs, 1, 0);
        // Only the third changes: trailing whitespace is dropped by re-serializing.
        assert_eq!(p.changed, vec![0]);
        assert_eq!(p.pruned, 0);
        let calls = &p.messages[0]["tool_calls"];
        assert_eq!(calls[0], msgs[0]["tool_calls"][0]);
        assert_eq!(calls[1], msgs[0]["tool_calls"][1]);
        assert_eq!(
            calls[2]["function"]["arguments"],
            json!(format!("{{\"a\": \"{}\"}}", x("q", 200)))
        );
    }
}
