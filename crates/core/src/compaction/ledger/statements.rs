//! A user message as statements: its sentences, with cancellations split off and a rule
//! joined to the sentence that holds its value.
//!
//! Decisions:
//! * A rule, constraint or preference without a value that leans on the sentence before
//!   it ("Budget cap is $500 total. Never exceed it."), or a limit without its value right
//!   after the sentence that has it ("… $500 total. Never exceed without explicit
//!   approval."), becomes one statement with that sentence, whatever that sentence was on
//!   its own; a valueless rule followed by a
//!   sentence pointing back with a value ("Never go over the budget. It is $500.") takes
//!   that sentence along. Either way the value stays with its rule.
//! * A cancellation is a statement of its own, and what follows it in the same sentence
//!   ("Scratch that, use port 9090.") is classified as a sentence of its own.
//! * Sentences longer than [`SENTENCE_CHARS`] are pasted material and are never pinned.
//! * The joined text is the sentences joined by one space: verbatim sentences, not the
//!   line layout between them.

use super::classify::{cancellation, classify_user, refers_back, starts_with_reference};
use super::kind::Kind;
use super::labels::{spans, Span};
use super::reach::is_scope_only;
use super::values::values;
use super::words::sentences;

/// Longer sentences are pasted material, not statements.
pub(super) const SENTENCE_CHARS: usize = 500;
/// A labelled line is pinned whole up to this length: the user marked it, so a long
/// one is still meant (longer, it is read as plain sentences).
pub(super) const LABELLED_CHARS: usize = 2000;

/// A sentence of a user message, after cancellations are split off.
pub(super) struct Piece<'a> {
    pub text: &'a str,
    pub kind: Option<Kind>,
    pub values: Vec<String>,
    pub cancel: bool,
    /// Its kind comes from the user's label (see `labels`), not from a guess.
    pub labelled: bool,
}

/// What a user message does to the ledger, in order.
pub(super) enum Statement {
    Cancel(String),
    Item(Kind, String),
}

pub(super) fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for span in spans(text) {
        match span {
            Span::Labelled(kind, line) if line.chars().count() <= LABELLED_CHARS => {
                out.push(Piece {
                    text: line,
                    kind: Some(kind),
                    values: values(line),
                    cancel: false,
                    labelled: true,
                });
            }
            Span::Labelled(_, plain) | Span::Plain(plain) => sentence_pieces(plain, &mut out),
        }
    }
    out
}

fn sentence_pieces<'a>(text: &'a str, out: &mut Vec<Piece<'a>>) {
    for s in sentences(text) {
        match cancellation(s) {
            Some(rest) => {
                out.push(Piece {
                    text: s,
                    kind: None,
                    values: Vec::new(),
                    cancel: true,
                    labelled: false,
                });
                if !rest.is_empty() {
                    out.push(piece(rest));
                }
            }
            None => out.push(piece(s)),
        }
    }
}

fn piece(s: &str) -> Piece<'_> {
    let values = values(s);
    let kind = if s.chars().count() > SENTENCE_CHARS {
        None
    } else {
        classify_user(s, &values)
    };
    Piece {
        text: s,
        kind,
        values,
        cancel: false,
        labelled: false,
    }
}

