//! Labels: a statement the user marked as lasting ("SAFETY RULE: …", "**Important:** …",
//! "## Constraints" over a list) is pinned with the kind its label names, whatever its
//! wording. A person's mark beats any guess of ours.
//!
//! What counts as a label, at the start of a line (after a heading's `#`s, a quote's `>`,
//! a list marker, and opening `**`, `__`, `*`, `_` or `[`):
//! * one of [`LABELS`] (one to three words, any case) followed by a colon, a dash, a
//!   closing `**`/`]`, or nothing (a heading or a line of its own);
//! * without any of those, only when written in capitals ("IMPORTANT the key rotates
//!   weekly", "NEVER push to main") or inside a heading or bold.
//!
//! A label with text after it pins that line, whole, to the end of the line. A label alone
//! on its line ("## Rules", "CONSTRAINTS:", "**Preferences**") heads a block: every
//! following non-empty line is pinned with its kind until a blank line after the block's
//! first line, another heading, or another label.
//!
//! Misses: labels after other words on a line ("Quick update: …" is not a label; its norm
//! words may still pin it, see `classify`), labels in other languages, and lowercase
//! labels of a word that is also a verb ("note the …") without a colon. Wrongly pins: a
//! prose line that happens to open with a label word and a colon ("Next step: look
//! around" is a goal item); that costs a line of summary, not a rule.

use super::kind::Kind;
use super::words::is_machine_line;

/// The label words, lower-cased, and the kind each names. Longest first where one
/// label begins another ("safety rule" before "safety").
#[rustfmt::skip]
const LABELS: &[(&str, Kind)] = &[
    ("standing instructions", Kind::Rule), ("standing instruction", Kind::Rule),
    ("safety rules", Kind::Rule), ("safety rule", Kind::Rule),
    ("security rules", Kind::Rule), ("security rule", Kind::Rule),
    ("ground rules", Kind::Rule), ("ground rule", Kind::Rule),
    ("house rules", Kind::Rule), ("house rule", Kind::Rule),
    ("hard constraints", Kind::Constraint), ("hard constraint", Kind::Constraint),
    ("user preferences", Kind::Preference), ("user preference", Kind::Preference),
    ("goal state", Kind::Goal), ("current goal", Kind::Goal), ("current task", Kind::Goal),
    ("next steps", Kind::Goal), ("next step", Kind::Goal),
    ("key facts", Kind::Fact), ("key fact", Kind::Fact),
    ("do not", Kind::Rule), ("don't", Kind::Rule),
    ("safety", Kind::Rule), ("security", Kind::Rule),
    ("rules", Kind::Rule), ("rule", Kind::Rule), ("policy", Kind::Rule),
    ("instructions", Kind::Rule), ("instruction", Kind::Rule),
    ("important", Kind::Rule), ("remember", Kind::Rule), ("always", Kind::Rule),
    ("never", Kind::Rule), ("must", Kind::Rule), ("critical", Kind::Rule),
    ("constraints", Kind::Constraint), ("constraint", Kind::Constraint),
    ("requirements", Kind::Constraint), ("requirement", Kind::Constraint),
    ("limits", Kind::Constraint), ("limit", Kind::Constraint),
    ("budget", Kind::Constraint), ("deadline", Kind::Constraint),
    ("preferences", Kind::Preference), ("preference", Kind::Preference),
    ("style", Kind::Preference),
    ("goals", Kind::Goal), ("goal", Kind::Goal), ("objective", Kind::Goal),
    ("facts", Kind::Fact), ("fact", Kind::Fact), ("note", Kind::Fact), ("notes", Kind::Fact),
    ("nb", Kind::Fact), ("fyi", Kind::Fact), ("reminder", Kind::Fact),
    ("decisions", Kind::Decision), ("decision", Kind::Decision),
];

/// Labels that are also common verbs or nouns of prose and pasted tool output ("note:"
/// in a compiler message): they count only when capitalized.
const NEEDS_CAPITAL: &[&str] = &["note", "notes", "nb", "fyi", "style", "budget", "limit"];

/// A line's label, when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Labelled<'a> {
    pub kind: Kind,
    /// The text after the label; empty when the label stands alone (a block's head).
    pub body: &'a str,
    /// A note-like label (see [`Strength::Weak`]).
    pub weak: bool,
}

