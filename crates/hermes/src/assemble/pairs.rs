//! Tool-pair sanitation (`_sanitize_tool_pairs`, hermes 0.19.0 2798): results whose call
//! is gone, and calls whose result is gone, are removed from the assembled list.
//!
//! Design decision: call ids are compared with Python's equality of hashable values
//! (`1 == 1.0 == True`, never `"1" == 1`); an id that is a list or object makes hermes
//! crash (H1) and matches nothing here.

use serde_json::Value;

use crate::py;

/// The content of an assistant message whose every tool call was removed.
const CALL_REMOVED: &str = "(tool call removed)";

/// A call or result id as Python's set membership sees it: strings by value, numbers and
/// booleans by numeric value. `None` for a falsy id (never recorded) and for a list or
/// object (unhashable: hermes crashes, H1).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Id {
    Str(String),
    Num(String),
}

pub(super) fn id_of(v: &Value) -> Option<Id> {
    if !py::is_truthy(v) {
        return None;
    }
    match v {
        Value::String(s) => Some(Id::Str(s.clone())),
        Value::Bool(_) => Some(Id::Num("1".into())),
        Value::Number(num) => Some(Id::Num(number_key(&num.to_string()))),
        _ => None,
    }
}

/// A number token reduced so that equal Python values give equal keys: an integral value
/// is its integer digits (`1`, `1.0`, `1e0`), anything else its `f64` bits.
pub(super) fn number_key(token: &str) -> String {
    let is_float = token.contains(['.', 'e', 'E']);
    if !is_float {
        let digits = token.trim_start_matches('-').trim_start_matches('0');
        let sign = if token.starts_with('-') && !digits.is_empty() {
            "-"
        } else {
            ""
        };
        return format!("{sign}{}", if digits.is_empty() { "0" } else { digits });
    }
    match token.parse::<f64>() {
        Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
            format!("{}", f as i64)
        }
        Ok(f) => format!("f{}", f.to_bits()),
        Err(_) => format!("t{token}"),
    }
}

/// `_get_tool_call_id`: `call_id or id` of an object call; a call of any other shape has
/// none.
fn call_id(call: &Value) -> Option<Id> {
    let pick = |key: &str| call.get(key).filter(|v| py::is_truthy(v));
    pick("call_id").or_else(|| pick("id")).and_then(id_of)
}

/// `_sanitize_tool_pairs`: drops results whose call is gone and calls whose result is
/// gone (still-pending calls included).
pub(super) fn sanitize_tool_pairs(out: &mut Vec<(Value, Option<usize>)>) {
    let role_is = |m: &Value, r: &str| m.get("role").and_then(Value::as_str) == Some(r);
    let array_calls = |m: &Value| match m.get("tool_calls") {
        Some(Value::Array(calls)) => calls.clone(),
        _ => Vec::new(),
    };
    let mut calls: Vec<Id> = Vec::new();
    let mut results: Vec<Id> = Vec::new();
    for (msg, _) in out.iter() {
        if role_is(msg, "assistant") {
            calls.extend(array_calls(msg).iter().filter_map(call_id));
        }
        if role_is(msg, "tool") {
            results.extend(msg.get("tool_call_id").and_then(id_of));
        }
    }
    out.retain(|(msg, _)| {
        !(role_is(msg, "tool")
            && msg
                .get("tool_call_id")
                .and_then(id_of)
                .is_some_and(|id| !calls.contains(&id)))
    });
    let missing: Vec<&Id> = calls.iter().filter(|id| !results.contains(id)).collect();
    if missing.is_empty() {
        return;
    }
    for (msg, _) in out.iter_mut() {
        if !role_is(msg, "assistant") {
            continue;
        }
        let Some(Value::Array(tcs)) = msg.get("tool_calls") else {
            continue;
        };
        let kept: Vec<Value> = tcs
            .iter()
            .filter(|tc| !call_id(tc).is_some_and(|id| missing.contains(&&id)))
            .cloned()
            .collect();
        if kept.len() == tcs.len() {
            continue;
        }
        let Some(map) = msg.as_object_mut() else {
            continue;
        };
        if !kept.is_empty() {
            map.insert("tool_calls".into(), Value::Array(kept));
            continue;
        }
        map.shift_remove("tool_calls");
        let blank = match map.get("content") {
            Some(Value::String(s)) => py::strip(s).is_empty(),
            Some(v) => !py::is_truthy(v),
            None => true,
        };
        if blank {
            map.insert("content".into(), Value::String(CALL_REMOVED.into()));
        }
    }
}
