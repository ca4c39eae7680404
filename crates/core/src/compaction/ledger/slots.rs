//! Slots: what kind of thing a statement sets — an amount of money, a date, a person, a
//! time zone — whatever words it uses. Two statements that set the same slot can be about
//! the same thing even when they share no word ("keep spend under five hundred dollars"
//! after "budget cap is $800"), which is what lets an update find what it replaces (see
//! `updates`).
//!
//! Decisions:
//! * A slot is found from the words as well as from the values: "five hundred dollars",
//!   "June 6" and "Pacific Time" are no values (nothing exact to check) but they set a
//!   slot.
//! * A few slots hold one value at a time for the whole session ([`EXCLUSIVE`]): the
//!   time zone times are shown in, the unit system, the tone of the answers. A statement
//!   setting one of them to another value replaces the older one even without an update
//!   cue ("show clocks in Pacific Time" after "put every timestamp in UTC"). Their slot
//!   names carry the value (`tz=pacific`).
//! * A person is a run of two or more capitalized words ("Pjfh Ksyjm") that are not a
//!   month, a day, a time zone or a sentence opener, or one capitalized word in the
//!   possessive ("Tomas's") or opening the sentence before a verb of holding a role
//!   ("Priya runs the on-call rotation").
//! * Paths are slotted by their folder (`path:spike`): two branches under `spike/` set
//!   the same slot, `src/` and `docs/` do not.

use super::words::{fold, has_phrase, words};

/// Slots that hold one value at a time (their names are `name=value`).
pub(super) const EXCLUSIVE: &[&str] = &["tz", "units", "tone"];

#[rustfmt::skip]
const CURRENCY_WORDS: &[&str] = &[
    "dollar", "dollars", "usd", "euro", "euros", "eur", "pound", "pounds", "gbp", "bucks",
    "cents", "yen", "jpy", "chf", "francs",
];

#[rustfmt::skip]
const MONTHS: &[&str] = &[
    "january", "february", "march", "april", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
];

#[rustfmt::skip]
const WEEKDAYS: &[&str] = &[
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
];

/// Time zones by the family a reader means: "PST", "PDT" and "Pacific Time" are one.
#[rustfmt::skip]
const ZONES: &[(&str, &str)] = &[
    ("utc", "utc"), ("gmt", "utc"), ("zulu", "utc"), ("pst", "pacific"), ("pdt", "pacific"),
    ("pt", "pacific"), ("est", "eastern"), ("edt", "eastern"), ("et", "eastern"),
    ("cst", "central"), ("cdt", "central"), ("mst", "mountain"), ("mdt", "mountain"),
    ("cet", "cet"), ("cest", "cet"), ("bst", "london"), ("ist", "india"), ("jst", "japan"),
    ("aest", "sydney"), ("aedt", "sydney"),
];

/// Zone names that need "time" (or "timezone") after them: "Pacific" alone is an ocean.
const ZONE_NAMES: &[&str] = &["pacific", "eastern", "central", "mountain", "local"];

/// Words for the tone of the answers, by the tone they ask for.
#[rustfmt::skip]
const TONES: &[(&str, &str)] = &[
    ("terse", "terse"), ("concise", "terse"), ("brief", "terse"), ("succinct", "terse"),
    ("verbose", "detailed"), ("detailed", "detailed"), ("thorough", "detailed"),
    ("playful", "playful"), ("casual", "playful"), ("warm", "playful"), ("friendly", "playful"),
    ("formal", "formal"), ("professional", "formal"),
];

/// What a tone word must stand near to be about the answers, not about code.
#[rustfmt::skip]
const TONE_OBJECTS: &[&str] = &[
    "answer", "answers", "reply", "replies", "response", "responses", "tone", "style",
    "writing", "messages", "explanations",
];

/// Verbs by which a person holds a role ("Priya runs the on-call rotation").
#[rustfmt::skip]
const ROLE_VERBS: &[&str] = &[
    "runs", "owns", "handles", "leads", "manages", "maintains", "approves", "reviews",
    "covers", "takes", "has", "is",
];

