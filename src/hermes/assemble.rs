//! The compacted list (section 13 of `docs/hermes.md`; hermes 0.19.0 `compress()`
//! 3540–3724, `_sanitize_tool_pairs` 2798, `_strip_historical_media` 612).
//!
//! [`assemble`] puts together head copies (the system message gets our note), the summary
//! (standalone, or merged into the first tail message), and tail copies; then it removes
//! unpaired tool calls and results, replaces images older than the newest user image, and
//! drops the persistence marker. Every output message records the input index it came
//! from (`sources`), so a client holding richer objects can map the result back.
//!
//! Design decisions:
//! * Roles are read as hermes reads them here, not as H1 reads them elsewhere: a missing
//!   role counts as `user` in the role choice, and a present non-string role (null
//!   included) equals no role name. hermes does not crash on those in this step.
//! * H3: a merge with no tail message becomes a standalone `user` summary. H4 (option):
//!   with no head the summary is a `user` message, merged (H5 form) into a leading user
//!   message. H5: a user target gets the summary first, with no PRIOR CONTEXT header.
//! * Keys are removed with `shift_remove`, so the other keys keep their order.
//! * Call ids are compared with Python's equality of hashable values (`1 == 1.0 == True`,
//!   never `"1" == 1`); an id that is a list or object makes hermes crash (H1) and matches
//!   nothing here.

use serde_json::{Map, Value};

use crate::hermes::texts::HermesTexts;
use crate::hermes::{message, py, summaries, Options};

/// A short opening of hermes's own system note (V-sysnote), enough to see that a system
/// message already carries it.
const HERMES_SYSNOTE_MARKER: &str = "[Note: Some earlier conversation turns have been compacted";
/// The metadata key hermes sets on a message holding a summary.
pub const SUMMARY_KEY: &str = "_compressed_summary";
/// The session-store marker no compacted message may carry.
const PERSISTED_KEY: &str = "_db_persisted";
/// The sidecar of the bytes sent earlier, stale once the content changes.
const API_CONTENT_KEY: &str = "api_content";
/// The content of an assistant message whose every tool call was removed.
const CALL_REMOVED: &str = "(tool call removed)";
/// What an image older than the newest user image becomes.
const IMAGE_STRIPPED: &str = "[Attached image — stripped after compression]";

/// The compacted list and where each message came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// The compacted messages.
    pub messages: Vec<Value>,
    /// For each output message, the input index it copies, or `None` for a standalone
    /// summary.
    pub sources: Vec<Option<usize>>,
    /// The output index of the message holding the summary.
    pub summary_index: usize,
    /// The role of that message (`user` or `assistant`).
    pub summary_role: &'static str,
    /// Whether the summary was merged into the first tail message.
    pub merged: bool,
}

/// Assembles the compacted list from the (pruned) `messages`, the boundaries and the
/// summary text (prefix included, end marker not).
pub fn assemble(
    messages: &[Value],
    compress_start: usize,
    compress_end: usize,
    summary: &str,
    texts: &HermesTexts,
    opts: &Options,
) -> Assembled {
    let n = messages.len();
    let start = compress_start.min(n);
    let end = compress_end.clamp(start, n);
    let (role, merge) = summary_role(messages, start, end, opts);

    let mut out: Vec<(Value, Option<usize>)> = Vec::with_capacity(start + 1 + n - end);
    for (i, msg) in messages[..start].iter().enumerate() {
        let mut copy = fresh_copy(msg);
        if i == 0 && message::role(msg) == Some("system") {
            add_system_note(&mut copy, texts);
        }
        out.push((copy, Some(i)));
    }
    if !merge {
        let mut standalone = Map::new();
        standalone.insert("role".into(), Value::String(role.into()));
        standalone.insert(
            "content".into(),
            Value::String(format!("{summary}\n\n{}", summaries::END_MARKER)),
        );
        standalone.insert(SUMMARY_KEY.into(), Value::Bool(true));
        out.push((Value::Object(standalone), None));
    }
    for (i, msg) in messages.iter().enumerate().skip(end) {
        let mut copy = fresh_copy(msg);
        if merge && i == end {
            merge_summary(&mut copy, summary, role == "user");
        }
        out.push((copy, Some(i)));
    }

    sanitize_tool_pairs(&mut out);
    strip_historical_media(&mut out);
    for (msg, _) in &mut out {
        if let Some(map) = msg.as_object_mut() {
            map.shift_remove(PERSISTED_KEY);
        }
    }

    let summary_index = out
        .iter()
        .position(|(_, src)| {
            if merge {
                *src == Some(end)
            } else {
                src.is_none()
            }
        })
        .unwrap_or(start);
    let (messages, sources) = out.into_iter().unzip();
    Assembled {
        messages,
        sources,
        summary_index,
        summary_role: role,
        merged: merge,
    }
}

