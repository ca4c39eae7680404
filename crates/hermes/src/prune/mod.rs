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

use crate::py::{self, PyValue};
use crate::{message, tokens, tool_summary};

mod args;
pub use args::shrink_args;

/// What pass 1 writes over an older duplicate.
pub(crate) const DUPLICATE_MARKER: &str =
    "[Duplicate tool output — same content as a more recent call]";
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
pub(crate) struct Pruned {
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
pub(crate) fn prune_boundary(msgs: &[Value], protect_last_n: usize, tail_budget: u64) -> usize {
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
mod tests;
