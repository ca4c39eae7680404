//! The summarizer's answer made into the summary (section 11 of `docs/hermes.md`;
//! hermes 0.19.0 `_generate_summary` 2390–2440 and `_ground_historical_task_snapshot`
//! 2748).
//!
//! [`finish`] turns the raw answer into `Finished { body, summary }`: `body` is what the
//! state carries on as `previousSummary`, `summary` is our prefix + `"\n"` + the body
//! without any earlier prefix. A blank answer is a failure with hermes's error text, which
//! the pipeline then treats like any other summarizer failure (static fallback or abort).
//!
//! Design decisions:
//! * The grounding of the task snapshot is hand-coded, not a regex: the section finder of
//!   hermes (`(?ms)^## Historical Task Snapshot\s*\n.*?(?=^## |\Z)`) is a lazy scan with a
//!   look-ahead, which a backtracking engine runs against a limit; the loop below takes
//!   the same first match with no limit and no panic.
//! * The snapshot line and the scaffolding prefixes are formats and detection markers
//!   that hermes's output carries (quoted in the contract), so they are constants here,
//!   not texts of `prompts/hermes/`.
//! * Redaction follows `Switches::redact`; with it off (conformance, H10) every redaction
//!   step is the identity, as hermes's is with `HERMES_REDACT_SECRETS=false`.

use serde_json::Value;

use crate::texts::HermesTexts;
use crate::{message, py, redact, summaries, think, Switches};

/// The heading hermes reads back and rewrites in every summary (kept verbatim, H12).
pub(crate) const TASK_HEADING: &str = "## Historical Task Snapshot";

/// The grounded snapshot line: [`SNAPSHOT_LEAD`] + pyrepr(task) + [`SNAPSHOT_TAIL`].
const SNAPSHOT_LEAD: &str = "User asked (deterministic, from compacted turns): ";
const SNAPSHOT_TAIL: &str =
    "\nHistorical only; newer protected-tail messages after this summary win.";

/// Longest snapshot text kept whole; longer ones are cut to [`TASK_CUT`] + the marker.
const TASK_MAX: usize = 1400;
const TASK_CUT: usize = 1385;
const TRUNCATED: &str = " ...[truncated]";

/// Flags hermes sets on user-role messages it inserted itself
/// (`conversation_compression.py` `_SYNTHETIC_USER_FLAGS`).
const SYNTHETIC_FLAGS: [&str; 4] = [
    "_todo_snapshot_synthetic",
    "_empty_recovery_synthetic",
    "_verification_stop_synthetic",
    "_pre_verify_synthetic",
];

/// Openings of user-role scaffolding hermes inserts (`_SYNTHETIC_USER_PREFIXES`).
const SCAFFOLDING: [&str; 5] = [
    "[System: Your previous response was truncated",
    "[System: The previous response was cut off",
    "[System: Your previous tool call",
    "[Your active task list was preserved across context compression]",
    "[IMPORTANT: Background process ",
];

/// The answer made into a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The next `previousSummary`: the grounded body, or, when no real user turn was
    /// summarized, the stripped and redacted answer as the model wrote it.
    pub body: String,
    /// The summary text: our prefix + `"\n"` + the body without any earlier prefix.
    pub summary: String,
}

/// Who answered, for the error text of a blank answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source<'a> {
    /// The provider name (hermes writes `auto` when there is none).
    pub provider: Option<&'a str>,
    /// The model that answered.
    pub model: &'a str,
}

/// Makes the summarizer's answer `raw` into the summary of `turns` (section 11).
///
/// `Err` carries the failure's message when the answer is blank; like every failure's, it
/// is reported through [`error_text`](crate::fallback::error_text).
pub fn finish(
    raw: &str,
    source: Source<'_>,
    turns: &[Value],
    texts: &HermesTexts,
    opts: &Switches,
) -> Result<Finished, String> {
    if py::strip(raw).is_empty() {
        let provider = source.provider.filter(|p| !p.is_empty()).unwrap_or("auto");
        return Err(format!(
            "Context compression LLM returned empty content (provider={provider} model={})",
            source.model
        ));
    }
    // Reasoning blocks go; when nothing else is left the raw answer stays, blocks and all.
    let stripped = think::strip_think_blocks(raw);
    let answer = match py::strip(&stripped) {
        "" => raw,
        x => x,
    };
    let redacted = redact_if(py::strip(answer), opts);
    let body = ground(&redacted, turns, texts, opts);
    let summary = with_prefix(&body, texts);
    Ok(Finished { body, summary })
}

