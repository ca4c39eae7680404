//! Extraction: the ledger of what is being summarized, deterministically.
//!
//! The input is a small type of our own ([`Source`]: entry id, role, text, in
//! conversation order) plus the modified file paths, so this module does not depend on
//! the session types; the pipeline maps its messages onto it.
//!
//! Decisions:
//! * Only user text yields rules, constraints, preferences and facts; an assistant's
//!   text yields decisions only, and only firm ones (see `classify`); tool results yield
//!   errors; summaries yield nothing (what an earlier summary had to keep travels in the
//!   previous ledger, and a model's prose is not a source of rules).
//! * Every text is redacted before it is read (see `secrets`).
//! * A rule that leans on the sentence before it ("Budget cap is $500 total. Never exceed
//!   it.") is pinned together with that sentence, so the value stays with the rule; a
//!   valueless rule followed by "It is $500." takes that sentence along.
//! * The objective is the latest user message that is a real request (not chit-chat, not
//!   only rules or a cancellation), without the sentences pinned as something else; it is
//!   clipped to [`OBJECTIVE_CHARS`]. A message that is only chit-chat leaves the previous
//!   objective in force, and a stated goal stays in force beside the latest request
//!   until another goal is stated.
//! * A cancellation withdraws the statement just before it in the same message, or else
//!   the latest user statement of the conversation (previous rounds included).
//! * An error is open until a later result of the same tool and command succeeds; errors
//!   resolved within the round are dropped, older ones are kept as superseded.
//! * At most [`MAX_SUPERSEDED`] superseded items are kept, the newest: enough to show
//!   what changed, bounded however long the session runs.
//! * Modified files are pinned once each and keep their place (they are restated every
//!   round; moving them would make them look newer than they are).

use std::collections::HashSet;

use super::classify::{is_assistant_decision, is_real_request};
use super::draft::Draft;
use super::errors::tool_result;
use super::kind::{Kind, Speaker};
use super::model::{Ledger, PinnedItem};
use super::reach::is_retraction;
use super::secrets::redact;
use super::statements::{pieces, statements, Statement, SENTENCE_CHARS};
use super::updates::updated;
use super::values::values;
use super::words::{clip, sentences};

/// The longest objective pinned, in characters.
pub const OBJECTIVE_CHARS: usize = 1000;
/// Superseded items kept (the newest): every request supersedes the previous objective,
/// so without a bound `details.pinned` would grow with the session.
pub const MAX_SUPERSEDED: usize = 64;

/// One message of what is being summarized.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub entry_id: Option<&'a str>,
    pub role: SourceRole<'a>,
    /// The message's text (text blocks joined; tool output for a tool result).
    pub text: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceRole<'a> {
    User,
    Assistant,
    ToolResult {
        is_error: bool,
        tool_name: &'a str,
        /// What the call ran, when known (the bash command, the path read): an error is
        /// resolved only by a success of the same tool *and* call.
        call: Option<&'a str>,
    },
    /// An earlier compaction or branch summary.
    Summary,
    /// A statement an earlier summary carried as the user's (a labelled line of its
    /// constraints): pinned as a user statement is, never read as a request.
    Carried,
}

