//! Sentence classification: is this sentence a rule, a constraint, a preference, a fact,
//! a decision, a cancellation, a real request or chit-chat?
//!
//! Hand-written phrase matching on lower-cased text: whole-word phrases and where they
//! stand in the sentence, not regular expressions (the ledger's module docs say why), so
//! these lists read as the specification. Precedence for a user sentence: cancellation,
//! then decision, constraint, rule, preference, fact; a sentence is one kind.
//!
//! What each heuristic catches, and what it misses:
//! * **Rule**: "never/always/don't/do not/avoid/make sure/ensure/remember to/be sure to/
//!   should (not)/have to" in imperative position (sentence start, after "please", "and",
//!   "but", "so", "also", "you", "we", or after a comma, colon or semicolon), and
//!   "must/must not/under no circumstances/not allowed/forbidden/mandatory/required"
//!   anywhere. Misses rules phrased as plain statements ("main is protected") and
//!   mis-takes epistemic "must" ("it must be the cache").
//! * **Constraint**: a limit word ("at most", "maximum", "budget", "cap", "limit",
//!   "deadline", "quota", "timeout", "no more than", …) in a sentence with a numeric value,
//!   "under/within/below/above/up to/over" directly before a number, any "exceed" or
//!   "go over", and "only …" in imperative position ("Only touch files under src/").
//! * **Preference**: "I prefer", "I'd rather", "I'd like you to", "please use", "stick
//!   to/with", "I like it that way", and an imperative "use …" that is short or carries
//!   a value ("use port 8080"). Misses preferences stated as likes ("tabs are nicer").
//! * **Fact**: a sentence of at most 30 words with a value and a copula or assignment
//!   ("is", "are", "should be", "=", ": ", "runs on", "listens on", "lives in", "called",
//!   …) that is not a question and does not open (after "ok", "alright", "so", …) with a
//!   common imperative verb (a first word with a colon is a label: "Update: the TTL
//!   should be 30 seconds" is a fact), or any sentence naming a credential (`STRIPE_API_KEY`). Misses facts
//!   without a recognizable value; pins some opinions with a file name in them ("i think
//!   parser.ts is broken").
//! * **Decision** (user or assistant): "we decided", "decided to", "let's go with", "let's
//!   use", "going with", "settled on", "we'll use", "we'll target", "final answer",
//!   "switch(ed) to", and "X instead of Y"
//!   when a commitment ("use", "go with", "I'll", "let's", …) stands in imperative
//!   position ("Use X instead of Y", not "the file uses X instead of Y"). Never in a
//!   question or beside "could/might/maybe/suggest/propose/recommend/option/consider/
//!   would you/should I", so a proposal is not a decision. Misses decisions stated as
//!   plain facts ("the export is CSV now").
//! * **Cancellation**: a sentence that is, or begins with, "never mind", "nvm", "forget
//!   that/it", "scratch that", "ignore that", "disregard that", "cancel that", "undo
//!   (that)", "stop", "don't do that", "no wait", "strike that" followed by nothing or a
//!   comma/dash; the rest of the sentence ("never mind, use 9090") is a statement of its
//!   own. "Stop the server" is a request, not a cancellation.
//! * **Goal** (an objective that a plain request does not replace): "goal:", "the/our/my/
//!   new goal", "objective:", "the/our objective", "the task is/for", "that's the task",
//!   "the mission". Misses goals stated as plain requests ("I want you to migrate …", "we
//!   need a rate limiter"): those read as steps too often ("we need to tackle this bash
//!   issue"), so the next request replaces them, as before.
//! * **Chit-chat** (not an objective): every word from a small vocabulary of thanks,
//!   praise, assent and "go on" ("wow, it works", "thanks!", "ok continue"), at most two
//!   words without a value, or a short yes/no question about the state ("are we all
//!   committed?", "did it pass?").