/// `_with_summary_prefix`: our prefix + `"\n"` + the body of `text` (any earlier prefix,
/// merge delimiter and end marker removed), or the prefix alone when that body is empty.
pub(crate) fn with_prefix(text: &str, texts: &HermesTexts) -> String {
    let body = summaries::extract_body(text, &texts.prefix);
    if body.is_empty() {
        texts.prefix.clone()
    } else {
        format!("{}\n{body}", texts.prefix)
    }
}

/// `_ground_historical_task_snapshot`: the task snapshot section of `summary` rewritten
/// from the newest real user turn, or `summary` unchanged when there is none.
pub(crate) fn ground(
    summary: &str,
    turns: &[Value],
    texts: &HermesTexts,
    opts: &Switches,
) -> String {
    let Some(snapshot) = task_snapshot(turns, texts, opts) else {
        return summary.to_string();
    };
    let body = summaries::extract_body(summary, &texts.prefix);
    let replacement = format!("{TASK_HEADING}\n{snapshot}\n\n");
    let grounded = match task_section(&body) {
        Some((start, end)) => format!("{}{replacement}{}", &body[..start], &body[end..]),
        None => format!("{replacement}{body}"),
    };
    py::strip(&grounded).to_string()
}

/// `_latest_user_task_snapshot`: the snapshot line from the newest real user turn.
pub(crate) fn task_snapshot(
    turns: &[Value],
    texts: &HermesTexts,
    opts: &Switches,
) -> Option<String> {
    for msg in turns.iter().rev() {
        if !is_real_user_message(msg, texts) {
            continue;
        }
        let view = message::text_view(message::content(msg));
        let text = redact_if(py::strip(&view), opts);
        if text.is_empty() {
            continue;
        }
        let mut text = squeeze_spaces(&text);
        if py::len(&text) > TASK_MAX {
            text = format!("{}{TRUNCATED}", py::rstrip(py::head(&text, TASK_CUT)));
        }
        return Some(format!(
            "{SNAPSHOT_LEAD}{}{SNAPSHOT_TAIL}",
            py::repr_str(&text)
        ));
    }
    None
}

/// `_is_real_user_message` (conversation_compression.py 583): a user turn written by the
/// human, not by hermes (synthetic flags, scaffolding notices, handoff summaries).
pub(crate) fn is_real_user_message(msg: &Value, texts: &HermesTexts) -> bool {
    if message::role(msg) != Some("user") {
        return false;
    }
    if SYNTHETIC_FLAGS
        .iter()
        .any(|flag| msg.get(flag).is_some_and(py::is_truthy))
    {
        return false;
    }
    let full = message_text(msg);
    let text = py::strip(&full);
    if text.is_empty() || SCAFFOLDING.iter().any(|p| text.starts_with(p)) {
        return false;
    }
    !summaries::is_handoff_summary(Some(&Value::String(text.to_string())), &texts.prefix)
}