/// Capitalized words that open sentences or name things other than people.
#[rustfmt::skip]
const NOT_NAMES: &[&str] = &[
    "the", "a", "an", "we", "i", "you", "it", "this", "that", "these", "those", "please",
    "for", "new", "quick", "update", "keep", "put", "report", "use", "make", "set", "our",
    "my", "from", "and", "but", "or", "if", "when", "then", "so", "also", "now", "today",
    "time", "timezone", "standard", "daylight", "summer", "north", "south", "east", "west",
];

/// The slots `text` sets; `values` are its values (`values::values`).
pub(super) fn slots(text: &str, values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: String| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    let folded = fold(text);
    let ws = words(text);
    let has = |list: &[&str]| ws.iter().any(|w| list.contains(&w.as_str()));
    let digits = text.chars().any(|c| c.is_ascii_digit());

    if values.iter().any(|v| v.starts_with(['$', '€', '£', '¥'])) || has(CURRENCY_WORDS) {
        add("money".into());
    }
    let month_day = ws.windows(2).any(|p| {
        let day = |w: &str| {
            w.trim_end_matches(['s', 't', 'n', 'd', 'r', 'h'])
                .parse::<u8>()
                .is_ok_and(|d| (1..=31).contains(&d))
        };
        (MONTHS.contains(&p[0].as_str()) || p[0] == "may") && day(&p[1])
            || day(&p[0]) && MONTHS.contains(&p[1].as_str())
    });
    if month_day || has(WEEKDAYS) || has(&MONTHS[..11]) || values.iter().any(|v| is_date(v)) {
        add("date".into());
    }
    for s in exclusive_of(&ws) {
        add(s);
    }
    if names_a_person(text) {
        add("person".into());
    }
    if digits
        && [
            "rps",
            "qps",
            "rpm",
            "req/s",
            "requests per",
            "requests a ",
            "requests an ",
            "calls per",
            "calls a ",
            "per second",
            "per minute",
            "per hour",
            "a minute",
            "a second",
            "an hour",
        ]
        .iter()
        .any(|p| folded.contains(p) || has_phrase(&folded, p.trim()))
    {
        add("rate".into());
    }
    for v in values {
        if let Some(s) = value_slot(v) {
            add(s);
        }
    }
    if digits && has_phrase(&folded, "port") {
        add("port".into());
    }
    out
}

/// The exclusive slots `text` sets (`tz=…`, `units=…`, `tone=…`): the cheap part of
/// [`slots`], enough to tell whether a sentence without an update cue may replace anything.
pub(super) fn exclusive(text: &str) -> Vec<String> {
    exclusive_of(&words(text))
}

fn exclusive_of(ws: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let next = ws.get(i + 1).map(String::as_str);
        let zone = ZONES
            .iter()
            .find(|(z, _)| *z == w.as_str() && (w.len() > 2 || next == Some("time")))
            .map(|(_, family)| *family)
            .or_else(|| {
                (ZONE_NAMES.contains(&w.as_str()) && matches!(next, Some("time" | "timezone")))
                    .then_some(w.as_str())
            });
        if let Some(z) = zone {
            out.push(format!("tz={z}"));
        }
    }
    for system in ["metric", "imperial"] {
        if ws.iter().any(|w| w == system) {
            out.push(format!("units={system}"));
        }
    }
    if ws.iter().any(|w| TONE_OBJECTS.contains(&w.as_str())) {
        for (word, tone) in TONES {
            if ws.iter().any(|w| w == word) {
                out.push(format!("tone={tone}"));
            }
        }
    }
    out.dedup();
    out
}

/// Whether two slot lists set a common slot.
pub(super) fn share(a: &[String], b: &[String]) -> Option<String> {
    a.iter()
        .find(|s| b.iter().any(|t| t == *s || same_exclusive(s, t)))
        .map(|s| s.split('=').next().unwrap_or(s).to_string())
}

/// Two exclusive slots of one name (`tz=utc`, `tz=pacific`), whatever their values.
fn same_exclusive(a: &str, b: &str) -> bool {
    match (a.split_once('='), b.split_once('=')) {
        (Some((x, _)), Some((y, _))) => x == y,
        _ => false,
    }
}

