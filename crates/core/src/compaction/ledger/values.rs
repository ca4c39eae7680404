//! Values: the exact strings of a statement that must survive a summary unchanged.
//!
//! A value is what a paraphrase must not lose or round: numbers with their unit or
//! currency (`$500`, `30 seconds`, `2GB`, `80%`), versions (`v1.2.3`, `0.73.1`), ports and
//! host:port pairs, URLs, e-mail addresses, paths and file names, identifiers
//! (`STRIPE_API_KEY`, `proj-4821`, `us-east-1`, `keepRecentTokens`, `E0308`), code spans
//! and short quoted strings, names (runs of capitalized words inside a sentence:
//! `Globex Corporation`), and any word right after a naming cue ("project acme-billing",
//! "called nimbus").
//!
//! Decisions:
//! * Values are found in the redacted text, so a secret can never become a value.
//! * A value is kept exactly as written (case and all): verification matches it
//!   case-sensitively, as identifiers demand.
//! * A bare number is a value even without a unit: "port 8080" must keep `8080`.
//! * Plain English stays out: hyphenated words (`read-only`), shouted words (`NEVER`) and
//!   the first word of a sentence (capitalized by grammar, not by being a name).
//! * At most [`MAX_VALUES`] per statement, in order of appearance: a pasted list of 40
//!   numbers is not 40 things to check.

use super::secrets::REDACTED;
use super::words::fold;

pub(super) const MAX_VALUES: usize = 8;

/// Words after a number that belong to it.
#[rustfmt::skip]
const UNITS: &[&str] = &[
    "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h",
    "hr", "hrs", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "year",
    "years", "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "bytes", "k", "m", "%",
    "percent", "tokens", "token", "chars", "characters", "lines", "line", "requests", "request",
    "req", "rps", "qps", "calls", "retries", "attempts", "items", "files", "users", "words",
    "px", "em", "rem", "pt", "cores", "cpus", "threads", "connections", "workers", "usd", "eur",
    "gbp", "chf", "jpy", "dollars", "euros", "pounds", "cents", "times", "x", "steps", "rounds",
    "replicas", "instances", "nodes", "pages", "columns", "rows", "spaces", "tabs", "digits",
];

/// Words after which the next word is a name, whatever it looks like.
#[rustfmt::skip]
const STRONG_CUES: &[&str] = &["named", "called", "codename", "codenamed", "aka"];

/// Words after which a lower-case hyphenated word is a name ("the project acme-billing"),
/// although `read-only` alone is not.
#[rustfmt::skip]
const NAMING_CUES: &[&str] = &[
    "project", "repo", "repository", "named", "called", "account", "bucket", "branch",
    "service", "database", "db", "namespace", "cluster", "org", "organization", "team",
    "channel", "host", "hostname", "server", "username", "user", "model", "package", "crate",
    "module", "table", "queue", "topic", "region", "tenant", "workspace", "env", "environment",
    "codename", "profile", "container", "image", "tag", "label", "schema", "index", "dataset",
];

#[rustfmt::skip]
const URL_SCHEMES: &[&str] = &[
    "http://", "https://", "ws://", "wss://", "ftp://", "file://", "postgres://",
    "postgresql://", "mysql://", "redis://", "mongodb://", "mongodb+srv://", "amqp://", "s3://",
    "gs://", "ssh://", "git://", "git@",
];

/// One value and the byte offset where it starts in the statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub start: usize,
    pub value: String,
}

/// The values of a statement, exact and de-duplicated, at most [`MAX_VALUES`].
pub(super) fn values(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in find(text) {
        if !out.contains(&f.value) {
            out.push(f.value);
        }
        if out.len() == MAX_VALUES {
            break;
        }
    }
    out
}