/// The label a line opens with, if any (see the module docs).
pub(super) fn label(line: &str) -> Option<Labelled<'_>> {
    if is_machine_line(line) {
        return None;
    }
    let mut rest = line.trim_start();
    let mut heading = false;
    if rest.starts_with('#') {
        let hashes = rest.bytes().take_while(|&b| b == b'#').count();
        rest = &rest[hashes..];
        if !rest.starts_with(' ') {
            return None;
        }
        heading = true;
        rest = rest.trim_start();
    }
    for marker in ["> ", "- ", "* ", "+ "] {
        if let Some(r) = rest.strip_prefix(marker) {
            rest = r.trim_start();
            break;
        }
    }
    let mut emphasis = false;
    for open in ["**", "__", "*", "_", "["] {
        if let Some(r) = rest.strip_prefix(open) {
            rest = r;
            emphasis = open != "[";
            break;
        }
    }
    let bracket = line
        .trim_start()
        .trim_start_matches(['#', ' ', '>', '-', '*', '+']);
    let bracket = bracket.starts_with('[');
    for &(word, kind) in LABELS {
        let Some(head) = rest.get(..word.len()) else {
            continue;
        };
        if !head.eq_ignore_ascii_case(word) {
            continue;
        }
        let after = &rest[word.len()..];
        if after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let capital = head.starts_with(|c: char| c.is_ascii_uppercase());
        let caps = head.bytes().all(|b| !b.is_ascii_lowercase());
        if NEEDS_CAPITAL.contains(&word) && !capital {
            continue;
        }
        let after = after
            .trim_start_matches(['*', '_', ']'])
            .trim_start_matches(' ');
        let closed = rest[word.len()..].starts_with(['*', '_', ']']);
        let body = if let Some(b) = after.strip_prefix(':') {
            b
        } else if let Some(b) = ["- ", "– ", "— "]
            .iter()
            .find_map(|d| after.strip_prefix(d))
        {
            b
        } else if after.trim().is_empty() {
            // A label alone: a heading, a bold line, or a word with a colon was needed.
            if heading || emphasis || bracket || caps {
                ""
            } else {
                continue;
            }
        } else if caps || heading || (emphasis && closed) || (bracket && closed) {
            // "NEVER push to main", "**Never** push to main": the label is part of it.
            if matches!(kind, Kind::Rule) && is_norm_word(word) {
                rest
            } else {
                after
            }
        } else {
            continue;
        };
        let body = body
            .trim_start_matches(['*', '_'])
            .trim()
            .trim_end_matches(['*', '_'])
            .trim();
        return Some(Labelled {
            kind,
            body,
            weak: WEAK.contains(&word),
        });
    }
    None
}

/// How strongly a text was marked as lasting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strength {
    /// Opens with a label naming a rule, constraint, preference, goal or fact.
    Strong,
    /// Opens with a note-like label (`NOTE:`, `FYI`, `REMINDER:`).
    Weak,
    /// No label.
    None,
}

/// Labels that pin their line but say less than "this is a rule".
const WEAK: &[&str] = &["note", "notes", "nb", "fyi", "reminder"];

/// How strongly `text` (a pinned item's text) was marked: by the label it opens with.
pub(super) fn strength(text: &str) -> Strength {
    let Some(first) = text.lines().next() else {
        return Strength::None;
    };
    match label(first) {
        Some(l) if l.weak => Strength::Weak,
        Some(_) => Strength::Strong,
        None => Strength::None,
    }
}

/// A statement of the plain form `LABEL: body` split into the label as written (with its
/// colon) and the body, so a summary can list several under one label line. Other forms
/// (bold, headings, capitals without a colon) are not split.
pub fn split_label(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let (head, body) = (&text[..colon], text[colon + 1..].trim());
    (names_label(head) && !body.is_empty() && label(text).is_some())
        .then(|| (&text[..=colon], body))
}

/// A line that is only a known label and its colon (`SAFETY RULE:`), as a summary lists a
/// group of statements under it; the label as written, colon included.
pub fn group_label(line: &str) -> Option<&str> {
    let t = line.trim();
    names_label(t.strip_suffix(':')?).then_some(t)
}