/// An exclusive slot `new` sets to another value than `old` does: the name of the slot.
pub(super) fn conflict(new: &[String], old: &[String]) -> Option<String> {
    for n in new {
        let Some((name, value)) = n.split_once('=') else {
            continue;
        };
        if !EXCLUSIVE.contains(&name) {
            continue;
        }
        let olds: Vec<&str> = old
            .iter()
            .filter_map(|o| {
                o.split_once('=')
                    .filter(|(k, _)| *k == name)
                    .map(|(_, v)| v)
            })
            .collect();
        // Old states another value and not this one: it is set anew.
        if !olds.is_empty() && !olds.contains(&value) {
            return Some(name.to_string());
        }
    }
    None
}

fn is_date(v: &str) -> bool {
    let digits = v.chars().filter(char::is_ascii_digit).count();
    let dashes = v.chars().filter(|&c| c == '-' || c == '/').count();
    digits >= 3
        && dashes >= 1
        && v.chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == '/')
}

/// The slot a value sets by its shape alone.
fn value_slot(v: &str) -> Option<String> {
    if is_date(v) {
        return None; // found above
    }
    if let Some((dir, rest)) = v.split_once('/') {
        if !dir.is_empty() && !rest.is_empty() && !v.contains("://") && !dir.contains('.') {
            return Some(format!("path:{}", dir.to_lowercase()));
        }
    }
    if v.contains("://") || looks_like_host(v) {
        return Some("host".into());
    }
    let has_digit = v.chars().any(|c| c.is_ascii_digit());
    // `ABCDE-123`, `bolib-77`: codes, codenames, tickets.
    if has_digit
        && v.contains('-')
        && v.split('-')
            .all(|p| !p.is_empty() && p.chars().all(char::is_alphanumeric))
        && v.chars().any(char::is_alphabetic)
    {
        return Some("code".into());
    }
    let bare = v.strip_prefix(['v', 'V']).unwrap_or(v);
    if bare.contains('.')
        && bare.split('.').count() >= 2
        && bare
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    {
        return Some("version".into());
    }
    None
}

fn looks_like_host(v: &str) -> bool {
    let host = v.split(':').next().unwrap_or(v);
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && parts
            .last()
            .is_some_and(|t| t.chars().all(|c| c.is_ascii_alphabetic()) && t.len() >= 2)
        && !v.ends_with(".md")
        && !v.ends_with(".rs")
}

/// The words of `text` with what punctuation ends each (to find sentence starts).
fn tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '"'))
        .filter(|t| !t.is_empty())
        .collect()
}

fn bare(t: &str) -> &str {
    t.trim_end_matches(['.', '!', '?'])
}

fn possessive(t: &str) -> bool {
    let w = bare(t);
    w.ends_with("'s") || w.ends_with("\u{2019}s")
}

/// A capitalized word that may be (part of) a name.
fn titled(t: &str) -> bool {
    let w = bare(t);
    let w = w
        .strip_suffix("'s")
        .or_else(|| w.strip_suffix("\u{2019}s"))
        .unwrap_or(w);
    let mut cs = w.chars();
    let shaped = cs.next().is_some_and(char::is_uppercase)
        && w.chars().count() >= 2
        && cs.all(char::is_lowercase);
    let lower = w.to_lowercase();
    shaped
        && !NOT_NAMES.contains(&lower.as_str())
        && !MONTHS.contains(&lower.as_str())
        && !WEEKDAYS.contains(&lower.as_str())
        && !ZONE_NAMES.contains(&lower.as_str())
}

fn role_verb(t: Option<&&str>) -> bool {
    t.is_some_and(|n| ROLE_VERBS.contains(&bare(n).to_lowercase().as_str()))
}

/// Whether `text` names a person (see the module's decisions): a run of capitalized words
/// inside a sentence, or opening it before a verb ("Fese Hmazh is the approver"); a
/// possessive name inside a sentence ("Tomas's"); or a name opening the sentence and
/// holding a role ([`holds_a_role`]).
fn names_a_person(text: &str) -> bool {
    let toks = tokens(text);
    for (i, t) in toks.iter().enumerate() {
        if !titled(t) {
            continue;
        }
        let start = i == 0 || toks[i - 1].ends_with(['.', '!', '?']);
        let pair = !t.ends_with(['.', '!', '?']) && toks.get(i + 1).is_some_and(|n| titled(n));
        if pair && !start {
            return true;
        }
        if pair && start {
            let after = toks.get(i + 2);
            if role_verb(after) || after.is_some_and(|a| matches!(bare(a), "now" | "will" | "was"))
            {
                return true;
            }
        }
        if possessive(t) && !start {
            return true;
        }
    }
    holds_a_role(text)
}