/// Every value occurrence, in order.
pub(super) fn find(text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let toks = tokens(text);
    let mut skip_until = 0;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        i += 1;
        if t.start < skip_until {
            continue;
        }
        if let Some(q) = t.quote {
            let limit = if q == '`' { 80 } else { 60 };
            if t.text.chars().count() <= limit && !t.text.contains(REDACTED) {
                out.push(Found {
                    start: t.start,
                    value: t.text.to_string(),
                });
            }
            continue;
        }
        // KEY=VALUE: both halves are looked at (`DB_HOST=db.internal`).
        let parts: Vec<(usize, &str)> = if is_url(t.text) {
            vec![(t.start, t.text)]
        } else {
            let mut v = Vec::new();
            let mut at = t.start;
            for p in t.text.split('=') {
                v.push((at, p));
                at += p.len() + 1;
            }
            v
        };
        for (start, part) in parts {
            let (lead, core) = trim_token(part);
            if core.is_empty() || core.contains(REDACTED) {
                continue;
            }
            let start = start + lead;
            if let Some(unit) = number_unit(core, toks.get(i)) {
                // "30 seconds": the unit is the next token.
                let end = toks[i].start + unit.len();
                out.push(Found {
                    start,
                    value: text[start..end].to_string(),
                });
                skip_until = end;
                i += 1;
                continue;
            }
            // Capitalized by grammar: the first word of a sentence, also of a second
            // sentence joined to a rule ("… total. Never exceed it.").
            let first_word = t.index == 0
                || toks[t.index - 1].quote.is_none()
                    && toks[t.index - 1].text.ends_with(['.', '!', '?', ':']);
            if is_value(core) || cued_name(&toks[..i - 1], core) {
                out.push(Found {
                    start,
                    value: core.to_string(),
                });
            } else if !first_word && is_capitalized(core) {
                // A run of capitalized words is one name: "Globex Corporation".
                let mut end_tok = i;
                while let Some(n) = toks.get(end_tok) {
                    let (_, c) = trim_token(n.text);
                    if n.quote.is_some()
                        || !is_capitalized(c)
                        || !follows_directly(text, &toks[end_tok - 1], n)
                    {
                        break;
                    }
                    end_tok += 1;
                }
                let last = &toks[end_tok - 1];
                let (lead_l, core_l) = trim_token(last.text);
                let end = last.start + lead_l + core_l.len();
                out.push(Found {
                    start,
                    value: text[start..end].to_string(),
                });
                i = end_tok;
            }
        }
    }
    out
}

struct Token<'a> {
    start: usize,
    text: &'a str,
    /// The quote or backtick a span was enclosed in; its text excludes them.
    quote: Option<char>,
    /// Position among the sentence's tokens.
    index: usize,
}

/// White-space separated tokens; a `` `code span` `` or a `"quoted string"` is one token.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let close = match c {
            '`' => Some('`'),
            '"' => Some('"'),
            '\u{201C}' => Some('\u{201D}'),
            _ => None,
        };
        if let Some(close) = close {
            let body = i + c.len_utf8();
            if let Some(len) = text[body..].find(close) {
                let index = out.len();
                out.push(Token {
                    start: body,
                    text: &text[body..body + len],
                    quote: Some(c),
                    index,
                });
                let end = body + len + close.len_utf8();
                while chars.peek().is_some_and(|&(j, _)| j < end) {
                    chars.next();
                }
                continue;
            }
        }
        let mut end = text.len();
        while let Some(&(j, c)) = chars.peek() {
            if c.is_whitespace() {
                end = j;
                break;
            }
            chars.next();
        }
        let index = out.len();
        out.push(Token {
            start: i,
            text: &text[i..end],
            quote: None,
            index,
        });
    }
    out
}

fn follows_directly(text: &str, prev: &Token<'_>, next: &Token<'_>) -> bool {
    let between = &text[prev.start + prev.text.len()..next.start];
    let (_, core) = trim_token(prev.text);
    // A name run stops at punctuation after the previous word ("Alice, Bob").
    between.chars().all(|c| c == ' ') && prev.text.ends_with(core)
}

/// Strips surrounding punctuation; returns the bytes cut from the front and the core.
fn trim_token(t: &str) -> (usize, &str) {
    let front = t.trim_start_matches(['(', '[', '{', '*', '_', '\'', '"', '<', '\u{201C}']);
    let lead = t.len() - front.len();
    let mut core = front.trim_end_matches([
        ')', ']', '}', ',', ';', '*', '\'', '"', '>', '!', '?', '\u{201D}',
    ]);
    // A sentence's final stop or colon, not a version's or a path's inner dots.
    while let Some(c) = core.strip_suffix(['.', ':']) {
        core = c.trim_end_matches([')', ']', '}', ',', ';', '*', '\'', '"']);
    }
    (lead, core)
}

fn is_url(t: &str) -> bool {
    let t = t.trim_start_matches(['(', '<', '[']);
    URL_SCHEMES.iter().any(|s| t.starts_with(s))
}