/// Groups pieces into statements (joining a rule with the sentence its value is in);
/// returns them and which pieces they claimed.
pub(super) fn statements(pieces: &[Piece<'_>]) -> (Vec<Statement>, Vec<bool>) {
    let mut out: Vec<Statement> = Vec::new();
    let mut claimed = vec![false; pieces.len()];
    // Which statement a claimed piece went into.
    let mut owner: Vec<Option<usize>> = vec![None; pieces.len()];
    let mut i = 0;
    while i < pieces.len() {
        let p = &pieces[i];
        if p.cancel {
            out.push(Statement::Cancel(p.text.to_string()));
            claimed[i] = true;
            i += 1;
            continue;
        }
        // "Until I say otherwise." standing alone scopes the instruction after it: the two
        // are one standing rule, pinned whole (the scope alone says nothing).
        if is_scope_only(p.text) {
            if let Some(n) = pieces.get(i + 1).filter(|n| !n.cancel && !n.labelled) {
                let kind = match n.kind {
                    Some(k @ (Kind::Constraint | Kind::Preference)) => k,
                    _ => Kind::Rule,
                };
                out.push(Statement::Item(kind, format!("{} {}", p.text, n.text)));
                for k in [i, i + 1] {
                    claimed[k] = true;
                    owner[k] = Some(out.len() - 1);
                }
                i += 2;
                continue;
            }
        }
        let Some(kind) = p.kind else {
            i += 1;
            continue;
        };
        let ruleish = matches!(kind, Kind::Rule | Kind::Constraint | Kind::Preference);
        let valueless = p.values.is_empty();
        let prev = i.checked_sub(1).filter(|&j| !pieces[j].cancel);
        if p.labelled {
            out.push(Statement::Item(kind, p.text.to_string()));
            claimed[i] = true;
            owner[i] = Some(out.len() - 1);
            i += 1;
            continue;
        }
        // A limit without its value ("Never exceed without explicit approval.") leans on
        // the sentence before it when that one has the value ("Budget cap is $500.").
        let limit_of_previous = kind == Kind::Constraint
            && prev.is_some_and(|j| !pieces[j].values.is_empty() && !pieces[j].labelled);
        if ruleish && valueless && (refers_back(p.text) || limit_of_previous) {
            if let Some(j) = prev {
                match owner[j] {
                    Some(k) => {
                        if let Statement::Item(prev_kind, text) = &mut out[k] {
                            text.push(' ');
                            text.push_str(p.text);
                            if !pieces[j].labelled {
                                *prev_kind = joined_kind(*prev_kind, kind);
                            }
                        }
                        owner[i] = Some(k);
                    }
                    None => {
                        let joined_kind = joined_kind(pieces[j].kind.unwrap_or(kind), kind);
                        out.push(Statement::Item(
                            joined_kind,
                            format!("{} {}", pieces[j].text, p.text),
                        ));
                        owner[j] = Some(out.len() - 1);
                        owner[i] = Some(out.len() - 1);
                        claimed[j] = true;
                    }
                }
                claimed[i] = true;
                i += 1;
                continue;
            }
        }
        let next = pieces.get(i + 1).filter(|n| {
            !n.cancel
                && matches!(n.kind, None | Some(Kind::Fact))
                && starts_with_reference(n.text)
                && !n.values.is_empty()
        });
        let (text, used) = match next {
            Some(n) if valueless && matches!(kind, Kind::Rule | Kind::Constraint) => {
                (format!("{} {}", p.text, n.text), 2)
            }
            _ => (p.text.to_string(), 1),
        };
        out.push(Statement::Item(kind, text));
        for k in i..i + used {
            claimed[k] = true;
            owner[k] = Some(out.len() - 1);
        }
        i += used;
    }
    (out, claimed)
}

/// A value sentence joined with a rule about it: a constraint if either is one.
fn joined_kind(a: Kind, b: Kind) -> Kind {
    if a == Kind::Constraint || b == Kind::Constraint {
        Kind::Constraint
    } else {
        b
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn grouped(message: &str) -> Vec<String> {
        let pieces = pieces(message);
        statements(&pieces)
            .0
            .into_iter()
            .map(|s| match s {
                Statement::Cancel(said) => format!("cancel: {said}"),
                Statement::Item(kind, text) => format!("{}: {text}", kind.as_str()),
            })
            .collect()
    }

    #[test]
    fn a_rule_referring_back_is_joined_with_the_sentence_holding_its_value() {
        assert_eq!(
            grouped("Budget cap is $500 total. Never exceed it."),
            ["constraint: Budget cap is $500 total. Never exceed it."]
        );
        assert_eq!(
            grouped("We deploy from the release branch. Never force-push to it."),
            ["rule: We deploy from the release branch. Never force-push to it."]
        );
    }

    #[test]
    fn a_limit_without_its_value_stays_with_the_sentence_before() {
        assert_eq!(
            grouped("Budget cap is $500 total. Never exceed without explicit approval."),
            ["constraint: Budget cap is $500 total. Never exceed without explicit approval."]
        );
        // A rule with an object of its own stands alone.
        assert_eq!(
            grouped("Budget cap is $500 total. Never push to main."),
            [
                "constraint: Budget cap is $500 total.",
                "rule: Never push to main."
            ]
        );
    }

    #[test]
    fn a_valueless_rule_takes_the_next_sentence_holding_its_value() {
        assert_eq!(
            grouped("Never go over the budget. It is $500."),
            ["constraint: Never go over the budget. It is $500."]
        );
    }

    #[test]
    fn a_rule_with_its_own_value_stands_alone() {
        assert_eq!(
            grouped("Never exceed 3 retries. It is a hard limit."),
            ["constraint: Never exceed 3 retries."]
        );
    }

    #[test]
    fn a_cancellation_is_a_statement_and_its_tail_another() {
        assert_eq!(
            grouped("Use port 8080. Scratch that, use port 9090."),
            [
                "preference: Use port 8080.",
                "cancel: Scratch that, use port 9090.",
                "preference: use port 9090."
            ]
        );
    }

    #[test]
    fn unclassified_sentences_are_left_unclaimed() {
        let pieces = pieces("Add a button. Never push to main.");
        let (st, claimed) = statements(&pieces);
        assert_eq!(st.len(), 1);
        assert_eq!(claimed, [false, true]);
    }

    #[test]
    fn sentences_too_long_to_be_statements_are_not_pinned() {
        let long = format!("Never {}.", "x ".repeat(SENTENCE_CHARS));
        assert!(grouped(&long).is_empty());
    }

    #[test]
    fn a_scope_standing_alone_binds_the_instruction_after_it() {
        assert_eq!(
            grouped("Until I say otherwise.\nRun the full test suite before every commit."),
            ["rule: Until I say otherwise. Run the full test suite before every commit."]
        );
        assert_eq!(
            grouped("From now on:\nthe docs use British spelling."),
            ["rule: From now on: the docs use British spelling."]
        );
        assert_eq!(
            grouped("Going forward —\nkeep every migration reversible. Thanks!"),
            ["rule: Going forward — keep every migration reversible."]
        );
        // A scope inside its sentence is the sentence's own business.
        assert_eq!(
            grouped("For the rest of this session, answer in British English."),
            ["rule: For the rest of this session, answer in British English."]
        );
        // A scope with nothing after it binds nothing.
        assert!(grouped("Until further notice.")
            .iter()
            .all(|g| !g.contains("Until further notice. ")));
    }
}
