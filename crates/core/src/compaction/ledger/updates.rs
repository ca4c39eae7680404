//! Updates: a statement that says it changes something ("Quick update: keep spend under
//! $300 from now on", "the launch date moved to 08-21", "we are calling the project X
//! now", "the vault code rotated") replaces the earlier pinned statement it is about, even
//! when the two are worded too differently for one subject (see `subject`).
//!
//! Decisions:
//! * Only a statement with an update cue ([`CUES`]) looks for what it replaces; without
//!   one, two statements on different subjects both stay ("the staging database is MySQL
//!   8" does not replace "the production database is Postgres 16").
//! * What it replaces is the older active user statement (decisions included: a new plan
//!   replaces the old one) it shares the most with: content
//!   words (labels, cue words and stop words aside), plus a value of the same shape (two
//!   dates, two amounts, two ids, two paths under the same folder). It needs two shared
//!   words, or one and a value of the same shape; a sentence the ledger did not pin by
//!   itself is then pinned with the kind of what it replaces. Ties go to the newest.
//!   ("For now" is no cue: it announces a change to come.)
//! * Recall first: a missed update leaves both statements (the old one shown as current
//!   beside the new); a wrong one would hide a statement, so the thresholds are strict.
//!
//! Misses: updates that share one word and no value shape with what they replace ("keep
//! project spend under three hundred dollars from now on" after "project budget cap is
//! $800"; "I'd rather get playful answers" after "terse answers"), or none ("Ozyu now
//! owns the pager" after "the on-call owner is Pjfh": owner and owns are different words).

use std::collections::BTreeSet;

use super::draft::Draft;
use super::labels::without_label;
use super::words::{content_words, fold, has_phrase};

/// Words and phrases by which a statement says it changes an earlier one.
#[rustfmt::skip]
const CUES: &[&str] = &[
    "update", "updated", "now", "from now on", "moved to", "changed to", "rotated",
    "no longer", "instead", "rather", "anymore", "any more", "going forward", "renamed",
    "retired", "rebased", "switched", "switch to", "calling", "replaced", "replaces",
    "change of plan", "scratch that",
];

/// Whether a statement says it changes an earlier one.
pub(super) fn is_update(text: &str) -> bool {
    // "For now" says the opposite: a value that will change, not one that did.
    let f = fold(text).replace("for now", "");
    CUES.iter().any(|c| has_phrase(&f, c))
}

/// The shape of a value, for "a new value of the same kind".
fn shape(v: &str) -> Option<String> {
    let first = v.chars().next()?;
    if "$€£¥".contains(first) {
        return Some("money".into());
    }
    if let Some((dir, _)) = v.split_once('/') {
        if !dir.is_empty() && !v.contains("://") {
            return Some(format!("path:{}", dir.to_lowercase()));
        }
    }
    let digits = v.chars().filter(char::is_ascii_digit).count();
    let dashes = v.chars().filter(|&c| c == '-' || c == '/').count();
    if digits >= 3 && dashes >= 1 && v.chars().all(|c| c.is_ascii_digit() || c == '-') {
        return Some("date".into());
    }
    if digits > 0 && v.chars().any(|c| c.is_ascii_uppercase()) && v.contains('-') {
        return Some("id".into());
    }
    None
}

/// Content words without the label, the cue words and the values (a path's pieces, a
/// file's extension are not what a statement is about).
fn words_of(text: &str, values: &[String], cues: &BTreeSet<String>) -> BTreeSet<String> {
    let mut t = without_label(text).to_string();
    for v in values {
        t = t.replace(v.as_str(), " ");
    }
    content_words(&t)
        .into_iter()
        .filter(|w| !cues.contains(w))
        .collect()
}

/// The slot in `ledger` of the statement `text` updates, if any (pinned by itself or
/// not, it must share as much).
pub(super) fn updated(ledger: &mut Draft, text: &str, values: &[String]) -> Option<usize> {
    if !is_update(text) {
        return None;
    }
    let cues = content_words(&CUES.join(" "));
    let mine = words_of(text, values, &cues);
    let shapes: Vec<String> = values.iter().filter_map(|v| shape(v)).collect();
    let mut best: Option<(usize, usize)> = None;
    // Newest first: ties go to the newest.
    for (at, old, words) in
        ledger.user_statements_newest_first(|old| words_of(&old.text, &old.values, &cues))
    {
        let shared = words.intersection(&mine).count();
        let same_shape = old
            .values
            .iter()
            .filter_map(|v| shape(v))
            .any(|s| shapes.contains(&s));
        let enough = shared >= 2 || (shared >= 1 && same_shape);
        let score = shared + usize::from(same_shape);
        if enough && best.is_none_or(|(_, s)| score > s) {
            best = Some((at, score));
        }
    }
    best.map(|(at, _)| at)
}
