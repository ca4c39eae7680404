//! Updates: a statement that says it changes something ("Quick update: keep spend under
//! five hundred dollars from now on", "the launch date moved to 08-21", "we are calling the
//! project X now", "the vault code rotated") replaces the earlier pinned statement it is
//! about, even when the two are worded too differently for one subject (see `subject`).
//!
//! Decisions:
//! * A statement with an update cue ([`CUES`], or "New …:" opening it) looks for what it
//!   replaces among the older active user statements (decisions included: a new plan
//!   replaces the old one). A candidate qualifies by what the two share: two content
//!   words; or one and a slot (`slots`: both set an amount, a date, a person, a time zone,
//!   a code, a branch under one folder …); or, with no word in common at all, a narrow
//!   slot that no other candidate sets (the only branch under `spike/`, the only time
//!   zone, the only request rate, the only port), never a broad one (an amount, a code: "the code rotated" must not take the
//!   project's codename for the access code).
//! * Among the qualified the one sharing the rarest words wins: each shared word counts
//!   the inverse of the number of candidates holding it, and a shared slot one more, so
//!   "new ceiling for trip costs" replaces the trip's ceiling, not another ceiling. Ties
//!   go to the newest.
//! * Without a cue only an exclusive slot set to another value replaces ("show clocks in
//!   Pacific Time" after "put every timestamp in UTC", `slots::EXCLUSIVE`), and only a
//!   standing statement (rule, constraint, preference).
//! * A sentence the ledger did not pin by itself is then pinned with the kind of what it
//!   replaces. ("For now" is no cue: it announces a change to come.)
//! * Recall first: a missed update leaves both statements (the old one shown as current
//!   beside the new); a wrong one would hide a statement, so look-alikes stay apart: two
//!   candidates that only a common word ties ("ceiling") leave the update to the newest
//!   only when it shares more.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use super::draft::Draft;
use super::kind::Kind;
use super::labels::without_label;
use super::slots::{conflict, exclusive, share, slots};
use super::words::{content_words, fold, has_phrase, stem, words};

/// Words and phrases by which a statement says it changes an earlier one.
#[rustfmt::skip]
const CUES: &[&str] = &[
    "update", "updated", "now", "from now on", "moved to", "changed to", "changed", "rotated",
    "no longer", "instead", "rather", "anymore", "any more", "going forward", "renamed",
    "retired", "rebased", "switched", "switch to", "calling", "replaced", "replaces",
    "change of plan", "scratch that", "raise", "raised", "lower", "lowered", "bump", "bumped",
    "increase", "increased", "reduce", "reduced", "moved", "reassigned", "handed over",
    "takes over", "took over", "taking over", "belongs to", "postponed", "pushed back",
    "rescheduled", "correction", "actually", "make that", "on second thought",
    "from here on", "from here", "these days",
];

/// The cue words as written: "calling" is a cue, "call" (on-call) is a subject.
static CUE_WORDS: LazyLock<BTreeSet<String>> =
    LazyLock::new(|| words(&CUES.join(" ")).into_iter().collect());

/// Words too common to say what two statements share: time words ("this week"), the
/// verbs of any norm ("keep it under …", "stay below …"), and the words of amounts, which
/// the slot stands for ("five hundred dollars").
#[rustfmt::skip]
const WEAK: &[&str] = &[
    "week", "today", "tomorrow", "currently", "time", "new", "thing", "keep", "stay", "stick",
    "put", "show", "set", "get", "total", "dollar", "euro", "pound", "buck", "cent", "one",
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twenty", "thirty",
    "forty", "fifty", "hundred", "thousand", "million",
];

/// Whether a statement says it changes an earlier one.
pub(super) fn is_update(text: &str) -> bool {
    // "For now" says the opposite: a value that will change, not one that did.
    let f = fold(text).replace("for now", "");
    CUES.iter().any(|c| has_phrase(&f, c)) || opens_with_new(&f)
}

/// "New ceiling for trip costs: …", "New plan — …": a heading that announces a change.
fn opens_with_new(folded: &str) -> bool {
    let t = without_label(folded).trim_start();
    t.strip_prefix("new ").is_some_and(|rest| {
        rest.split_whitespace()
            .take(5)
            .any(|w| w.ends_with([':', '-', '\u{2014}']))
            || rest.contains(" is ")
    })
}