use super::kind::Kind;
use super::slots::{exclusive, holds_a_role};
use super::values::values;
use super::words::{fold, has_phrase, phrase_positions, words};

#[rustfmt::skip]
const CANCELS: &[&str] = &[
    "never mind", "nevermind", "nvm", "forget that", "forget it", "forget about that",
    "scratch that", "ignore that", "ignore what i said", "disregard that", "cancel that",
    "undo that", "undo", "stop", "don't do that", "do not do that", "no wait", "strike that",
];

/// Words that may stand before a cancellation: "oh, never mind", "no, scratch that".
#[rustfmt::skip]
pub(super) const CANCEL_LEAD: &[&str] = &[
    "oh", "ah", "no", "wait", "actually", "ok", "okay", "hmm", "please", "sorry",
];

#[rustfmt::skip]
const RULE_IMPERATIVE: &[&str] = &[
    "never", "always", "don't", "dont", "do not", "avoid", "make sure", "ensure", "remember to",
    "be sure to", "should not", "shouldn't", "should never", "should always", "have to",
    "has to", "no longer",
];

#[rustfmt::skip]
const RULE_ANYWHERE: &[&str] = &[
    "must", "must not", "mustn't", "shall not", "under no circumstances", "not allowed",
    "forbidden", "prohibited", "mandatory", "is required", "are required", "required to",
    "from now on", "from here on", "going forward", "for the rest of", "at all times",
    "in the future", "in future", "every time", "each time",
];

#[rustfmt::skip]
const LIMIT_STRONG: &[&str] = &[
    "at most", "at least", "no more than", "no less than", "not more than", "maximum", "max",
    "minimum", "min", "limit", "limits", "limited to", "cap", "capped", "budget", "deadline",
    "quota", "timeout", "no later than", "fewer than", "less than", "more than", "ceiling",
];

#[rustfmt::skip]
const LIMIT_BEFORE_NUMBER: &[&str] = &["under", "within", "below", "above", "up to", "over", "by"];

#[rustfmt::skip]
const PREFERENCE: &[&str] = &[
    "i prefer", "i'd prefer", "i would prefer", "i'd rather", "i would rather",
    "i'd like you to", "i would like you to", "please use", "please stick", "stick to",
    "stick with", "prefer", "i like it that way", "the way i like it", "i like it when",
];

#[rustfmt::skip]
const DECISION: &[&str] = &[
    "we decided", "we've decided", "i decided", "i've decided", "decided to", "decided on",
    "decision:", "the decision is", "let's go with", "lets go with", "let's use", "lets use",
    "let's stick with", "we'll go with", "we will go with", "i'll go with", "going with",
    "settled on", "we'll use", "we will use", "we chose", "we picked", "switch to",
    "switching to", "switched to", "we'll target", "we will target", "final answer",
];

#[rustfmt::skip]
const COMMITMENT: &[&str] = &[
    "use", "go with", "switch to", "i'll", "we'll", "i will", "we will", "let's", "lets",
];

#[rustfmt::skip]
const TENTATIVE: &[&str] = &[
    "could", "might", "maybe", "perhaps", "suggest", "propose", "recommend", "option",
    "consider", "would you", "should i", "shall i", "do you want", "alternatively", "if you",
    "we can",
];

#[rustfmt::skip]
const COPULAS: &[&str] = &[
    "is", "are", "was", "were", "=", ": ", "runs on", "listens on", "lives in", "lives at",
    "located", "called", "named", "hosted", "stored", "points to", "is at", "uses",
    "should be", "will be",
];

/// Words a request may open with before its verb: "ok, read …", "alright, let's …".
#[rustfmt::skip]
const OPENERS: &[&str] = &[
    "ok", "okay", "alright", "so", "and", "now", "also", "then", "btw", "please", "hey", "right",
    "well", "yes", "no", "actually", "first", "next", "finally", "great", "cool", "thanks",
];

/// Longer sentences are narration, not a fact to keep.
const FACT_WORDS: usize = 30;

