//! The pinned ledger ("checked compaction"): what a continuing agent must not
//! lose, extracted deterministically from what is being summarized, carried from round
//! to round in the compaction entry's `details.pinned`, checked against every summary
//! and restored verbatim where a summary dropped it.
//!
//! Pure: no I/O, no clocks, no randomness; the same input gives the same ledger, the
//! same ids and the same checked summary in every process.
//!
//! The flow, per compaction:
//!
//! 1. [`Ledger::from_details`] reads the previous compaction's ledger (lenient: unknown
//!    fields ignored, unreadable items skipped).
//! 2. [`update`] carries it through this round's [`Source`]s (conversation order) and the
//!    modified files: new items are appended, later statements supersede earlier ones on
//!    the same subject, "never mind" withdraws the last statement, a later success closes
//!    an error. ([`extract`] is the same from an empty ledger; [`Ledger::merge`] merges
//!    two ledgers item by item.)
//! 3. [`check_summary`] verifies the summary (every value exact; wording free) and appends
//!    the missing items under [`PINNED_HEADING`] within a token budget, returning the
//!    [`Retention`] report for the answer.
//! 4. [`Ledger::to_value`] is what goes into the new entry's `details.pinned`.
//!
//! Files, one idea each, dependencies pointing down this list: `words` (sentences,
//! words, stems) · `secrets` (redaction) · `values` (the exact strings to keep) · `kind`
//! · `subject` (what a statement is about) · `model` (items, ledger, JSON) · `classify`
//! (sentence kinds, chit-chat, cancellations) · `supersede` (push, cancel, resolve,
//! merge) · `statements` (a user message as statements) · `errors` (open
//! errors) · `extract` · `verify` · `restore` (re-insertion and retention) ·
//! `standing` (the numbered statements a model sees, and its `Replaced:` trailer).
//!
//! Design decisions shared by all of them:
//! * Heuristics are hand-written phrase lists and token shapes, not regular expressions.
//!   A trigger is a run of whole words in folded text (`words::has_phrase`), and what
//!   decides is often where it stands (imperative position, after a label) and which kind
//!   wins over another; plain lists and a few position rules say that more plainly than
//!   patterns would. The lists read as the specification and are tested one rule per
//!   test. (`regex` and `fancy-regex` are dependencies for the hermes core, which must
//!   reproduce Python's `re`; the ledger does not use them.) Each file's docs say what
//!   its heuristic catches and misses.
//! * Pinned text is verbatim (the sentence as the user wrote it, secrets redacted); only
//!   error items are composed (`` `tool` `command` failed: <line> ``).
//! * When in doubt about a user's sentence with a rule trigger, pin it: a false item
//!   costs a line in the summary, a missed rule costs a broken rule. Pasted machine
//!   output (logs, stack traces, JSON, line-numbered listings) is never read as prose.
//! * The ledger is bounded: at most `MAX_SUPERSEDED` superseded items are kept.

mod classify;
mod draft;
mod errors;
mod extract;
mod kind;
mod labels;
mod model;
mod priority;
mod reach;
mod resolution;
mod restore;
mod secrets;
mod slots;
mod standing;
mod statements;
mod subject;
mod supersede;
mod updates;
mod values;
mod verify;
mod words;

#[cfg(test)]
mod resolution_tests;
#[cfg(test)]
mod tests;

pub use classify::is_real_request;
pub use extract::{
    extract, update, update_with_head, Source, SourceRole, MAX_SUPERSEDED, OBJECTIVE_CHARS,
};
pub use kind::{Kind, Speaker};
pub use labels::{group_label, is_labelled, split_label};
pub use model::{Ledger, PinnedItem, Status, SupersededBy, LEDGER_VERSION};
pub use priority::budget_order;
pub use resolution::{InForce, REMAINDER_WORDS};
pub use restore::{
    check_summary, check_summary_within, estimate_tokens, render_section, strip_section, Checked,
    Retention, PINNED_HEADING, STANDING_TOKENS,
};
pub use secrets::{looks_like_secret, redact, REDACTED};
pub use standing::{split_trailer, Answered, Standing, NAMED_BY_SUMMARIZER, TRAILER_KEYWORD};
pub use verify::{is_present, SummaryText, WORD_OVERLAP};
