//! Earlier handoff summaries: recognising them, taking their body, and finding the
//! newest one before the tail (contract section 8).
//!
//! A conversation may carry summaries written by compactd (our prefix, H12, passed in as
//! `ours`) or by hermes itself under its current prefix, the legacy `[CONTEXT SUMMARY]:`
//! or one of three older prefixes, standalone or merged into a message (hermes's form
//! behind [`MERGE_DELIMITER`], or compactd's H5 form, summary first and
//! [`END_MARKER`] before the message's own text).
//!
//! Design decisions:
//! * hermes's prefixes are long prose that stays out of the repository (H12). Each is
//!   recognised by what is an interoperability fact about it: it opens with
//!   [`OPENING_MARKER`], it is so many code points long, those code points end with
//!   [`CLOSING_PHRASE`], and their MD5 is a given digest. That is exactly hermes's
//!   `startswith(prefix)`, without the text.
//! * When several prefixes match, the longest is stripped. hermes's own prefixes never
//!   nest, so this is hermes's first-match order; it matters only when our prefix is a
//!   beginning of one of hermes's (or the reverse), where stripping the shorter would
//!   leave prose in the body. An empty `ours` matches nothing.
//! * Body extraction cuts at the first end marker (H5), which also removes a trailing
//!   one as hermes does. It differs from hermes only for a summary body that quotes the
//!   end marker itself: the body then ends before the quote.

use super::message::{content, has_role, text_view};
use super::py;
use md5::{Digest, Md5};
use serde_json::Value;

/// Appended to every standalone summary (and closing hermes's merged form).
pub const END_MARKER: &str =
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---";
/// In hermes's merged form, separates the message's own text from the summary.
pub const MERGE_DELIMITER: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";
/// In hermes's merged form, heads the message's own text.
pub const PRIOR_CONTEXT_HEADER: &str = "[PRIOR CONTEXT — for reference only; not a new message]";
/// The bracketed marker that opens hermes's prefixes, current and historical, and ours.
pub(crate) const OPENING_MARKER: &str = "[CONTEXT COMPACTION — REFERENCE ONLY]";
/// The prefix of hermes's oldest summaries.
pub(crate) const LEGACY_PREFIX: &str = "[CONTEXT SUMMARY]:";
/// How hermes's current prefix and its three historical ones all end.
pub(crate) const CLOSING_PHRASE: &str = "may reflect work described here — avoid repeating it:";

/// One of hermes's long prefixes, known by its shape instead of its text.
struct HermesPrefix {
    /// Length in code points.
    chars: usize,
    /// MD5 of its UTF-8 bytes, lowercase hex.
    md5: &'static str,
}

/// hermes 0.19.0's `SUMMARY_PREFIX` and `_HISTORICAL_SUMMARY_PREFIXES`, newest first
/// (`len(p)` and `hashlib.md5(p.encode()).hexdigest()` of each).
const HERMES_PREFIXES: &[HermesPrefix] = &[
    HermesPrefix {
        chars: 1632,
        md5: "48966de12ba1314abda6929db2161114",
    },
    HermesPrefix {
        chars: 1428,
        md5: "8c72f3930702b5a3a13b765e656bdb0a",
    },
    HermesPrefix {
        chars: 1378,
        md5: "dbb46d7567a011d022d17c5757dc6eb3",
    },
    HermesPrefix {
        chars: 586,
        md5: "441f9fd157ec1579767e6836d22e7a1f",
    },
];

/// Byte length of the longest handoff prefix `text` starts with, if any.
fn prefix_len(text: &str, ours: &str) -> Option<usize> {
    prefix_len_in(text, ours, HERMES_PREFIXES)
}