/// When `core` is a number and the next token is a unit, the unit's core text.
fn number_unit<'a>(core: &str, next: Option<&Token<'a>>) -> Option<&'a str> {
    let next = next.filter(|n| n.quote.is_none())?;
    let is_number = core
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || "$€£¥".contains(c))
        && core
            .chars()
            .all(|c| c.is_ascii_digit() || ".,_$€£¥".contains(c));
    if !is_number {
        return None;
    }
    let (lead, unit) = trim_token(next.text);
    (lead == 0 && UNITS.contains(&fold(unit).as_str())).then_some(unit)
}

/// The token shapes that are values on their own.
fn is_value(t: &str) -> bool {
    let lower = t.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "e.g" | "i.e" | "etc" | "vs" | "and/or" | "w/o"
    ) {
        return false;
    }
    let has_digit = t.chars().any(|c| c.is_ascii_digit());
    let has_alpha = t.chars().any(char::is_alphabetic);
    let first = t.chars().next().unwrap_or(' ');
    // Numbers, money, versions, dates, times, IPs, sizes: "8080", "$500", "v1.2", "2GB".
    if first.is_ascii_digit() || ("$€£¥".contains(first) && has_digit) {
        return true;
    }
    if (first == 'v' || first == 'V') && t[1..].chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return true;
    }
    if is_url(t) || (t.contains('@') && t.contains('.') && !t.starts_with('@')) {
        return true;
    }
    if t.contains('/') || t.contains('\\') {
        return is_path(t);
    }
    // A file or host name: "config.toml", "api.example.com", "db.internal:5432".
    if let Some((stem, ext)) = t.split_once('.') {
        let ext = ext.split(':').next().unwrap_or("");
        if !stem.is_empty()
            && !ext.is_empty()
            && ext.chars().next().is_some_and(char::is_alphanumeric)
            && t.chars()
                .all(|c| c.is_alphanumeric() || "._-:@+".contains(c))
        {
            return true;
        }
    }
    // host:port
    if let Some((host, port)) = t.split_once(':') {
        if !host.is_empty() && !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) {
            return true;
        }
    }
    let ident = t
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    if !ident || !has_alpha {
        return false;
    }
    // Letters and digits mixed ("E0308", "sha256"), snake or kebab case with a digit or a
    // capital ("us-east-1", "STRIPE_API_KEY"), internal capitals ("keepRecentTokens").
    let inner = &t[first.len_utf8()..];
    has_digit
        || t.contains('_') && t.len() > 2
        || (t.contains('-') && t.chars().any(|c| c.is_uppercase()))
        || (first.is_lowercase() && inner.chars().any(char::is_uppercase))
        || (first.is_uppercase()
            && inner.chars().any(char::is_uppercase)
            && inner.chars().any(char::is_lowercase))
}

fn is_path(t: &str) -> bool {
    if !t
        .chars()
        .all(|c| c.is_alphanumeric() || "._-/~@+:\\*".contains(c))
    {
        return false;
    }
    let slashes = t.matches(['/', '\\']).count();
    t.starts_with(['/', '~', '.'])
        || t.ends_with('/')
        || slashes >= 2
        || t.chars()
            .any(|c| c.is_ascii_digit() || c == '_' || c == '.' || c == '-')
}