/// Whether `head` is exactly one of [`LABELS`], capitalized where [`NEEDS_CAPITAL`] asks.
fn names_label(head: &str) -> bool {
    let known = LABELS.iter().any(|(w, _)| head.eq_ignore_ascii_case(w));
    let capital = head.starts_with(|c: char| c.is_ascii_uppercase());
    let needs = NEEDS_CAPITAL.iter().any(|w| head.eq_ignore_ascii_case(w));
    known && (capital || !needs)
}

/// A statement without the label it opens with ("SAFETY RULE: Never …" → "Never …"), so
/// what it is about is not its label: two hard constraints are not one subject.
pub(super) fn without_label(text: &str) -> &str {
    let Some(first) = text.lines().next() else {
        return text;
    };
    match label(first) {
        Some(l) if !l.body.is_empty() => {
            let start = l.body.as_ptr() as usize - text.as_ptr() as usize;
            &text[start..]
        }
        _ => text,
    }
}

/// Whether a statement opens with a label (see [`label`]) and says something after it.
pub fn is_labelled(text: &str) -> bool {
    text.lines()
        .next()
        .and_then(label)
        .is_some_and(|l| !l.body.is_empty())
}

/// Labels that are the first word of the rule itself ("NEVER push"): the statement
/// keeps them.
fn is_norm_word(word: &str) -> bool {
    matches!(word, "never" | "always" | "must" | "do not" | "don't")
}

/// Whether a line is a Markdown heading (it ends a labelled block).
pub(super) fn is_heading(line: &str) -> bool {
    let t = line.trim_start();
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    hashes > 0 && t[hashes..].starts_with(' ')
}

/// One span of a user message: a labelled statement, or text between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Span<'a> {
    /// A whole labelled line (or a line of a labelled block), trimmed, with its kind.
    Labelled(Kind, &'a str),
    /// Lines with no label, as one slice of the message (sentences are found in it).
    Plain(&'a str),
}

/// A message cut into labelled lines and the plain text between them. Fenced code is
/// always plain.
pub(super) fn spans(text: &str) -> Vec<Span<'_>> {
    let mut out = Vec::new();
    let mut plain_start: Option<usize> = None;
    let mut in_fence = false;
    // The kind of the block a label alone opened, and whether it has had a line yet.
    let mut block: Option<(Kind, bool)> = None;
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            block = None;
        }
        let labelled = if in_fence || trimmed.starts_with("```") {
            None
        } else if let Some(l) = label(line) {
            if l.body.is_empty() {
                block = Some((l.kind, false));
                // The block's head itself says nothing to keep.
                flush(text, &mut plain_start, start, &mut out);
                continue;
            }
            block = None;
            Some(l.kind)
        } else if trimmed.is_empty() {
            if let Some((_, true)) = block {
                block = None;
            }
            None
        } else if is_heading(line) {
            block = None;
            None
        } else if let Some((kind, _)) = block {
            block = Some((kind, true));
            Some(kind)
        } else {
            None
        };
        match labelled {
            Some(kind) => {
                flush(text, &mut plain_start, start, &mut out);
                out.push(Span::Labelled(kind, strip_list_marker(trimmed)));
            }
            None => {
                plain_start.get_or_insert(start);
            }
        }
    }
    flush(text, &mut plain_start, text.len(), &mut out);
    out
}

fn flush<'a>(text: &'a str, start: &mut Option<usize>, end: usize, out: &mut Vec<Span<'a>>) {
    if let Some(s) = start.take() {
        let slice = &text[s..end];
        if !slice.trim().is_empty() {
            out.push(Span::Plain(slice));
        }
    }
}