/// First words of a request, not of a statement of fact.
#[rustfmt::skip]
const IMPERATIVES: &[&str] = &[
    "add", "fix", "make", "create", "write", "implement", "update", "change", "remove",
    "delete", "run", "build", "test", "check", "look", "find", "show", "tell", "explain",
    "refactor", "rename", "move", "try", "set", "put", "give", "open", "read", "edit",
    "install", "deploy", "commit", "push", "merge", "revert", "help", "can", "could", "would",
    "please", "let's", "go", "start", "stop", "keep", "get", "send", "call", "list", "review",
    "debug",
];

#[rustfmt::skip]
const CHITCHAT: &[&str] = &[
    "thanks", "thank", "thx", "ty", "you", "wow", "it", "works", "worked", "working", "work",
    "great", "cool", "nice", "ok", "okay", "k", "kk", "awesome", "perfect", "good", "job",
    "well", "done", "yes", "yeah", "yep", "yup", "no", "nope", "nah", "sure", "lol", "haha",
    "hi", "hello", "hey", "looks", "look", "lgtm", "amazing", "excellent", "fantastic",
    "brilliant", "impressive", "now", "that", "that's", "this", "is", "so", "very", "much",
    "all", "right", "alright", "fine", "indeed", "yay", "love", "continue", "go", "ahead",
    "proceed", "keep", "going", "on", "next", "please", "do", "carry", "sounds", "sound",
    "seems", "correct", "exactly", "agreed", "agree", "fair", "enough", "and", "the", "a",
    "finally", "again", "really", "super", "neat", "sweet", "wonderful", "oh", "ah", "hmm",
    "hm", "we", "i", "it's", "got", "see", "makes", "sense", "cheers", "appreciated", "lets",
    "let's", "ship", "jesus", "omg", "god", "holy", "damn", "everything", "are", "monster",
    "beast", "genius", "legend", "wizard", "dude", "man",
];

#[rustfmt::skip]
const STATE_QUESTION: &[&str] = &[
    "are", "is", "did", "does", "do", "have", "has", "was", "were", "am",
];

/// Cues of a stated goal, not a step towards it.
#[rustfmt::skip]
const GOAL_CUES: &[&str] = &[
    "goal:", "the goal", "our goal", "my goal", "new goal", "objective:", "the objective",
    "our objective", "the task is", "the task for", "that's the task", "our task is",
    "the mission",
];

/// Whether an objective states the session's goal ("Goal: build …", "We need a rate
/// limiter …; that's the task for today") rather than a next step ("Check x.ts for
/// unused imports"): a plain request does not replace a goal.
pub(super) fn is_goal(objective: &str) -> bool {
    let f = fold(objective);
    GOAL_CUES.iter().any(|c| has_phrase(&f, c))
}

/// What a sentence of the user states, if anything worth pinning.
/// `vals` are the sentence's values (see `values`), found once by the caller.
pub(super) fn classify_user(sentence: &str, vals: &[String]) -> Option<Kind> {
    let f = fold(sentence);
    if is_decision(&f) {
        return Some(Kind::Decision);
    }
    if is_constraint(&f, vals) {
        return Some(Kind::Constraint);
    }
    if RULE_IMPERATIVE.iter().any(|p| imperative(&f, p))
        || RULE_ANYWHERE.iter().any(|p| has_phrase(&f, p))
    {
        return Some(Kind::Rule);
    }
    if is_preference(&f, vals) {
        return Some(Kind::Preference);
    }
    if is_fact(&f, vals) || holds_a_role(sentence) {
        return Some(Kind::Fact);
    }
    // "Keep your answers terse", "Show times in Eastern time": a setting that holds one
    // value for the whole session is a standing preference.
    if !f.trim_end().ends_with('?') && !exclusive(sentence).is_empty() {
        return Some(Kind::Preference);
    }
    None
}

