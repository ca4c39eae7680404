//! Reach: phrases by which a message says how far a statement reaches — forward, a scope
//! that binds the instruction after it ("Until I say otherwise."), or back, a retraction
//! of what the user asked last ("On second thought, …", "Instead, let's …").

use super::classify::CANCEL_LEAD;
use super::words::{fold, has_phrase, sentences};

/// Scope phrases that bind an instruction forward ("From now on:", "Until I say otherwise.").
#[rustfmt::skip]
const SCOPES: &[&str] = &[
    "from now on", "from here on", "from here on out", "going forward", "until i say otherwise",
    "until further notice", "until i tell you otherwise", "for the rest of this session",
    "for the rest of the session", "for the rest of this project", "for the rest of the project",
    "henceforth", "from this point on", "from this point forward", "as a standing rule",
    "for all future work", "in all future work", "for every future change", "always",
    "important", "remember",
];

/// Whether a sentence is only a scope phrase ("Until I say otherwise.", "From now on:",
/// "Going forward —"): it binds the sentence after it.
pub(super) fn is_scope_only(sentence: &str) -> bool {
    let f = fold(sentence);
    let core = f.trim().trim_matches(|c: char| !c.is_alphanumeric()).trim();
    SCOPES.contains(&core)
}

/// Phrases by which a message takes back what the user asked last, wherever they stand.
#[rustfmt::skip]
const RETRACTIONS: &[&str] = &[
    "on second thought", "on second thoughts", "change of plan", "change of plans",
    "changed my mind", "change my mind", "disregard my previous", "disregard my last",
    "disregard the previous", "disregard the last", "ignore my previous", "ignore my last",
    "ignore the previous instruction", "ignore the last instruction", "forget what i said",
    "forget my previous", "forget my last", "forget the previous", "scrap that", "scrap the plan",
    "belay that", "we're not doing that", "we are not doing that",
];

/// Openings by which a sentence replaces what was asked last: "Instead, let's …".
#[rustfmt::skip]
const RETRACTING_OPENINGS: &[&str] = &[
    "instead, let's", "instead let's", "instead, lets", "actually, let's", "actually let's",
    "actually, lets", "rather, let's", "no, let's", "let's not", "let us not", "instead, we",
    "instead we", "actually, we'll", "actually we'll", "actually, we will",
];

/// Whether a user message takes back the request or decision before it ("on second
/// thought, …", "disregard my previous instruction", "instead, let's …"): its own request,
/// if any, is then the plan, and the one before is withdrawn, not merely older.
pub(super) fn is_retraction(text: &str) -> bool {
    let f = fold(text);
    if RETRACTIONS.iter().any(|p| has_phrase(&f, p)) {
        return true;
    }
    sentences(&f).into_iter().any(|s| {
        let mut rest = s.trim_start_matches([' ', '-', '*', '>']);
        while let Some(lead) = CANCEL_LEAD.iter().find(|w| {
            rest.starts_with(*w) && rest[w.len()..].starts_with([' ', ',']) && **w != "actually"
        }) {
            rest = rest[lead.len()..].trim_start_matches([' ', ',']);
        }
        RETRACTING_OPENINGS.iter().any(|o| rest.starts_with(o))
    })
}