/// `_message_text` (conversation_compression.py): string content as it is; for a list,
/// the `text` (else `content`) of each object part as Python `str`, joined by `\n`.
fn message_text(msg: &Value) -> String {
    match message::content(msg) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.is_object())
            .map(|p| {
                [p.get("text"), p.get("content")]
                    .into_iter()
                    .flatten()
                    .find(|v| py::is_truthy(v))
                    .map(py::str_of)
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The byte range of the first `## Historical Task Snapshot` section, as hermes's
/// `(?ms)^HEADING\s*\n.*?(?=^## |\Z)` finds it: the heading at a line start, a
/// whitespace run holding a newline (the match ends at its last newline), then up to the
/// next line starting with `## `, or the end.
fn task_section(body: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(found) = body[from..].find(TASK_HEADING) {
        let start = from + found;
        from = start + TASK_HEADING.len();
        if start > 0 && !body[..start].ends_with('\n') {
            continue;
        }
        let after = &body[from..];
        let run = after
            .char_indices()
            .find(|&(_, c)| !py::is_space(c))
            .map_or(after.len(), |(i, _)| i);
        let Some(newline) = after[..run].rfind('\n') else {
            continue;
        };
        let scan = from + newline + 1;
        let end = line_starting_with_heading(body, scan).unwrap_or(body.len());
        return Some((start, end));
    }
    None
}

/// The first position `>= from` that starts a line (start of text or after `\n`) and is
/// followed by `## `.
fn line_starting_with_heading(body: &str, from: usize) -> Option<usize> {
    if (from == 0 || body[..from].ends_with('\n')) && body[from..].starts_with("## ") {
        return Some(from);
    }
    body[from..]
        .match_indices("\n## ")
        .next()
        .map(|(i, _)| from + i + 1)
}

/// `re.sub(r"\s+", " ", text)`: every whitespace run becomes one space (ends kept).
pub(crate) fn squeeze_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.chars() {
        if py::is_space(c) {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out
}

/// `redact_sensitive_text` when redaction is on (H10), else the text as it is.
pub(crate) fn redact_if(text: &str, opts: &Switches) -> String {
    if opts.redact {
        redact::redact_sensitive_text(text)
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PREFIX: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Test prefix.";

    fn texts() -> HermesTexts {
        HermesTexts::from_lookup(|name| (name == "prefix.md").then(|| PREFIX.to_string()))
    }

    const PLAIN: Switches = Switches {
        redact: false,
        no_head_role_user: false,
    };

    fn user(content: Value) -> Value {
        json!({"role": "user", "content": content})
    }

    fn snapshot_of(repr: &str) -> String {
        format!("{SNAPSHOT_LEAD}{repr}{SNAPSHOT_TAIL}")
    }

    fn grounded(repr: &str) -> String {
        format!("{TASK_HEADING}\n{}\n\n", snapshot_of(repr))
    }

    const SOURCE: Source<'static> = Source {
        provider: None,
        model: "m1",
    };

    #[test]
    fn a_blank_answer_is_a_failure_naming_provider_and_model() {
        let err = finish(" \n\t", SOURCE, &[], &texts(), &PLAIN).unwrap_err();
        assert!(err.ends_with("(provider=auto model=m1)"), "{err}");
        let named = Source {
            provider: Some("openrouter"),
            model: "m2",
        };
        let err = finish("", named, &[], &texts(), &PLAIN).unwrap_err();
        assert!(err.ends_with("(provider=openrouter model=m2)"), "{err}");
    }

    #[test]
    fn reasoning_blocks_go_unless_nothing_else_is_left() {
        let t = texts();
        // strip_think_blocks("<think>plan</think>\n## Goal\nG").strip() == "## Goal\nG"
        let done = finish("<think>plan</think>\n## Goal\nG", SOURCE, &[], &t, &PLAIN).unwrap();
        assert_eq!(done.body, "## Goal\nG");
        assert_eq!(done.summary, format!("{PREFIX}\n## Goal\nG"));
        // Only a reasoning block: the raw answer, stripped, is kept.
        let done = finish("  <think>x</think>  ", SOURCE, &[], &t, &PLAIN).unwrap();
        assert_eq!(done.body, "<think>x</think>");
    }

    #[test]
    fn without_a_real_user_the_body_is_the_stripped_answer_prefix_and_all() {
        let t = texts();
        let tool = [json!({"role": "tool", "content": "t"})];
        let raw = format!("\n{PREFIX}\nkeep  me\n");
        let done = finish(&raw, SOURCE, &tool, &t, &PLAIN).unwrap();
        // previousSummary keeps what the model wrote; the summary has one prefix.
        assert_eq!(done.body, format!("{PREFIX}\nkeep  me"));
        assert_eq!(done.summary, format!("{PREFIX}\nkeep  me"));
    }

    #[test]
    fn with_prefix_of_an_empty_body_is_the_prefix_alone() {
        let t = texts();
        assert_eq!(with_prefix("  ", &t), PREFIX);
        assert_eq!(with_prefix(" body \n", &t), format!("{PREFIX}\nbody"));
    }

    #[test]
    fn real_user_messages_exclude_hermes_scaffolding() {
        let t = texts();
        let cases = [
            (
                json!({"role": "user", "content": "hi", "_todo_snapshot_synthetic": 1}),
                false,
            ),
            (
                json!({"role": "user", "content": "hi", "_pre_verify_synthetic": 0}),
                true,
            ),
            (user(json!("  [System: Your previous tool call x")), false),
            (user(json!(" \n")), false),
            (user(json!(format!("{PREFIX} body"))), false),
            (user(json!("[CONTEXT SUMMARY]: x")), false),
            (
                user(json!([{"type": "text", "text": ""}, {"content": 5}, "str"])),
                true,
            ),
            (
                user(json!([{"type": "text", "text": ""}, {"type": "image_url"}])),
                false,
            ),
            (json!({"role": "assistant", "content": "x"}), false),
            (json!({"content": "x"}), false),
        ];
        for (i, (msg, real)) in cases.iter().enumerate() {
            assert_eq!(is_real_user_message(msg, &t), *real, "case {i}: {msg}");
        }
    }

    #[test]
    fn the_snapshot_is_the_newest_real_user_text_squeezed_and_quoted() {
        let t = texts();
        let turns = [
            user(json!("first")),
            user(json!("it's\t a  \n task ")),
            json!({"role": "assistant", "content": "a"}),
        ];
        assert_eq!(
            task_snapshot(&turns, &t, &PLAIN),
            Some(snapshot_of("\"it's a task\""))
        );
        // A synthetic turn is skipped; so is a real one whose text view is blank (its
        // `content` part makes it real, but the text view reads only `text`).
        let turns = [
            user(json!("real one")),
            json!({"role": "user", "content": "x", "_empty_recovery_synthetic": true}),
            user(json!([{"type": "text", "text": "  "}, {"type": "input_text", "content": "c"}])),
        ];
        assert_eq!(
            task_snapshot(&turns, &t, &PLAIN),
            Some(snapshot_of("'real one'"))
        );
        let turns = [user(
            json!([{"type": "text", "text": "a"}, "b", {"type": "x", "content": "c"}]),
        )];
        assert_eq!(
            task_snapshot(&turns, &t, &PLAIN),
            Some(snapshot_of("'a b'"))
        );
        let turns = [json!({"role": "assistant", "content": "a"})];
        assert_eq!(task_snapshot(&turns, &t, &PLAIN), None);
    }

    #[test]
    fn a_long_snapshot_is_cut_at_1385_right_stripped() {
        let long = format!("{}      {}", "x".repeat(1380), "y".repeat(100));
        let got = task_snapshot(&[user(json!(long))], &texts(), &PLAIN);
        let want = format!("'{} yyyy ...[truncated]'", "x".repeat(1380));
        assert_eq!(got, Some(snapshot_of(&want)));
    }

    #[test]
    fn grounding_replaces_the_first_snapshot_section_or_prepends_one() {
        let t = texts();
        let turns = [user(json!("do it"))];
        let g = grounded("'do it'");
        let cases = [
            (
                "## Goal\ng\n\n## Historical Task Snapshot\nold task\n\n## Next\nn",
                format!("## Goal\ng\n\n{g}## Next\nn"),
            ),
            (
                "intro\n## Historical Task Snapshot  \n \nold\nmore",
                format!("intro\n{}", g.trim_end()),
            ),
            ("## Goal\ng", format!("{g}## Goal\ng")),
            (
                "x ## Historical Task Snapshot\nold\n## B\nb",
                format!("{g}x ## Historical Task Snapshot\nold\n## B\nb"),
            ),
            (
                "## Historical Task Snapshot old\n## Historical Task Snapshot\nsecond\n## C\nc",
                format!("## Historical Task Snapshot old\n{g}## C\nc"),
            ),
            (
                "## Historical Task Snapshot\n## Goal\ng",
                format!("{g}## Goal\ng"),
            ),
        ];
        for (summary, want) in cases {
            assert_eq!(ground(summary, &turns, &t, &PLAIN), want, "{summary:?}");
        }
    }

    #[test]
    fn grounding_works_on_the_body_without_prefix_or_end_marker() {
        let t = texts();
        let summary = format!("{PREFIX}\n## Goal\ng\n{}", summaries::END_MARKER);
        let got = ground(&summary, &[user(json!("do it"))], &t, &PLAIN);
        assert_eq!(got, format!("{}## Goal\ng", grounded("'do it'")));
        let done = finish(&summary, SOURCE, &[user(json!("do it"))], &t, &PLAIN).unwrap();
        assert_eq!(done.body, got);
        assert_eq!(done.summary, format!("{PREFIX}\n{got}"));
    }

    #[test]
    fn the_answer_and_the_snapshot_are_redacted_when_redaction_is_on() {
        let secret = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789";
        let turns = [user(json!(format!("use key {secret}")))];
        let raw = format!("## Goal\nkey {secret}");
        let on = finish(&raw, SOURCE, &turns, &texts(), &Switches::default()).unwrap();
        assert!(!on.summary.contains(secret), "{}", on.summary);
        let off = finish(&raw, SOURCE, &turns, &texts(), &PLAIN).unwrap();
        assert_eq!(off.summary.matches(secret).count(), 2);
    }
}