/// Whether an assistant's sentence records a decision (never a proposal).
pub(super) fn is_assistant_decision(sentence: &str) -> bool {
    is_decision(&fold(sentence))
}

fn is_decision(f: &str) -> bool {
    if f.contains('?') || TENTATIVE.iter().any(|p| has_phrase(f, p)) {
        return false;
    }
    // "X instead of Y" is a decision only with a commitment in imperative position
    // ("Use X instead of Y", "I'll use X instead"), not in a description ("the file
    // uses chalk instead of the theme").
    DECISION.iter().any(|p| has_phrase(f, p))
        || (has_phrase(f, "instead of") && COMMITMENT.iter().any(|p| imperative(f, p)))
}

fn is_constraint(f: &str, vals: &[String]) -> bool {
    if has_phrase(f, "exceed") || has_phrase(f, "go over") || has_phrase(f, "go above") {
        return true;
    }
    if imperative(f, "only") {
        return true;
    }
    let numeric = || {
        vals.iter().any(|v| {
            v.chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || "$€£¥".contains(c))
        })
    };
    if LIMIT_STRONG.iter().any(|p| has_phrase(f, p)) && numeric() {
        return true;
    }
    LIMIT_BEFORE_NUMBER.iter().any(|p| {
        phrase_positions(f, p).any(|i| {
            let rest = f[i + p.len()..].trim_start();
            rest.starts_with(|c: char| c.is_ascii_digit() || "$€£¥".contains(c))
        })
    })
}

fn is_preference(f: &str, vals: &[String]) -> bool {
    if PREFERENCE
        .iter()
        .any(|p| imperative(f, p) || f.starts_with(p))
    {
        return true;
    }
    imperative(f, "use") && (words(f).len() <= 8 || !vals.is_empty())
}

fn is_fact(f: &str, vals: &[String]) -> bool {
    if f.trim_end().ends_with('?') {
        return false;
    }
    if vals.iter().any(|v| is_credential_name(v)) {
        return true;
    }
    let ws = words(f);
    if vals.is_empty() || ws.len() > FACT_WORDS {
        return false;
    }
    // A first word with a colon is a label ("Update: the TTL is …"), not a verb.
    let label = ws
        .first()
        .filter(|w| f.trim_start().starts_with(&format!("{w}:")))
        .is_some();
    let first = ws
        .iter()
        .skip(usize::from(label))
        .find(|w| !OPENERS.contains(&w.as_str()));
    if first.is_some_and(|w| IMPERATIVES.contains(&w.as_str())) {
        return false;
    }
    COPULAS.iter().any(|c| match *c {
        "=" | ": " => f.contains(c),
        _ => has_phrase(f, c),
    })
}

/// `STRIPE_API_KEY`, `DB_PASSWORD`, `GITHUB_TOKEN`: the name of a secret, which is pinned
/// (the value never is).
pub(super) fn is_credential_name(v: &str) -> bool {
    v.contains('_')
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && [
            "KEY",
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASS",
            "PWD",
            "CREDENTIAL",
            "AUTH",
        ]
        .iter()
        .any(|k| v.split('_').any(|part| part.starts_with(k)))
}

/// Whether `phrase` occurs in imperative position: at the start of the sentence or of a
/// clause, possibly after "please", "and", "but", "so", "also", "just", "you", "we" or
/// "then".
pub(super) fn imperative(f: &str, phrase: &str) -> bool {
    phrase_positions(f, phrase).any(|i| {
        let mut before = f[..i].trim_end();
        loop {
            let trimmed = [
                "please", "and", "but", "so", "also", "just", "you", "we", "then", "really",
                "simply",
            ]
            .iter()
            .find_map(|w| {
                before
                    .strip_suffix(w)
                    .filter(|b| b.is_empty() || b.ends_with(|c: char| !c.is_alphanumeric()))
            })
            .map(str::trim_end);
            match trimmed {
                Some(t) => before = t,
                None => break,
            }
        }
        before.is_empty() || before.ends_with([',', ';', ':', '(', '-', '\u{2014}', '*'])
    })
}