/// The role of the summary and whether it is merged into `messages[end]` (3568–3623,
/// with H3 and the H4 option).
fn summary_role(
    messages: &[Value],
    start: usize,
    end: usize,
    opts: &Options,
) -> (&'static str, bool) {
    let n = messages.len();
    let first_tail = if end < n {
        role_or_user(&messages[end])
    } else {
        Some("user")
    };
    if start == 0 && opts.no_head_role_user {
        // H4: a user summary, merged (H5 form) into a leading user message.
        return ("user", end < n && first_tail == Some("user"));
    }
    let last_head = if start > 0 {
        role_or_user(&messages[start - 1])
    } else {
        Some("user")
    };
    let is_user = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
    let force_user = last_head == Some("system")
        || !(messages[..start].iter().any(is_user) || messages[end.min(n)..].iter().any(is_user));
    let mut role = if matches!(last_head, Some("assistant" | "tool")) || force_user {
        "user"
    } else {
        "assistant"
    };
    let mut merge = false;
    if Some(role) == first_tail {
        let flipped = if role == "user" { "assistant" } else { "user" };
        if Some(flipped) != last_head && !force_user {
            role = flipped;
        } else {
            merge = true;
        }
    }
    if merge && end >= n {
        // H3: no tail message to merge into; hermes would drop the summary.
        return ("user", false);
    }
    (role, merge)
}

/// `msg.get("role", "user")` compared as hermes compares it: a missing role is `user`, a
/// string is itself, anything else (null included) is no role name.
fn role_or_user(msg: &Value) -> Option<&str> {
    match msg.get("role") {
        None => Some("user"),
        Some(Value::String(s)) => Some(s),
        Some(_) => None,
    }
}

/// `_fresh_compaction_message_copy`: a copy without the persistence marker.
fn fresh_copy(msg: &Value) -> Value {
    let mut copy = msg.clone();
    if let Some(map) = copy.as_object_mut() {
        map.shift_remove(PERSISTED_KEY);
    }
    copy
}

/// Appends the system note to the head's system message unless it already carries ours
/// or hermes's.
fn add_system_note(msg: &mut Value, texts: &HermesTexts) {
    let Some(map) = msg.as_object_mut() else {
        return;
    };
    let existing = map.get("content");
    let view = message::text_view(existing);
    if view.contains(texts.sysnote.as_str()) || view.contains(HERMES_SYSNOTE_MARKER) {
        return;
    }
    let note = &texts.sysnote;
    let new = match existing {
        None | Some(Value::Null) => Value::String(note.clone()),
        Some(Value::String(s)) if s.is_empty() => Value::String(note.clone()),
        Some(Value::String(s)) => Value::String(format!("{s}\n\n{note}")),
        Some(Value::Array(parts)) => {
            let mut parts = parts.clone();
            parts.push(text_part(note));
            Value::Array(parts)
        }
        Some(other) => Value::String(format!("{}{note}", py::str_of(other))),
    };
    map.insert("content".into(), new);
}