fn prefix_len_in(text: &str, ours: &str, hermes: &[HermesPrefix]) -> Option<usize> {
    let mut best: Option<usize> = None;
    let mut consider = |len: usize| best = Some(best.map_or(len, |b| b.max(len)));
    if !ours.is_empty() && text.starts_with(ours) {
        consider(ours.len());
    }
    if text.starts_with(LEGACY_PREFIX) {
        consider(LEGACY_PREFIX.len());
    }
    if text.starts_with(OPENING_MARKER) {
        for p in hermes {
            let head = py::head(text, p.chars);
            if head.ends_with(CLOSING_PHRASE) && py::len(head) == p.chars && md5_hex(head) == p.md5
            {
                consider(head.len());
            }
        }
    }
    best
}

/// MD5 of `s`'s UTF-8 bytes, lowercase hex.
pub(crate) fn md5_hex(s: &str) -> String {
    Md5::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether a message content is a handoff summary (`_is_context_summary_content`): its
/// text view, left-stripped and taken after a [`MERGE_DELIMITER`] when there is one,
/// starts with a known prefix. The role is not checked.
pub(crate) fn is_handoff_summary(content: Option<&Value>, ours: &str) -> bool {
    is_summary_text(&text_view(content), ours)
}

fn is_summary_text(text: &str, ours: &str) -> bool {
    let mut text = py::lstrip(text);
    if let Some((_, after)) = text.split_once(MERGE_DELIMITER) {
        text = py::lstrip(after);
    }
    prefix_len(text, ours).is_some()
}

/// The body of a summary text (`_strip_summary_prefix`, plus H5's cut): stripped, taken
/// after a [`MERGE_DELIMITER`], without its prefix, and ending before the first
/// [`END_MARKER`].
pub(crate) fn extract_body(text: &str, ours: &str) -> String {
    extract_body_in(text, ours, HERMES_PREFIXES)
}

fn extract_body_in(text: &str, ours: &str, hermes: &[HermesPrefix]) -> String {
    let mut text = py::strip(text);
    if let Some((_, after)) = text.split_once(MERGE_DELIMITER) {
        text = py::strip(after);
    }
    if let Some(len) = prefix_len_in(text, ours, hermes) {
        text = py::lstrip(&text[len..]);
    }
    if let Some((before, _)) = text.split_once(END_MARKER) {
        text = py::rstrip(before);
    }
    text.to_string()
}

/// The body of the summary in message `i` (its text view through [`extract_body`]).
pub(crate) fn body_at(msgs: &[Value], i: usize, ours: &str) -> String {
    msgs.get(i)
        .map(|m| extract_body(&text_view(content(m)), ours))
        .unwrap_or_default()
}

/// The newest handoff summary before `end` (hermes 3425–3450): searched from index 1
/// when the first message is a system message, else from 0, newest first. The search
/// may reach into the protected head. `end` beyond the list is taken as its length
/// (hermes would index past the end there, H2).
pub(crate) fn find_latest(msgs: &[Value], end: usize, ours: &str) -> Option<usize> {
    let start = usize::from(msgs.first().is_some_and(|m| has_role(m, "system")));
    (start..end.min(msgs.len()))
        .rev()
        .find(|&i| is_handoff_summary(content(&msgs[i]), ours))
}

/// H7: whether a handoff summary is present in any message but a leading system
/// message (this makes the head decay).
pub fn present(msgs: &[Value], ours: &str) -> bool {
    find_latest(msgs, msgs.len(), ours).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A stand-in for our prefix (the real one comes from `texts`).
    const OURS: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Our handoff words.";
    /// A made-up "historical" prefix and its numbers, to exercise the shape check.
    const SYN: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Older words. State may reflect work described here — avoid repeating it:";
    /// Same marker, length and closing phrase, one letter different.
    const FAKE: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Older wordz. State may reflect work described here — avoid repeating it:";
    const SYN_TABLE: &[HermesPrefix] = &[HermesPrefix {
        chars: 110,
        md5: "fe3a503aba24ac9da939ef4f8838d1ff",
    }];

    fn is(text: &str) -> bool {
        is_summary_text(text, OURS)
    }

    fn body(text: &str) -> String {
        extract_body(text, OURS)
    }

    // Expected values below were printed by hermes 0.19.0's
    // `_is_context_summary_content` / `_strip_summary_prefix` with `SUMMARY_PREFIX`
    // set to OURS and `_HISTORICAL_SUMMARY_PREFIXES` to (SYN,), except where H5 is named.

    #[test]
    fn legacy_prefix() {
        assert!(is("[CONTEXT SUMMARY]: old body"));
        assert_eq!(body("[CONTEXT SUMMARY]: old body"), "old body");
        assert!(is("  \n[CONTEXT SUMMARY]:\n\n body  \n"));
        assert_eq!(body("  \n[CONTEXT SUMMARY]:\n\n body  \n"), "body");
        assert!(!is("[CONTEXT SUMMARY]"));
        assert_eq!(body("[CONTEXT SUMMARY]"), "[CONTEXT SUMMARY]");
    }

    #[test]
    fn our_prefix_standalone() {
        let standalone = format!("{OURS}\nthe body\n\n{END_MARKER}");
        assert!(is(&standalone));
        assert_eq!(body(&standalone), "the body");
        // Python whitespace (U+2003) is stripped before the prefix.
        assert!(is(&format!(" \u{2003}{OURS}body")));
        assert_eq!(body(&format!(" \u{2003}{OURS}body")), "body");
        assert!(!is(&OURS[..OURS.len() - 1]));
        assert!(is(OURS));
        assert_eq!(body(OURS), "");
        assert_eq!(body(&format!("{OURS}\n{END_MARKER}")), "");
        // Only our prefix counts as ours: an empty one matches nothing.
        assert!(!is_summary_text("plain text", ""));
    }

    #[test]
    fn whitespace_around_the_end_marker() {
        // Python whitespace after the marker goes with the first strip, so the marker
        // is the end and goes too (hermes), whatever the whitespace.
        for tail in ["   \n\n", "\t\r\n", "\x1c\u{85}\u{2028}", "\u{3000} \n"] {
            let text = format!(" \n{OURS}\n body \t\n\n{END_MARKER}{tail}");
            assert!(is(&text));
            assert_eq!(body(&text), "body", "tail {tail:?}");
        }
        // A zero-width space is no whitespace: hermes keeps the marker in the body, H5
        // cuts there all the same.
        assert_eq!(
            body(&format!("{OURS}\nbody\n\n{END_MARKER}\u{200b}\n")),
            "body"
        );
        // Blank own text after the marker (the H5 form) leaves the body alone.
        assert_eq!(
            body(&format!("{OURS}\nbody\n\n{END_MARKER}\n\n \u{3000}")),
            "body"
        );
    }

    #[test]
    fn hermes_merged_form() {
        let merged = format!(
            "{PRIOR_CONTEXT_HEADER}\nuser text\n\n{MERGE_DELIMITER}\n\n{OURS}\nmerged body\n\n{END_MARKER}"
        );
        assert!(is(&merged));
        assert_eq!(body(&merged), "merged body");
        let legacy = format!("no header {MERGE_DELIMITER}   [CONTEXT SUMMARY]: legacy merged");
        assert!(is(&legacy));
        assert_eq!(body(&legacy), "legacy merged");
        // The delimiter alone does not make a summary, but the body is still cut there.
        let plain = format!("text {MERGE_DELIMITER} not a summary");
        assert!(!is(&plain));
        assert_eq!(body(&plain), "not a summary");
    }

    #[test]
    fn h5_merged_form_cuts_at_the_first_end_marker() {
        // H5 (not hermes): summary first, then the message's own words.
        let merged = format!("{OURS}\nbody\n\n{END_MARKER}\n\nthe user's own words");
        assert!(is(&merged));
        assert_eq!(body(&merged), "body");
        // hermes keeps "a END b" here; the first end marker ends the body (H5).
        let twice = format!("[CONTEXT SUMMARY]: a {END_MARKER} b {END_MARKER}");
        assert_eq!(body(&twice), "a");
        // An end marker alone: empty body, and not a summary.
        assert!(!is(END_MARKER));
        assert_eq!(body(END_MARKER), "");
    }

    #[test]
    fn hermes_prefixes_by_shape() {
        let detect = |t: &str| prefix_len_in(py::lstrip(t), OURS, SYN_TABLE).is_some();
        let standalone = format!("{SYN}  older body\n{END_MARKER}");
        assert!(detect(&standalone));
        assert_eq!(extract_body_in(&standalone, OURS, SYN_TABLE), "older body");
        // Same marker, length and closing phrase, other words: not a prefix.
        let fake = format!("{FAKE}  older body");
        assert!(!detect(&fake));
        assert_eq!(extract_body_in(&fake, OURS, SYN_TABLE), fake);
        assert!(!detect(&format!("x{SYN}")));
        // Too short to hold the prefix.
        assert!(!detect(&SYN[..SYN.len() - 1]));
        // The real table does not know the made-up prefix.
        assert!(!is(&standalone));
    }

    #[test]
    fn the_longest_matching_prefix_is_stripped() {
        // Our prefix is the opening marker alone: hermes's (here SYN) must still go whole.
        let text = format!("{SYN} body");
        assert_eq!(extract_body_in(&text, OPENING_MARKER, SYN_TABLE), "body");
        assert_eq!(
            extract_body_in(&text, OPENING_MARKER, &[]),
            "Older words. State may reflect work described here — avoid repeating it: body"
        );
    }

    #[test]
    fn content_shapes() {
        let list = json!([{"type": "text", "text": "  [CONTEXT SUMMARY]: x"}, "y"]);
        assert!(is_handoff_summary(Some(&list), OURS));
        let after_image = json!(["", {"type": "image_url", "image_url": {"url": "u"}},
            {"type": "text", "text": OURS}]);
        assert!(is_handoff_summary(Some(&after_image), OURS));
        let second_part = json!([{"type": "text", "text": "lead"},
            {"type": "text", "text": "[CONTEXT SUMMARY]: x"}]);
        assert!(!is_handoff_summary(Some(&second_part), OURS));
        assert!(!is_handoff_summary(None, OURS));
        assert!(!is_handoff_summary(Some(&json!(null)), OURS));
        assert!(!is_handoff_summary(Some(&json!(42)), OURS));
        // An object is its repr: "{'text': ...}" does not start with a prefix.
        let object = json!({"text": "[CONTEXT SUMMARY]: x"});
        assert!(!is_handoff_summary(Some(&object), OURS));
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    #[test]
    fn find_latest_searches_newest_first_and_skips_a_leading_system_message() {
        let s = "[CONTEXT SUMMARY]: s";
        let msgs = vec![
            json!({"role": "system", "content": s}),
            user(s),
            user("a"),
            json!({"role": "assistant", "content": s}),
            user("b"),
            user(s),
        ];
        assert_eq!(find_latest(&msgs, 6, OURS), Some(5));
        assert_eq!(find_latest(&msgs, 5, OURS), Some(3));
        assert_eq!(find_latest(&msgs, 3, OURS), Some(1));
        // The leading system message is never searched.
        assert_eq!(find_latest(&msgs, 1, OURS), None);
        // Past the end (H2) is the end.
        assert_eq!(find_latest(&msgs, 9, OURS), Some(5));
        // Without a system message, index 0 is searched.
        assert_eq!(find_latest(&msgs[1..], 1, OURS), Some(0));
        assert_eq!(body_at(&msgs, 3, OURS), "s");
        assert_eq!(body_at(&msgs, 9, OURS), "");
    }

    #[test]
    fn present_ignores_only_a_leading_system_message() {
        let s = "[CONTEXT SUMMARY]: s";
        let sys = json!({"role": "system", "content": s});
        assert!(!present(&[sys.clone(), user("a")], OURS));
        assert!(present(&[sys.clone(), user("a"), user(s)], OURS));
        assert!(present(&[user(s), sys], OURS));
        assert!(!present(&[], OURS));
    }
}