/// When a sentence is, or starts with, a cancellation: the rest of it (maybe empty).
pub(super) fn cancellation(sentence: &str) -> Option<&str> {
    let f = fold(sentence);
    if f.len() != sentence.len() {
        // Folding changed byte lengths (rare letters): compare without the rest.
        return CANCELS
            .iter()
            .any(|c| f.trim_end_matches(['.', '!']) == *c)
            .then_some("");
    }
    let mut at = 0;
    loop {
        let rest = f[at..].trim_start_matches([' ', ',']);
        let lead = CANCEL_LEAD
            .iter()
            .find(|w| rest.starts_with(*w) && rest[w.len()..].starts_with([' ', ',']))
            .filter(|w| {
                !CANCELS
                    .iter()
                    .any(|c| rest.starts_with(c) && c.len() > w.len())
            });
        match lead {
            Some(w) => at = f.len() - rest.len() + w.len(),
            None => break,
        }
    }
    let start = f.len() - f[at..].trim_start_matches([' ', ',']).len();
    let rest = &f[start..];
    for c in CANCELS {
        if let Some(after) = rest.strip_prefix(c) {
            let tail = after.trim_start_matches(['.', '!']);
            if tail.trim().is_empty() {
                return Some("");
            }
            if after.starts_with([',', ';', ':', '-', '\u{2014}', '.', '!']) {
                let cut = sentence.len() - after.len();
                let remainder = sentence[cut..]
                    .trim_start_matches([',', ';', ':', '-', '\u{2014}', '.', '!', ' ']);
                return Some(remainder);
            }
        }
    }
    None
}

/// Whether a user message (cancellations and pinned statements taken out) is a real
/// request, not chit-chat.
pub fn is_real_request(text: &str) -> bool {
    let f = fold(text);
    let ws = words(&f);
    if ws.is_empty() {
        return false;
    }
    // Values are looked for only in short texts, where they decide.
    let has_values = || !values(text).is_empty();
    if ws.len() <= 2 && !has_values() {
        return false;
    }
    if ws.iter().all(|w| CHITCHAT.contains(&w.as_str())) {
        return false;
    }
    let state_question = f.trim_end().ends_with('?')
        && ws.len() <= 6
        && STATE_QUESTION.contains(&ws[0].as_str())
        && !has_values();
    !state_question
}

/// Whether a sentence leans on the one before it ("Never exceed it.").
pub(super) fn refers_back(sentence: &str) -> bool {
    let ws = words(sentence);
    ws.len() <= 12
        && ws.iter().any(|w| {
            matches!(
                w.as_str(),
                "it" | "this" | "that" | "these" | "those" | "them" | "there" | "such"
            )
        })
}