/// Merges the summary into the first tail message: hermes's form (old text, delimiter,
/// summary, end marker, under the PRIOR CONTEXT header) for an assistant target, H5's
/// (summary, end marker, then the old text) for a user target. Sets the summary flag and
/// drops the stale `api_content`.
fn merge_summary(msg: &mut Value, summary: &str, user_target: bool) {
    let Some(map) = msg.as_object_mut() else {
        return;
    };
    let old = map.get("content");
    let new = if user_target {
        let lead = format!("{summary}\n\n{}", summaries::END_MARKER);
        match old {
            Some(Value::Array(parts)) => {
                let mut merged = vec![text_part(&lead)];
                merged.extend(parts.iter().cloned());
                Value::Array(merged)
            }
            Some(Value::String(s)) if !s.is_empty() => Value::String(format!("{lead}\n\n{s}")),
            _ => Value::String(lead),
        }
    } else {
        let suffix = format!(
            "\n\n{}\n\n{summary}\n\n{}",
            summaries::MERGE_DELIMITER,
            summaries::END_MARKER
        );
        let header = format!("{}\n", summaries::PRIOR_CONTEXT_HEADER);
        match old {
            Some(Value::Array(parts)) => {
                let mut merged = vec![text_part(&header)];
                merged.extend(parts.iter().cloned());
                merged.push(text_part(&suffix));
                Value::Array(merged)
            }
            None | Some(Value::Null) => Value::String(format!("{header}{suffix}")),
            Some(Value::String(s)) => Value::String(format!("{header}{s}{suffix}")),
            Some(other) => Value::String(format!("{header}{}{suffix}", py::str_of(other))),
        }
    };
    map.insert("content".into(), new);
    map.insert(SUMMARY_KEY.into(), Value::Bool(true));
    map.shift_remove(API_CONTENT_KEY);
}

fn text_part(text: &str) -> Value {
    let mut part = Map::new();
    part.insert("type".into(), Value::String("text".into()));
    part.insert("text".into(), Value::String(text.into()));
    Value::Object(part)
}

/// A call or result id as Python's set membership sees it: strings by value, numbers and
/// booleans by numeric value. `None` for a falsy id (never recorded) and for a list or
/// object (unhashable: hermes crashes, H1).
#[derive(Debug, Clone, PartialEq)]
enum Id {
    Str(String),
    Num(String),
}