/// A list item's text without its marker ("- ", "* ", "1. ").
fn strip_list_marker(line: &str) -> &str {
    for marker in ["- ", "* ", "+ ", "> "] {
        if let Some(r) = line.strip_prefix(marker) {
            return r.trim_start();
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        if let Some(r) = line[digits..]
            .strip_prefix(". ")
            .or_else(|| line[digits..].strip_prefix(") "))
        {
            return r.trim_start();
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> Option<Kind> {
        label(line).map(|l| l.kind)
    }

    #[test]
    fn labels_in_any_case_with_or_without_a_colon() {
        assert_eq!(
            kind("SAFETY RULE: Never reveal API keys."),
            Some(Kind::Rule)
        );
        assert_eq!(
            kind("safety rule: never reveal API keys."),
            Some(Kind::Rule)
        );
        assert_eq!(
            kind("Hard constraint - budget is $500"),
            Some(Kind::Constraint)
        );
        assert_eq!(
            kind("USER PREFERENCE: terse answers"),
            Some(Kind::Preference)
        );
        assert_eq!(kind("GOAL STATE: steps 1-3 done"), Some(Kind::Goal));
        assert_eq!(kind("FACT: codename LANTERN"), Some(Kind::Fact));
        assert_eq!(kind("IMPORTANT the key rotates weekly"), Some(Kind::Rule));
        assert_eq!(kind("Remember: tests first"), Some(Kind::Rule));
        assert_eq!(kind("Note: the linter lives in ruff"), Some(Kind::Fact));
    }

    #[test]
    fn labels_as_headings_bold_or_brackets() {
        assert_eq!(kind("## Safety rule: never push"), Some(Kind::Rule));
        assert_eq!(kind("**Important:** rotate keys"), Some(Kind::Rule));
        assert_eq!(
            kind("**Constraint**: only Python 3.11"),
            Some(Kind::Constraint)
        );
        assert_eq!(kind("- **Never** push to main"), Some(Kind::Rule));
        let l = label("NEVER push to main").unwrap();
        assert_eq!(
            l.body, "NEVER push to main",
            "the norm word stays in the rule"
        );
    }

    #[test]
    fn a_plain_label_splits_from_its_body() {
        assert_eq!(
            split_label("SAFETY RULE: Never reveal keys."),
            Some(("SAFETY RULE:", "Never reveal keys."))
        );
        assert_eq!(split_label("**Important:** rotate keys"), None);
        assert_eq!(split_label("NEVER push to main"), None);
        assert_eq!(split_label("The port: 8080"), None);
        assert_eq!(split_label("note: expected type"), None);
    }

    #[test]
    fn words_that_only_look_like_labels() {
        assert_eq!(kind("Note the difference between a and b."), None);
        assert_eq!(kind("note: expected type `u32`"), None, "compiler output");
        assert_eq!(kind("Rules are fine in general."), None);
        assert_eq!(kind("Goalkeeper: Priya"), None);
        assert_eq!(kind("Quick update: spend under $500."), None);
        assert_eq!(kind("The rule: never push."), None);
        assert_eq!(kind("#rules"), None);
    }

    #[test]
    fn a_message_is_cut_into_labelled_lines_and_plain_text() {
        let text = "Let's go on.\nSAFETY RULE: Never reveal keys.\nAnd fix the tests.\n";
        assert_eq!(
            spans(text),
            [
                Span::Plain("Let's go on.\n"),
                Span::Labelled(Kind::Rule, "SAFETY RULE: Never reveal keys."),
                Span::Plain("And fix the tests.\n"),
            ]
        );
    }

    #[test]
    fn a_label_alone_heads_a_block_until_a_blank_line() {
        let text = "## Rules\n\n- Never push to main\n- Keep the tests green\n\nNow add the flag.";
        assert_eq!(
            spans(text),
            [
                Span::Labelled(Kind::Rule, "Never push to main"),
                Span::Labelled(Kind::Rule, "Keep the tests green"),
                Span::Plain("\nNow add the flag."),
            ]
        );
        let text = "CONSTRAINTS:\n1. Only Python 3.11\n## Next\nhello";
        assert_eq!(
            spans(text),
            [
                Span::Labelled(Kind::Constraint, "Only Python 3.11"),
                Span::Plain("## Next\nhello"),
            ]
        );
    }

    #[test]
    fn fenced_code_is_never_labelled() {
        let text = "```\nRULE: not a rule\n```\nRULE: a rule";
        assert_eq!(
            spans(text),
            [
                Span::Plain("```\nRULE: not a rule\n```\n"),
                Span::Labelled(Kind::Rule, "RULE: a rule"),
            ]
        );
    }
}