/// What an update compares: content words without the label, the cue words and the
/// values (a path's pieces, a file's extension are not what a statement is about), by
/// parts of hyphenated words, a role word by its stem ("owner" and "owns" compare
/// equal); then the statement's slots, marked with `§`.
fn words_of(text: &str, values: &[String], cues: &BTreeSet<String>) -> BTreeSet<String> {
    let mut t = without_label(text).to_string();
    // Values made of words ("Field-trip", a name) still say what the statement is about.
    for v in values
        .iter()
        .filter(|v| !v.chars().all(|c| c.is_alphabetic() || c == '-' || c == ' '))
    {
        t = t.replace(v.as_str(), " ");
    }
    // Weak words go before stemming ("hundred" stems to "hundr").
    let kept: Vec<String> = words(&t.replace('-', " "))
        .into_iter()
        .filter(|w| {
            !WEAK.contains(&stem(w).as_str()) && !WEAK.contains(&w.as_str()) && !cues.contains(w)
        })
        .collect();
    let mut out: BTreeSet<String> = content_words(&kept.join(" "))
        .into_iter()
        .map(|w| match w.strip_suffix("er") {
            Some(root) if root.chars().count() >= 3 => root.to_string(),
            _ => w,
        })
        .collect();
    out.extend(slots(text, values).into_iter().map(|s| format!("§{s}")));
    out
}

/// The statement's words and its slots, apart.
fn split(words: &BTreeSet<String>) -> (Vec<&String>, Vec<String>) {
    let (marked, plain): (Vec<&String>, Vec<&String>) =
        words.iter().partition(|w| w.starts_with('§'));
    (
        plain,
        marked.into_iter().map(|w| w[2..].to_string()).collect(),
    )
}

/// The slot in `ledger` of the statement `text` updates, if any (pinned by itself or
/// not, it must share as much).
pub(super) fn updated(ledger: &mut Draft, text: &str, values: &[String]) -> Option<usize> {
    let cue = is_update(text);
    // Most sentences have no cue: only an exclusive setting makes them look further.
    if !cue && exclusive(text).is_empty() {
        return None;
    }
    let mine = words_of(text, values, &CUE_WORDS);
    let (mine_words, mine_slots) = split(&mine);
    let candidates: Vec<(usize, Kind, Vec<&String>, Vec<String>)> = ledger
        .user_statements_newest_first(|old| words_of(&old.text, &old.values, &CUE_WORDS))
        .into_iter()
        .map(|(at, old, words)| {
            let (plain, marked) = split(words);
            (at, old.kind, plain, marked)
        })
        .collect();
    if !cue {
        // An exclusive slot set anew: the newest standing statement holding another value.
        return candidates
            .iter()
            .find(|(_, kind, _, old_slots)| {
                matches!(kind, Kind::Rule | Kind::Constraint | Kind::Preference)
                    && conflict(&mine_slots, old_slots).is_some()
            })
            .map(|(at, ..)| *at);
    }
    // How many candidates hold each word and each slot: rare ones say more.
    let mut df: HashMap<&str, usize> = HashMap::new();
    let mut slot_holders: HashMap<String, usize> = HashMap::new();
    for (_, _, words, old_slots) in &candidates {
        for w in words {
            *df.entry(w.as_str()).or_default() += 1;
        }
        for s in &mine_slots {
            if share(std::slice::from_ref(s), old_slots).is_some() {
                *slot_holders.entry(s.clone()).or_default() += 1;
            }
        }
    }
    let mut best: Option<(usize, f64)> = None;
    // Newest first: ties go to the newest.
    for (at, kind, words, old_slots) in &candidates {
        let shared: Vec<&String> = words
            .iter()
            .copied()
            .filter(|w| mine_words.contains(w))
            .collect();
        let common = mine_slots
            .iter()
            .find(|s| share(std::slice::from_ref(*s), old_slots).is_some());
        // With no word in common only a narrow slot names the referent: a branch under
        // the same folder, a time zone; not any amount or any code.
        let only_holder = common.is_some_and(|s| {
            slot_holders.get(s) == Some(&1)
                && (s.starts_with("path:") || s.contains('=') || s == "rate" || s == "port")
        });
        let enough = if *kind == Kind::Objective {
            // A request is replaced only by a new value for a word it names.
            !shared.is_empty() && common.is_some()
        } else {
            shared.len() >= 2 || (!shared.is_empty() && common.is_some()) || only_holder
        };
        let score: f64 = shared
            .iter()
            .map(|w| 1.0 / df[w.as_str()] as f64)
            .sum::<f64>()
            + if common.is_some() { 1.0 } else { 0.0 };
        if enough && best.is_none_or(|(_, s)| score > s) {
            best = Some((*at, score));
        }
    }
    best.map(|(at, _)| at)
}