/// Whether a sentence opens with a name that holds a role: "Priya runs the on-call
/// rotation", "Omar owns the pager" (not "Budget is a cap": the role verbs take an object
/// that is not an indefinite description, and `is`/`has` need a name of two words).
pub(super) fn holds_a_role(text: &str) -> bool {
    if text.trim_end().ends_with('?') {
        return false;
    }
    let toks = tokens(text);
    let Some(first) = toks.first() else {
        return false;
    };
    let verb = toks.get(1).map(|v| bare(v).to_lowercase());
    titled(first)
        && !first.ends_with(['.', '!', '?'])
        && verb
            .as_deref()
            .is_some_and(|v| ROLE_VERBS.contains(&v) && v != "is" && v != "has")
        && toks
            .get(2)
            .is_some_and(|o| !matches!(bare(o).to_lowercase().as_str(), "a" | "an"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::values::values;

    fn of(text: &str) -> Vec<String> {
        slots(text, &values(text))
    }

    #[test]
    fn money_in_figures_and_in_words() {
        assert!(of("Project budget cap is $800 total.").contains(&"money".into()));
        assert!(of("keep spend under five hundred dollars").contains(&"money".into()));
        assert!(!of("keep the spend low").contains(&"money".into()));
    }

    #[test]
    fn dates_in_every_spelling() {
        for t in [
            "The release is 2027-12-11.",
            "we now ship on June 6",
            "due by Friday",
            "ship on the 3rd of March",
        ] {
            assert!(of(t).contains(&"date".into()), "{t}");
        }
        assert!(!of("we may ship it").contains(&"date".into()));
    }

    #[test]
    fn time_zones_by_family_and_not_the_ocean() {
        assert_eq!(of("Put every timestamp in UTC."), ["tz=utc"]);
        assert!(of("show clocks in Pacific Time").contains(&"tz=pacific".into()));
        assert!(of("report in PST").contains(&"tz=pacific".into()));
        assert!(!of("we sail the Pacific")
            .iter()
            .any(|s| s.starts_with("tz")));
    }

    #[test]
    fn people_by_name() {
        for t in [
            "The on-call owner this week is Pjfh Ksyjm.",
            "Priya runs the on-call rotation.",
            "on-call is Tomas's now",
            "Support duty now belongs to Dyyq Vparr.",
        ] {
            assert!(of(t).contains(&"person".into()), "{t}");
        }
        for t in [
            "Budget is a cap.",
            "Put every timestamp in UTC.",
            "Release timing has changed.",
            "FACT: The project is X.",
        ] {
            assert!(!of(t).contains(&"person".into()), "{t}");
        }
    }

    #[test]
    fn a_name_opening_a_sentence_holds_a_role_only_before_a_role_verb() {
        assert!(holds_a_role("Priya runs the on-call rotation."));
        assert!(holds_a_role("Omar owns the pager this week."));
        assert!(!holds_a_role("Budget is a cap."));
        assert!(!holds_a_role("Priya runs the tests?"));
        assert!(!holds_a_role("Please runs a thing."));
    }

    #[test]
    fn shapes_of_values() {
        assert!(of("We rebased onto spike/xyzab-12.").contains(&"path:spike".into()));
        assert!(of("the code is nspcs-78").contains(&"code".into()));
        assert!(of("the API runs at api.internal.example:8443").contains(&"host".into()));
        assert!(of("at most 100 requests a minute").contains(&"rate".into()));
        assert!(of("raise the ceiling to 250 rps").contains(&"rate".into()));
    }

    #[test]
    fn exclusive_slots_conflict_only_on_another_value() {
        let utc = of("Put every timestamp in UTC.");
        let pacific = of("For status reports, show clocks in Pacific Time.");
        assert_eq!(conflict(&pacific, &utc).as_deref(), Some("tz"));
        assert_eq!(conflict(&utc, &utc), None);
        assert_eq!(conflict(&pacific, &of("use port 8080")), None);
        let style = of("Keep replies terse and use imperial measurements.");
        let new = of("Please make responses light and playful, and stick to metric measurements.");
        assert!(conflict(&new, &style).is_some());
    }
}