/// Whether a sentence starts by pointing at the one before it ("It is $500.").
pub(super) fn starts_with_reference(sentence: &str) -> bool {
    let ws = words(sentence);
    ws.len() <= 12
        && ws.first().is_some_and(|w| {
            matches!(
                w.as_str(),
                "it" | "it's" | "that" | "that's" | "this" | "which"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<Kind> {
        classify_user(s, &values(s))
    }

    #[test]
    fn imperative_triggers_make_rules() {
        assert_eq!(kind("Never push to main."), Some(Kind::Rule));
        assert_eq!(kind("Please always run the tests first"), Some(Kind::Rule));
        assert_eq!(kind("Tests first, and don't skip clippy"), Some(Kind::Rule));
        assert_eq!(kind("You must not touch the lockfile."), Some(Kind::Rule));
    }

    #[test]
    fn triggers_out_of_imperative_position_are_not_rules() {
        assert_eq!(kind("I don't know why it fails."), None);
        assert_eq!(kind("I never saw that before."), None);
    }

    #[test]
    fn limits_with_numbers_exceed_and_only_make_constraints() {
        assert_eq!(kind("Budget cap is $500 total."), Some(Kind::Constraint));
        assert_eq!(kind("Never exceed it."), Some(Kind::Constraint));
        assert_eq!(kind("Keep answers under 200 words"), Some(Kind::Constraint));
        assert_eq!(kind("Only touch files under src/"), Some(Kind::Constraint));
        assert_eq!(kind("We have a budget"), None);
    }

    #[test]
    fn preferences_are_stated_or_requested_uses() {
        assert_eq!(kind("I prefer tabs over spaces."), Some(Kind::Preference));
        assert_eq!(kind("Please use pnpm."), Some(Kind::Preference));
        assert_eq!(kind("use port 8080"), Some(Kind::Preference));
    }

    #[test]
    fn facts_need_a_value_and_a_copula_or_a_credential_name() {
        assert_eq!(
            kind("The staging host is db.internal:5432."),
            Some(Kind::Fact)
        );
        assert_eq!(kind("Project: acme-billing"), Some(Kind::Fact));
        assert_eq!(kind("The key lives in STRIPE_API_KEY"), Some(Kind::Fact));
        assert_eq!(kind("Fix the bug in src/parser.rs."), None);
        assert_eq!(
            kind("ok, read src/a.rs and tell me if there are bugs"),
            None
        );
        assert_eq!(kind("alright, let's tackle main-new.ts."), None);
        assert_eq!(kind("Is the host db.internal?"), None);
    }

    #[test]
    fn decisions_are_firm_and_proposals_are_not() {
        assert_eq!(kind("Let's go with Postgres."), Some(Kind::Decision));
        assert_eq!(
            kind("Use SQLite instead of Postgres."),
            Some(Kind::Decision)
        );
        assert!(is_assistant_decision("We decided to keep the v1 API."));
        assert!(is_assistant_decision(
            "I'll use serde_json instead of a custom parser."
        ));
        assert!(!is_assistant_decision(
            "We could use Redis instead of memcached."
        ));
        assert!(!is_assistant_decision("Should I switch to tokio?"));
        assert!(!is_assistant_decision("I suggest we go with option B."));
        assert!(!is_assistant_decision(
            "The file uses chalk instead of the theme system."
        ));
    }

    #[test]
    fn cancellations_are_whole_or_lead_a_sentence() {
        assert_eq!(cancellation("never mind"), Some(""));
        assert_eq!(cancellation("Oh, never mind."), Some(""));
        assert_eq!(cancellation("Stop!"), Some(""));
        assert_eq!(
            cancellation("Scratch that, use port 9090."),
            Some("use port 9090.")
        );
        assert_eq!(cancellation("Stop the server."), None);
        assert_eq!(cancellation("Undo the last commit"), None);
        assert_eq!(cancellation("No, that's fine"), None);
    }

    #[test]
    fn chit_chat_is_not_an_objective() {
        for s in [
            "wow, it works",
            "thanks!",
            "are we all commited?",
            "ok continue",
            "Perfect, thank you!",
            "did it pass?",
            "jesus, everything works, you are a monster",
            "omg you are a genius",
        ] {
            assert!(!is_real_request(s), "{s}");
        }
        for s in [
            "Add a logout button to the navbar.",
            "can you add tests for the parser?",
            "Fix src/a.rs",
            "are there any other such pathing issues?",
        ] {
            assert!(is_real_request(s), "{s}");
        }
    }

    #[test]
    fn credential_names_are_recognized() {
        assert!(is_credential_name("STRIPE_API_KEY"));
        assert!(is_credential_name("DB_PASSWORD"));
        assert!(!is_credential_name("MAX_RETRIES"));
    }

    #[test]
    fn back_references_are_short_and_pointing() {
        assert!(refers_back("Never exceed it."));
        assert!(!refers_back("Never push to main."));
        assert!(starts_with_reference("It is $500."));
    }
}