/// The ledger of this round alone.
pub fn extract<S: AsRef<str>>(sources: &[Source<'_>], modified_files: &[S]) -> Ledger {
    update(Ledger::default(), sources, modified_files)
}

/// The previous compaction's ledger carried forward through this round: its items first,
/// then what these sources state, in order, with supersession, cancellation and error
/// resolution reaching back into earlier rounds.
pub fn update<S: AsRef<str>>(
    previous: Ledger,
    sources: &[Source<'_>],
    modified_files: &[S],
) -> Ledger {
    carry(previous, sources, None, modified_files).1
}

/// [`update`], and from the same pass the ledger `update(previous, &sources[..head], &[])`
/// gives: that of a summary request holding only the first `head` sources (a split
/// turn's history without its prefix), so a compaction extracts once.
pub fn update_with_head<S: AsRef<str>>(
    previous: Ledger,
    sources: &[Source<'_>],
    head: usize,
    modified_files: &[S],
) -> (Ledger, Ledger) {
    let (head, all) = carry(previous, sources, Some(head), modified_files);
    (head.unwrap_or_default(), all)
}

fn carry<S: AsRef<str>>(
    previous: Ledger,
    sources: &[Source<'_>],
    head: Option<usize>,
    modified_files: &[S],
) -> (Option<Ledger>, Ledger) {
    let before: HashSet<String> = previous.items().iter().map(|i| i.id.clone()).collect();
    let mut ledger = Draft::from(previous);
    let mut at_head = None;
    for (n, s) in sources.iter().enumerate() {
        crate::cancel::checkpoint();
        if head == Some(n) {
            at_head = Some(settle(ledger.snapshot(), &before));
        }
        match s.role {
            SourceRole::User => user(&mut ledger, s.text, s.entry_id, true),
            SourceRole::Carried => user(&mut ledger, s.text, s.entry_id, false),
            SourceRole::Assistant => assistant(&mut ledger, s.text, s.entry_id),
            SourceRole::ToolResult {
                is_error,
                tool_name,
                call,
            } => tool_result(&mut ledger, is_error, tool_name, call, s.text, s.entry_id),
            SourceRole::Summary => {}
        }
    }
    if head.is_some_and(|h| h >= sources.len()) {
        at_head = Some(settle(ledger.snapshot(), &before));
    }
    for path in modified_files {
        let path = path.as_ref().trim();
        if !path.is_empty() {
            let file = PinnedItem::new(
                Kind::File,
                Speaker::Session,
                path,
                vec![path.to_string()],
                None,
                None,
            );
            ledger.insert_unique(file);
        }
    }
    (at_head, settle(ledger.finish(), &before))
}

/// Errors resolved within the round are dropped (older ones stay, superseded), and the
/// superseded items are bounded.
fn settle(mut ledger: Ledger, before: &HashSet<String>) -> Ledger {
    ledger
        .items_mut()
        .retain(|i| i.kind != Kind::Error || i.is_active() || before.contains(&i.id));
    ledger.prune_superseded(MAX_SUPERSEDED);
    ledger
}

/// A user message's statements and, with `objective`, what is left of it as the request.
fn user(ledger: &mut Draft, text: &str, entry_id: Option<&str>, objective: bool) {
    let redacted = redact(text);
    let pieces = pieces(&redacted);
    let (statements, mut claimed) = statements(&pieces);

    // Whether the message names what it changes (a cancellation, an update that found
    // its statement): then a retraction withdraws nothing more.
    let mut specific = false;
    let mut pushed_here: Vec<String> = Vec::new();
    for st in statements {
        match st {
            Statement::Cancel(said) => {
                specific = true;
                match pushed_here.pop() {
                    Some(id) => ledger.cancel(&[id], &said, entry_id),
                    None => {
                        ledger.cancel_latest(&said, entry_id);
                    }
                }
            }
            Statement::Item(kind, text) => {
                let vals = values(&text);
                let target = updated(ledger, &text, &vals);
                specific |= target.is_some();
                let at = push_update(
                    ledger,
                    PinnedItem::new(kind, Speaker::User, text, vals, None, entry_id),
                    target,
                );
                pushed_here.push(ledger.get(at).id.clone());
            }
        }
    }
    // A sentence the ledger did not pin that updates a pinned statement is pinned too,
    // with that statement's kind (see `updates`).
    for (p, claim) in pieces.iter().zip(claimed.iter_mut()) {
        if *claim || p.cancel || p.text.chars().count() > SENTENCE_CHARS {
            continue;
        }
        if let Some(at) = updated(ledger, p.text, &p.values) {
            // A new value for a request's value is a fact ("release moved to April 2").
            let kind = match ledger.get(at).kind {
                Kind::Objective => Kind::Fact,
                k => k,
            };
            let item = PinnedItem::new(
                kind,
                Speaker::User,
                p.text,
                p.values.clone(),
                None,
                entry_id,
            );
            push_update(ledger, item, Some(at));
            *claim = true;
            specific = true;
        }
    }

    if !objective {
        return;
    }
    // "On second thought, …", "Instead, let's …": the request or decision before is
    // withdrawn (not merely followed by a newer one), and this message is the plan.
    if !specific && is_retraction(&redacted) {
        let said = sentences(&redacted)
            .first()
            .copied()
            .unwrap_or(&redacted)
            .to_string();
        ledger.withdraw_open(&said, entry_id);
    }
    // The objective: what is left of the message once pinned statements are taken out.
    let untouched = claimed.iter().all(|c| !c);
    let rest: Vec<&str> = pieces
        .iter()
        .zip(&claimed)
        .filter(|(p, c)| !**c && !p.cancel)
        .map(|(p, _)| p.text)
        .collect();
    let request = if untouched {
        redacted.trim().to_string()
    } else {
        rest.join(" ")
    };
    if is_real_request(&request) {
        let prose = rest.join(" ");
        let objective = clip(&request, OBJECTIVE_CHARS);
        let vals = values(&prose);
        ledger.push(PinnedItem::new(
            Kind::Objective,
            Speaker::User,
            objective,
            vals,
            None,
            entry_id,
        ));
    }
}

/// Pushes `item` and, when it updates the statement in slot `target`, supersedes that
/// one. Returns the item's slot.
fn push_update(ledger: &mut Draft, item: PinnedItem, target: Option<usize>) -> usize {
    let old = target.map(|at| ledger.get(at).id.clone());
    let at = ledger.push(item);
    if let Some(old) = old {
        ledger.supersede_with(&old, at);
    }
    at
}

fn assistant(ledger: &mut Draft, text: &str, entry_id: Option<&str>) {
    let redacted = redact(text);
    for s in sentences(&redacted) {
        if s.chars().count() <= SENTENCE_CHARS && is_assistant_decision(s) {
            let vals = values(s);
            ledger.push(PinnedItem::new(
                Kind::Decision,
                Speaker::Assistant,
                s,
                vals,
                None,
                entry_id,
            ));
        }
    }
}

#[cfg(test)]
mod tests;
