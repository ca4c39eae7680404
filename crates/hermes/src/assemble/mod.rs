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
//! * The note is not added again when the system message holds ours or hermes's whole
//!   note; hermes's is known by its opening, length and digest (its words stay out, H12),
//!   since hermes's own substring test adds a note after a partial one.
//! * Keys are removed with `shift_remove`, so the other keys keep their order.
//! * `pairs` (tool-pair sanitation) and `media` (historical images) are the two
//!   passes over the assembled list.

use serde_json::{Map, Value};

use crate::texts::HermesTexts;
use crate::{message, py, summaries, Switches};

mod media;
mod pairs;

use media::{strip_historical_media, text_part};
use pairs::sanitize_tool_pairs;

/// hermes's own system note (V-sysnote), known by its shape since its text stays out of
/// the repository (H12): hermes checks for its whole note, so its opening alone is not it.
const HERMES_SYSNOTE: KnownText = KnownText {
    opening: "[Note: Some earlier conversation turns have been compacted",
    chars: 327,
    md5: "4772c6f4fe59cbf8644bfaa2bcbf495e",
};
/// The metadata key hermes sets on a message holding a summary.
pub(crate) const SUMMARY_KEY: &str = "_compressed_summary";
/// The session-store marker no compacted message may carry.
const PERSISTED_KEY: &str = "_db_persisted";
/// The sidecar of the bytes sent earlier, stale once the content changes.
const API_CONTENT_KEY: &str = "api_content";

/// The compacted list and where each message came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Assembled {
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
    opts: &Switches,
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
        strip_persistence_marker(msg);
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
    opts: &Switches,
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

/// Removes the session-store marker `_db_persisted` (`_strip_persistence_markers`), which
/// no compacted message may carry (also for the prune-only answer of H2).
pub(crate) fn strip_persistence_marker(msg: &mut Value) {
    if let Some(map) = msg.as_object_mut() {
        map.shift_remove(PERSISTED_KEY);
    }
}

/// `_fresh_compaction_message_copy`: a copy without the persistence marker.
fn fresh_copy(msg: &Value) -> Value {
    let mut copy = msg.clone();
    strip_persistence_marker(&mut copy);
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
    if view.contains(texts.sysnote.as_str()) || contains_known(&view, &HERMES_SYSNOTE) {
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

/// A fixed text of hermes: how it opens, its length in code points, the MD5 of its UTF-8.
struct KnownText {
    opening: &'static str,
    chars: usize,
    md5: &'static str,
}

/// `known in text` (Python's substring test) without knowing the text: some occurrence
/// of its opening starts code points of its length and digest.
fn contains_known(text: &str, known: &KnownText) -> bool {
    text.match_indices(known.opening).any(|(i, _)| {
        let head = py::head(&text[i..], known.chars);
        py::len(head) == known.chars && summaries::md5_hex(head) == known.md5
    })
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

#[cfg(test)]
mod tests;