/// The cue strength of the two tokens before a word: 2 strong, 1 naming, 0 none.
fn cue(before: &[Token<'_>]) -> u8 {
    let mut best = 0;
    for p in before.iter().rev().take(2).filter(|p| p.quote.is_none()) {
        let t = trim_token(p.text).1;
        // The cues are ASCII: an ASCII token matches one as its folded form would, without
        // folding it (a copy per token); others fold.
        let is = |list: &[&str]| {
            if t.is_ascii() {
                list.iter().any(|c| c.eq_ignore_ascii_case(t))
            } else {
                list.contains(&fold(t).as_str())
            }
        };
        if is(STRONG_CUES) {
            best = best.max(2);
        } else if is(NAMING_CUES) {
            best = best.max(1);
        }
    }
    best
}

/// A word right after a naming cue is a name unless it is plain English glue.
fn cued_name(before: &[Token<'_>], t: &str) -> bool {
    // The cue first: most tokens have none, and the word tests cost more.
    let cue = cue(before);
    if cue == 0 || (cue == 1 && !t.contains('-')) {
        return false;
    }
    let lower = fold(t);
    t.chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && t.chars().any(char::is_alphabetic)
        && !super::words::is_stopword(&lower)
        && !STRONG_CUES.contains(&lower.as_str())
        && !NAMING_CUES.contains(&lower.as_str())
}

fn is_capitalized(t: &str) -> bool {
    let mut chars = t.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let rest: Vec<char> = chars.collect();
    first.is_uppercase()
        && !rest.is_empty()
        && rest
            .iter()
            .all(|c| c.is_alphanumeric() || *c == '\'' || *c == '-')
        && rest.iter().any(|c| c.is_lowercase())
        && !matches!(t, "I'm" | "I'd" | "I'll" | "I've")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        values(s)
    }

    #[test]
    fn money_keeps_its_currency() {
        assert_eq!(v("Budget cap is $500 total."), ["$500"]);
        assert_eq!(v("Spend at most €1,200.50 per month"), ["€1,200.50"]);
    }

    #[test]
    fn numbers_keep_their_unit() {
        assert_eq!(
            v("Timeouts are 30 seconds and 2GB of memory."),
            ["30 seconds", "2GB"]
        );
        assert_eq!(v("Keep it under 80%."), ["80%"]);
        assert_eq!(
            v("Do not exceed 100 requests per minute."),
            ["100 requests"]
        );
    }

    #[test]
    fn bare_numbers_and_ports_are_values() {
        assert_eq!(v("use port 8080"), ["8080"]);
        assert_eq!(v("The API listens on localhost:9090."), ["localhost:9090"]);
    }

    #[test]
    fn versions_urls_hosts_and_emails_are_values() {
        assert_eq!(
            v("Pin pi to 0.73.1 and rust v1.85, see https://example.com/a?b=1."),
            ["0.73.1", "v1.85", "https://example.com/a?b=1"]
        );
        assert_eq!(
            v("Mail ops@acme.io about db.internal:5432"),
            ["ops@acme.io", "db.internal:5432"]
        );
    }

    #[test]
    fn paths_and_file_names_are_values_but_and_or_is_not() {
        assert_eq!(
            v("Never edit src/session/text.rs or Cargo.lock and/or ../vendor/"),
            ["src/session/text.rs", "Cargo.lock", "../vendor/"]
        );
    }

    #[test]
    fn identifiers_are_values_plain_words_are_not() {
        assert_eq!(
            v("Set keepRecentTokens for proj-4821 in us-east-1 via STRIPE_API_KEY, read-only, NEVER."),
            ["keepRecentTokens", "proj-4821", "us-east-1", "STRIPE_API_KEY"]
        );
    }

    #[test]
    fn code_spans_and_quoted_strings_are_values() {
        assert_eq!(
            v("Run `cargo test --lib` in the \"Blue Falcon\" repo."),
            ["cargo test --lib", "Blue Falcon"]
        );
    }

    #[test]
    fn capitalized_runs_inside_a_sentence_are_names() {
        assert_eq!(
            v("Our client is Globex Corporation, not Initech."),
            ["Globex Corporation", "Initech"]
        );
        assert_eq!(v("Never deploy on Fridays."), ["Fridays"]);
        assert!(v("Never push to main.").is_empty());
    }

    #[test]
    fn a_word_after_a_naming_cue_is_a_name() {
        assert_eq!(v("The project is called nimbus."), ["nimbus"]);
        assert_eq!(
            v("The project is acme-billing, read-only."),
            ["acme-billing"]
        );
        assert!(v("Never drop the database tables").is_empty());
    }

    #[test]
    fn key_value_pairs_give_both_halves() {
        assert_eq!(v("DB_HOST=db.internal"), ["DB_HOST", "db.internal"]);
    }

    #[test]
    fn redacted_secrets_are_never_values_but_names_are() {
        assert_eq!(v("STRIPE_API_KEY=[REDACTED]"), ["STRIPE_API_KEY"]);
        assert_eq!(v("Bearer [REDACTED]"), Vec::<String>::new());
    }

    #[test]
    fn values_start_where_they_appear() {
        let f = find("Budget cap is $500 total.");
        assert_eq!(
            f,
            [Found {
                start: 14,
                value: "$500".into()
            }]
        );
    }
}