fn id_of(v: &Value) -> Option<Id> {
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
fn number_key(token: &str) -> String {
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
fn sanitize_tool_pairs(out: &mut Vec<(Value, Option<usize>)>) {
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

/// `_strip_historical_media`: images in messages before the newest user message with an
/// image become a text placeholder (their `api_content` dropped).
fn strip_historical_media(out: &mut [(Value, Option<usize>)]) {
    let has_images = |m: &Value| match m.get("content") {
        Some(Value::Array(parts)) => parts.iter().any(message::is_image_part),
        _ => false,
    };
    let anchor = out
        .iter()
        .rposition(|(m, _)| m.get("role").and_then(Value::as_str) == Some("user") && has_images(m));
    let Some(anchor) = anchor.filter(|&a| a > 0) else {
        return;
    };
    for (msg, _) in &mut out[..anchor] {
        if !has_images(msg) {
            continue;
        }
        let Some(map) = msg.as_object_mut() else {
            continue;
        };
        if let Some(Value::Array(parts)) = map.get("content") {
            let parts = parts
                .iter()
                .map(|p| {
                    if message::is_image_part(p) {
                        text_part(IMAGE_STRIPPED)
                    } else {
                        p.clone()
                    }
                })
                .collect();
            map.insert("content".into(), Value::Array(parts));
        }
        map.shift_remove(API_CONTENT_KEY);
    }
}

#[cfg(test)]
mod tests {
    //! Expected lists come from hermes 0.19.0's `compress()` with its boundaries, pruning
    //! and summary stubbed (`<END>`, `<DELIM>`, `<HEADER>` stand for the interop markers,
    //! `<NOTE>` for the system note); user targets follow H5 instead, as marked.
    use super::*;

    const NOTE: &str = "Test note.";

    fn texts() -> HermesTexts {
        HermesTexts::from_lookup(|name| (name == "sysnote.md").then(|| NOTE.to_string()))
    }

    fn expand(s: &str) -> String {
        s.replace("<END>", summaries::END_MARKER)
            .replace("<DELIM>", summaries::MERGE_DELIMITER)
            .replace("<HEADER>", summaries::PRIOR_CONTEXT_HEADER)
            .replace("<NOTE>", NOTE)
    }

    /// Parses `json` after expanding the placeholders.
    fn list(json: &str) -> Vec<Value> {
        serde_json::from_str(&expand(json)).expect("test JSON")
    }

    fn run_with(input: &str, start: usize, end: usize, opts: Options) -> Assembled {
        assemble(&list(input), start, end, "SUM", &texts(), &opts)
    }

    fn run(input: &str, start: usize, end: usize) -> Assembled {
        run_with(input, start, end, Options::default())
    }

    /// Compares serialized, so key order counts.
    fn same(got: &Assembled, want: &str) {
        let want = serde_json::to_string(&list(want)).expect("serializes");
        let got = serde_json::to_string(&got.messages).expect("serializes");
        assert_eq!(got, want);
    }

    #[test]
    fn a_system_head_gets_the_note_and_a_user_tail_the_summary_first_h5() {
        let got = run(
            r#"[{"role":"system","content":"S"},{"role":"user","content":"u1"},{"role":"assistant","content":"a1"},
                {"role":"user","content":"u2","_db_persisted":true},{"role":"assistant","content":"a2"}]"#,
            1,
            3,
        );
        // hermes: "<HEADER>\nu2\n\n<DELIM>\n\nSUM\n\n<END>"
        same(
            &got,
            r#"[{"role":"system","content":"S\n\n<NOTE>"},
                {"role":"user","content":"SUM\n\n<END>\n\nu2","_compressed_summary":true},
                {"role":"assistant","content":"a2"}]"#,
        );
        assert_eq!(got.sources, [Some(0), Some(3), Some(4)]);
        assert_eq!(
            (got.summary_index, got.summary_role, got.merged),
            (1, "user", true)
        );
    }

    #[test]
    fn an_assistant_head_and_user_tail_merge_dropping_the_sidecar_h5() {
        let got = run(
            r#"[{"role":"user","content":"u0"},{"role":"assistant","content":"a0"},{"role":"user","content":"x"},
                {"role":"user","content":"tail","api_content":"old","_db_persisted":1},{"role":"assistant","content":"z"}]"#,
            2,
            3,
        );
        same(
            &got,
            r#"[{"role":"user","content":"u0"},{"role":"assistant","content":"a0"},
                {"role":"user","content":"SUM\n\n<END>\n\ntail","_compressed_summary":true},
                {"role":"assistant","content":"z"}]"#,
        );
    }

    #[test]
    fn an_assistant_target_gets_hermes_form_with_list_content() {
        let got = run(
            r#"[{"role":"user","content":"u0"},{"role":"assistant","content":"a"},{"role":"user","content":"x"},
                {"role":"assistant","content":[{"type":"text","text":"t"}],"api_content":"q"},{"role":"user","content":"z"}]"#,
            1,
            3,
        );
        same(
            &got,
            r#"[{"role":"user","content":"u0"},{"role":"assistant","content":[{"type":"text","text":"<HEADER>\n"},
                {"type":"text","text":"t"},{"type":"text","text":"\n\n<DELIM>\n\nSUM\n\n<END>"}],"_compressed_summary":true},
                {"role":"user","content":"z"}]"#,
        );
        assert_eq!(got.sources, [Some(0), Some(3), Some(4)]);
        assert_eq!(
            (got.summary_index, got.summary_role, got.merged),
            (1, "assistant", true)
        );
    }

    #[test]
    fn assistant_targets_with_null_or_other_content_and_an_existing_flag() {
        let head = r#"{"role":"user","content":"u0"},{"role":"user","content":"u1"},{"role":"user","content":"x"}"#;
        let got = run(
            &format!(
                r#"[{head},{{"role":"assistant","content":null,"_compressed_summary":false,"k":1}},{{"role":"user","content":"z"}}]"#
            ),
            2,
            3,
        );
        same(
            &got,
            r#"[{"role":"user","content":"u0"},{"role":"user","content":"u1"},
                {"role":"assistant","content":"<HEADER>\n\n\n<DELIM>\n\nSUM\n\n<END>","_compressed_summary":true,"k":1},
                {"role":"user","content":"z"}]"#,
        );
        let got = run(
            &format!(
                r#"[{head},{{"role":"assistant","content":false}},{{"role":"user","content":"z"}}]"#
            ),
            2,
            3,
        );
        same(
            &got,
            r#"[{"role":"user","content":"u0"},{"role":"user","content":"u1"},
                {"role":"assistant","content":"<HEADER>\nFalse\n\n<DELIM>\n\nSUM\n\n<END>","_compressed_summary":true},
                {"role":"user","content":"z"}]"#,
        );
    }

    #[test]
    fn a_user_head_and_user_tail_flip_to_a_standalone_assistant_summary() {
        let got = run(
            r#"[{"role":"system","content":[{"type":"text","text":"S"}]},{"role":"user","content":"u0"},
                {"role":"assistant","content":"a"},{"role":"user","content":"x"},{"role":"user","content":"z"}]"#,
            2,
            4,
        );
        same(
            &got,
            r#"[{"role":"system","content":[{"type":"text","text":"S"},{"type":"text","text":"<NOTE>"}]},
                {"role":"user","content":"u0"},{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},
                {"role":"user","content":"z"}]"#,
        );
        assert_eq!(got.sources, [Some(0), Some(1), None, Some(4)]);
        assert_eq!(
            (got.summary_index, got.summary_role, got.merged),
            (2, "assistant", false)
        );
    }

    #[test]
    fn with_no_user_left_the_summary_is_a_user_message() {
        let got = run(
            r#"[{"role":"assistant","content":"a0"},{"role":"user","content":"x"},{"role":"tool","content":"r"},
                {"role":"user","content":"x"},{"role":"assistant","content":"t"}]"#,
            0,
            4,
        );
        same(
            &got,
            r#"[{"role":"user","content":"SUM\n\n<END>","_compressed_summary":true},{"role":"assistant","content":"t"}]"#,
        );
        assert_eq!(got.sources, [None, Some(4)]);
    }

    const NO_HEAD_USER_TAIL: &str = r#"[{"role":"user","content":"x"},{"role":"assistant","content":"y"},
        {"role":"user","content":"x"},{"role":"user","content":"t1"},{"role":"assistant","content":"t2"}]"#;
    const NO_HEAD_ASSISTANT_TAIL: &str = r#"[{"role":"user","content":"x"},{"role":"assistant","content":"y"},
        {"role":"user","content":"x"},{"role":"assistant","content":"t1","tool_calls":[]},{"role":"user","content":"t2"}]"#;

    #[test]
    fn with_no_head_hermes_assumes_a_user_head() {
        same(
            &run(NO_HEAD_USER_TAIL, 0, 3),
            r#"[{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},
                {"role":"user","content":"t1"},{"role":"assistant","content":"t2"}]"#,
        );
        same(
            &run(NO_HEAD_ASSISTANT_TAIL, 0, 3),
            r#"[{"role":"assistant","content":"<HEADER>\nt1\n\n<DELIM>\n\nSUM\n\n<END>","tool_calls":[],"_compressed_summary":true},
                {"role":"user","content":"t2"}]"#,
        );
    }

    #[test]
    fn h4_with_no_head_the_summary_is_a_user_message() {
        let opts = Options {
            no_head_role_user: true,
            ..Options::default()
        };
        let got = run_with(NO_HEAD_USER_TAIL, 0, 3, opts);
        same(
            &got,
            r#"[{"role":"user","content":"SUM\n\n<END>\n\nt1","_compressed_summary":true},{"role":"assistant","content":"t2"}]"#,
        );
        assert_eq!(
            (got.summary_index, got.summary_role, got.merged),
            (0, "user", true)
        );
        let got = run_with(NO_HEAD_ASSISTANT_TAIL, 0, 3, opts);
        same(
            &got,
            r#"[{"role":"user","content":"SUM\n\n<END>","_compressed_summary":true},
                {"role":"assistant","content":"t1","tool_calls":[]},{"role":"user","content":"t2"}]"#,
        );
        assert_eq!(
            (got.summary_index, got.summary_role, got.merged),
            (0, "user", false)
        );
    }

    #[test]
    fn h3_a_merge_with_no_tail_becomes_a_standalone_user_summary() {
        let input = r#"[{"role":"user","content":"u"},{"role":"assistant","content":"a"},{"role":"user","content":"x"},
            {"role":"assistant","content":"y"},{"role":"user","content":"w"}]"#;
        // hermes: [u, a], the summary lost.
        let got = run(input, 2, 5);
        same(
            &got,
            r#"[{"role":"user","content":"u"},{"role":"assistant","content":"a"},
                {"role":"user","content":"SUM\n\n<END>","_compressed_summary":true}]"#,
        );
        assert_eq!(
            (got.summary_index, got.summary_role, got.merged),
            (2, "user", false)
        );
        // No merge needed: hermes's own choice stands.
        let input = r#"[{"role":"user","content":"u"},{"role":"user","content":"a"},{"role":"user","content":"x"},
            {"role":"assistant","content":"y"},{"role":"user","content":"w"}]"#;
        same(
            &run(input, 2, 5),
            r#"[{"role":"user","content":"u"},{"role":"user","content":"a"},
                {"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true}]"#,
        );
    }

    #[test]
    fn a_missing_role_counts_as_user_and_a_null_role_as_no_role() {
        // Missing roles: no user survives (the test is `role == "user"`), so a user summary
        // that collides with the (missing = user) tail is merged; H5 form.
        same(
            &run(
                r#"[{"content":"h"},{"role":"assistant","content":"y"},{"role":"user","content":"x"},
                    {"content":"t1"},{"role":"assistant","content":"t2"}]"#,
                1,
                3,
            ),
            r#"[{"content":"h"},{"content":"SUM\n\n<END>\n\nt1","_compressed_summary":true},{"role":"assistant","content":"t2"}]"#,
        );
        same(
            &run(
                r#"[{"role":"user","content":"h"},{"role":"assistant","content":"y"},{"role":"user","content":"x"},
                    {"role":null,"content":"t1"},{"role":"assistant","content":"t2"}]"#,
                1,
                3,
            ),
            r#"[{"role":"user","content":"h"},{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},
                {"role":null,"content":"t1"},{"role":"assistant","content":"t2"}]"#,
        );
    }

    #[test]
    fn the_system_note_replaces_null_appends_to_other_values_and_is_not_repeated() {
        let rest = r#"{"role":"user","content":"u"},{"role":"assistant","content":"x"},{"role":"user","content":"y"},{"role":"assistant","content":"z"}"#;
        let tail = r#"{"role":"user","content":"u"},{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},{"role":"user","content":"y"},{"role":"assistant","content":"z"}"#;
        let system = |content: &str| {
            let input =
                format!(r#"[{{"role":"system","content":{content},"_db_persisted":true}},{rest}]"#);
            let got = run(&input, 2, 3);
            serde_json::to_string(&got.messages[0]).expect("serializes")
        };
        assert_eq!(
            system("null"),
            expand(r#"{"role":"system","content":"<NOTE>"}"#)
        );
        assert_eq!(
            system(r#""""#),
            expand(r#"{"role":"system","content":"<NOTE>"}"#)
        );
        assert_eq!(
            system("false"),
            expand(r#"{"role":"system","content":"False<NOTE>"}"#)
        );
        assert_eq!(
            system("{}"),
            expand(r#"{"role":"system","content":"{}<NOTE>"}"#)
        );
        for carried in [
            format!("pre {NOTE} post"),
            format!("pre {HERMES_SYSNOTE_MARKER} post"),
        ] {
            let content = serde_json::to_string(&carried).expect("serializes");
            let want = format!(r#"{{"role":"system","content":{content}}}"#);
            assert_eq!(system(&content), want);
        }
        let got = run(
            &format!(r#"[{{"role":"system","content":"S"}},{rest}]"#),
            2,
            3,
        );
        same(
            &got,
            &format!(r#"[{{"role":"system","content":"S\n\n<NOTE>"}},{tail}]"#),
        );
    }

    #[test]
    fn sanitation_drops_unpaired_results_and_calls_with_python_id_equality() {
        let got = run(
            r#"[{"role":"system","content":"S"},{"role":"assistant","content":"","tool_calls":[{"id":"gone","function":{"name":"f"}}]},
                {"role":"tool","tool_call_id":"gone","content":"r"},
                {"role":"user","content":"x"},
                {"role":"assistant","content":"  ","tool_calls":[{"id":"a","call_id":"ca","function":{}},{"id":"b"},"weird",{"id":""}]},
                {"role":"tool","tool_call_id":"ca","content":"ok"},{"role":"tool","tool_call_id":"a","content":"orphan"},
                {"role":"tool","content":"no id"},{"role":"tool","tool_call_id":"","content":"empty id"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"pending"}]},
                {"role":"assistant","content":"keep","tool_calls":[{"id":1}]},{"role":"tool","tool_call_id":1.0,"content":"num"},
                {"role":"assistant","content":"","tool_calls":[{"id":true}]},{"role":"tool","tool_call_id":1,"content":"num2"},
                {"role":"assistant","content":"s","tool_calls":[{"id":"7"}]},{"role":"tool","tool_call_id":7,"content":"mismatch"}]"#,
            1,
            3,
        );
        // hermes merges into the user "x" in its form; H5 here.
        same(
            &got,
            r#"[{"role":"system","content":"S\n\n<NOTE>"},
                {"role":"user","content":"SUM\n\n<END>\n\nx","_compressed_summary":true},
                {"role":"assistant","content":"  ","tool_calls":[{"id":"a","call_id":"ca","function":{}},"weird",{"id":""}]},
                {"role":"tool","tool_call_id":"ca","content":"ok"},{"role":"tool","content":"no id"},
                {"role":"tool","tool_call_id":"","content":"empty id"},{"role":"assistant","content":"(tool call removed)"},
                {"role":"assistant","content":"keep","tool_calls":[{"id":1}]},{"role":"tool","tool_call_id":1.0,"content":"num"},
                {"role":"assistant","content":"","tool_calls":[{"id":true}]},{"role":"tool","tool_call_id":1,"content":"num2"},
                {"role":"assistant","content":"s"}]"#,
        );
        let want: Vec<Option<usize>> = [0, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14]
            .into_iter()
            .map(Some)
            .collect();
        assert_eq!(got.sources, want);
        assert_eq!(got.summary_index, 1);
    }

    #[test]
    fn images_before_the_newest_user_image_are_replaced() {
        let got = run(
            r#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"t"}],"api_content":"x"},
                {"role":"assistant","content":"a"},{"role":"user","content":"x"},
                {"role":"assistant","content":[{"type":"input_image","image_url":"i"}],"api_content":"y","z":1},
                {"role":"tool","tool_call_id":"","content":[{"type":"image","source":{}}]},
                {"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{}}]},
                {"role":"assistant","content":[{"type":"image_url","image_url":"later"}]}]"#,
            2,
            3,
        );
        let stripped = format!(r#"{{"type":"text","text":"{IMAGE_STRIPPED}"}}"#);
        same(
            &got,
            &format!(
                r#"[{{"role":"user","content":[{stripped},{{"type":"text","text":"t"}}]}},{{"role":"assistant","content":"a"}},
                    {{"role":"user","content":"SUM\n\n<END>","_compressed_summary":true}},
                    {{"role":"assistant","content":[{stripped}],"z":1}},{{"role":"tool","tool_call_id":"","content":[{stripped}]}},
                    {{"role":"user","content":[{{"type":"text","text":"look"}},{{"type":"image","source":{{}}}}]}},
                    {{"role":"assistant","content":[{{"type":"image_url","image_url":"later"}}]}}]"#
            ),
        );
        // The only user image is the first message: nothing before it to strip.
        let got = run(
            r#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}}]},{"role":"assistant","content":"a"},
                {"role":"user","content":"x"},{"role":"user","content":"t"},{"role":"assistant","content":[{"type":"image"}]}]"#,
            0,
            3,
        );
        same(
            &got,
            r#"[{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},{"role":"user","content":"t"},
                {"role":"assistant","content":[{"type":"image"}]}]"#,
        );
    }

    #[test]
    fn number_keys_follow_python_equality() {
        assert_eq!(number_key("1"), number_key("1.0"));
        assert_eq!(number_key("1"), number_key("1e0"));
        assert_eq!(number_key("-0"), number_key("0"));
        assert_ne!(number_key("1"), number_key("1.5"));
        assert_eq!(id_of(&Value::Bool(true)), id_of(&serde_json::json!(1)));
        assert_ne!(id_of(&serde_json::json!("1")), id_of(&serde_json::json!(1)));
        assert_eq!(id_of(&serde_json::json!(0)), None);
        assert_eq!(id_of(&serde_json::json!([1])), None);
    }
}
