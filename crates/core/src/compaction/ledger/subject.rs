//! Subjects: what a statement is about, so a later statement on the same thing can
//! replace it ("use port 9090" after "use port 8080").
//!
//! Decisions:
//! * A statement with values is about the words that label its first value: up to two
//!   content words right before it ("Budget cap is $500" → `budget cap`, "use port 8080"
//!   → `port`), else the first two after it ("8080 is the API port" → `api port`).
//! * A statement without values is about all its content words, in order ("Never push
//!   to main." → `push main`); trigger words are stop words, so "Always use tabs" and
//!   "Never use tabs" share `tab`.
//! * The subject is a necessary condition only: supersession (in `supersede`) also asks
//!   that the two statements share at least half of their content words besides the
//!   values ([`same_topic`]), so "Port 8080 is the API." and "Port 5432 is the database."
//!   both keep their place although both are labelled `port`.
//! * Files are about their path, errors about their tool and command, the objective is
//!   one subject.

use std::collections::BTreeSet;

use super::kind::Kind;
use super::labels::without_label;
use super::words::{content_words, is_stopword, jaccard, stem, words};

/// The share of content words two statements must have in common to be one topic.
pub(super) const SAME_TOPIC: f64 = 0.5;

const MAX_SUBJECT_WORDS: usize = 8;

pub(super) fn subject_of(kind: Kind, text: &str, values: &[String]) -> String {
    match kind {
        Kind::File => format!("file:{}", text.trim()),
        Kind::Entry => format!(
            "entry:{}",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
        Kind::Objective => "objective".to_string(),
        Kind::Error => {
            let t = text.split(" failed").next().unwrap_or(text);
            format!("error:{}", t.trim().to_lowercase())
        }
        _ => {
            let text = without_label(text);
            label(text, values)
                .unwrap_or_else(|| ordered_content(text, MAX_SUBJECT_WORDS).join(" "))
        }
    }
}

/// The key for an error: its tool and, when known, the command or argument it ran,
/// normalized so that reruns of one command match ([`command_key`]).
pub(super) fn error_subject(tool: &str, call: Option<&str>) -> String {
    match call {
        Some(c) => format!("error:{tool} {}", command_key(c)),
        None => format!("error:{tool}"),
    }
}

/// A command without what does not change what it runs: leading `cd DIR &&`, output
/// redirection `2>&1`, and everything from the first pipe (`| head -40`, `| tail`).
pub(super) fn command_key(command: &str) -> String {
    let mut c = super::words::collapse_ws(command);
    while let Some(rest) = c.strip_prefix("cd ") {
        let Some(at) = rest.find(" && ").or_else(|| rest.find("; ")) else {
            break;
        };
        let skip = if rest[at..].starts_with(" && ") { 4 } else { 2 };
        c = rest[at + skip..].to_string();
    }
    if let Some(at) = c.find(" | ") {
        c.truncate(at);
    }
    c.replace(" 2>&1", "").trim().to_string()
}

fn label(text: &str, values: &[String]) -> Option<String> {
    let first = values.first()?;
    let at = text.find(first.as_str())?;
    let before = &text[..at];
    let clause = before
        .rsplit(['.', '!', '?', ';', ','])
        .next()
        .unwrap_or(before);
    let mut near: Vec<String> = ordered_content(clause, usize::MAX);
    if near.len() > 2 {
        near.drain(..near.len() - 2);
    }
    if near.is_empty() {
        let after = &text[at + first.len()..];
        let clause = after
            .split(['.', '!', '?', ';', ','])
            .next()
            .unwrap_or(after);
        near = ordered_content(clause, 2);
    }
    (!near.is_empty()).then(|| near.join(" "))
}

/// Stemmed content words in order of appearance, de-duplicated.
fn ordered_content(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(text) {
        if is_stopword(&w) || w.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let s = stem(&w);
        if !out.contains(&s) {
            out.push(s);
        }
        if out.len() == max {
            break;
        }
    }
    out
}

/// Content words of a statement apart from its values.
pub(super) fn topic_words(text: &str, values: &[String]) -> BTreeSet<String> {
    let mut t = without_label(text).to_string();
    for v in values {
        t = t.replace(v.as_str(), " ");
    }
    content_words(&t)
}

/// Whether two statements with the same subject speak about the same thing: enough words
/// in common, and not two look-alike entities, each named by a word the other lacks
/// ("the primary deployment region" and "the backup deployment region"; "use port 8080 for
/// the API" and "use port 9090 for the admin UI"). A restatement with fewer or more words
/// ("The budget cap is now $800" after "Budget cap is $500 total. Never exceed it.") is
/// still the same thing.
pub(super) fn same_topic(a: (&str, &[String]), b: (&str, &[String])) -> bool {
    let (wa, wb) = (topic_words(a.0, a.1), topic_words(b.0, b.1));
    let apart = wa.difference(&wb).next().is_some() && wb.difference(&wa).next().is_some();
    !apart && jaccard(&wa, &wb) >= SAME_TOPIC
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(text: &str, values: &[&str]) -> String {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        subject_of(Kind::Rule, text, &values)
    }

    #[test]
    fn a_value_is_labelled_by_the_words_before_it() {
        assert_eq!(subject("use port 8080", &["8080"]), "port");
        assert_eq!(subject("use port 9090", &["9090"]), "port");
        assert_eq!(
            subject("Budget cap is $500 total. Never exceed it.", &["$500"]),
            "budget cap"
        );
        assert_eq!(
            subject("The budget cap is now $800.", &["$800"]),
            "budget cap"
        );
    }

    #[test]
    fn a_value_at_the_start_is_labelled_by_the_words_after_it() {
        assert_eq!(subject("8080 is the API port.", &["8080"]), "api port");
    }

    #[test]
    fn without_values_the_subject_is_every_content_word_in_order() {
        assert_eq!(subject("Never push to main.", &[]), "push main");
        assert_eq!(
            subject("Always use tabs.", &[]),
            subject("Never use tabs!", &[])
        );
    }

    #[test]
    fn files_errors_and_the_objective_have_fixed_subjects() {
        assert_eq!(subject_of(Kind::File, "src/a.rs", &[]), "file:src/a.rs");
        assert_eq!(
            subject_of(Kind::Objective, "Add a button", &[]),
            "objective"
        );
        assert_eq!(
            error_subject("bash", Some("cargo  test")),
            "error:bash cargo test"
        );
    }

    #[test]
    fn same_subject_is_not_enough_for_different_topics() {
        let api = ("Port 8080 is the API.", &["8080".to_string()][..]);
        let db = ("Port 5432 is the database.", &["5432".to_string()][..]);
        assert!(!same_topic(api, db));
        let a = ("use port 8080", &["8080".to_string()][..]);
        let b = ("use port 9090", &["9090".to_string()][..]);
        assert!(same_topic(a, b));
    }

    #[test]
    fn look_alike_entities_are_not_one_topic() {
        let v = |x: &str| vec![x.to_string()];
        let (a, b) = (v("eu-north-3"), v("us-west-2"));
        assert!(!same_topic(
            ("FACT: The primary deployment region is eu-north-3.", &a),
            ("FACT: The backup deployment region is us-west-2.", &b)
        ));
        let (a, b) = (v("$500"), v("$800"));
        assert!(same_topic(
            ("Budget cap is $500 total. Never exceed it.", &a),
            ("The budget cap is now $800.", &b)
        ));
    }
}
