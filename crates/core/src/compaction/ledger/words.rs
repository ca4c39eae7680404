//! Sentences and words: the small text toolkit the ledger's heuristics share.
//!
//! Decisions:
//! * A sentence ends at `.`, `!` or `?` followed by white space (so `$1.50`, `v1.2.3`,
//!   `config.toml` and `example.com` stay whole), and at every line break: chat
//!   messages are rarely hard-wrapped, and a list item is a statement of its own.
//! * Fenced code blocks (```` ``` ````) are not prose: no sentence comes from them, so a
//!   pasted log or source file never yields a "rule" because it contains `must`.
//! * Sentences are slices of the input, so what gets pinned is verbatim (list markers
//!   such as `- `, `1. ` and `> ` are trimmed off the front).
//! * Words for comparison are lower-cased and lightly stemmed (plural `s`, `ing`, `ed`)
//!   by one function used on both sides of every comparison.

use std::collections::BTreeSet;

/// Abbreviations whose final `.` does not end a sentence.
#[rustfmt::skip]
const ABBREVIATIONS: &[&str] = &["e.g", "i.e", "etc", "vs", "mr", "mrs", "dr", "cf", "approx"];

/// Words that carry no subject: function words, chat filler and the trigger words of
/// rules (the trigger says *how*, not *what*), so "Always use tabs" and "Never use tabs"
/// share the subject `tab`.
#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "always", "am", "an", "and", "any",
    "are", "aren't", "as", "at", "avoid", "be", "been", "before", "being", "below", "both",
    "but", "by", "can", "can't", "cannot", "could", "did", "do", "does", "doesn't", "don't",
    "done", "dont", "each", "either", "ensure", "even", "ever", "every", "for", "from", "had",
    "has", "have", "he", "her", "here", "his", "how", "i", "i'd", "i'll", "i'm", "if", "in",
    "into", "is", "isn't", "it", "it's", "its", "just", "let", "let's", "lets", "like", "make",
    "may", "me", "might", "more", "most", "must", "mustn't", "my", "need", "never", "no", "not",
    "now", "of", "ok", "okay", "on", "only", "onto", "or", "other", "our", "out", "over",
    "please", "prefer", "rather", "really", "same", "shall", "she", "should", "shouldn't", "so",
    "some", "still", "such", "sure", "than", "that", "that's", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "up", "us",
    "use", "used", "using", "very", "want", "was", "we", "we'll", "we're", "were", "what",
    "when", "where", "which", "while", "who", "why", "will", "with", "won't", "would", "yes",
    "you", "you're", "your",
];

/// Collapses every run of white space to one space and trims the ends.
pub(super) fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Lower-cases and folds typographic apostrophes, so triggers match one spelling.
pub(super) fn fold(s: &str) -> String {
    // One copy where two would do the same: ASCII lowercases byte by byte, and the
    // quotes are replaced only where there are some.
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    let lower = s.to_lowercase();
    if lower.contains(['\u{2019}', '\u{2018}']) {
        lower.replace(['\u{2019}', '\u{2018}'], "'")
    } else {
        lower
    }
}

/// The sentences of a text, in order, outside fenced code blocks and pasted machine
/// output (see [`is_machine_line`]; a paragraph that is mostly machine output is
/// skipped whole, so the prose lines inside a pasted log go too).
pub(super) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut paragraph: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            flush_paragraph(&mut paragraph, &mut out);
            continue;
        }
        if in_fence {
            continue;
        }
        if line.trim().is_empty() {
            flush_paragraph(&mut paragraph, &mut out);
        } else {
            paragraph.push(line);
        }
    }
    flush_paragraph(&mut paragraph, &mut out);
    out
}

fn flush_paragraph<'a>(paragraph: &mut Vec<&'a str>, out: &mut Vec<&'a str>) {
    let machine = paragraph.iter().filter(|l| is_machine_line(l)).count();
    if machine * 2 < paragraph.len() || paragraph.len() == 1 {
        for line in paragraph.iter().filter(|l| !is_machine_line(l)) {
            split_line(strip_marker(line.trim()), out);
        }
    }
    paragraph.clear();
}

/// A line of pasted machine output rather than prose: a stack frame, a shell prompt, a
/// log or error line, JSON, escaped text, or a line with fewer letters than other
/// characters.
pub(super) fn is_machine_line(line: &str) -> bool {
    let t = line.trim();
    let starts = |ps: &[&str]| ps.iter().any(|p| t.starts_with(p));
    if starts(&[
        "➜",
        "❯",
        "$ ",
        "% ",
        ">>> ",
        "npm ERR",
        "Traceback",
        "File \"",
    ]) {
        return true;
    }
    // A line-numbered listing ("132       x = 1", "8 - **Fix**", "+314 - Tips").
    let numbered = t.trim_start_matches('+').trim_start();
    let digits = numbered.bytes().take_while(u8::is_ascii_digit).count();
    let after = &numbered[digits..];
    if digits > 0
        && (after.starts_with("  ") || after.starts_with(" - ") || after.starts_with('\t'))
    {
        return true;
    }
    // A stack frame: "at fn (file.js:12:5)", also opening an error's fields ("… {").
    if t.starts_with("at ")
        && t.contains(':')
        && t.trim_end_matches([' ', '{'])
            .ends_with(|c: char| c == ')' || c.is_ascii_digit())
    {
        return true;
    }
    // Only brackets and punctuation: the "}" closing a pasted object.
    if !t.chars().any(char::is_alphanumeric) {
        return true;
    }
    if is_object_field(t) {
        return true;
    }
    if starts(&[
        "Error:",
        "error:",
        "error[",
        "Error [",
        "warning:",
        "TypeError",
        "SyntaxError",
    ]) {
        return true;
    }
    if t.contains("{\"") || t.contains("\\\"") || t.contains("\\n") || t.contains("\":") {
        return true;
    }
    // "[theme] Detected …", "[INFO] …": a log prefix.
    if t.starts_with('[') && t.find(']').is_some_and(|i| i > 1 && !t[1..i].contains(' ')) {
        return true;
    }
    let letters = t.chars().filter(|c| c.is_alphabetic()).count();
    let others = t
        .chars()
        .filter(|c| !c.is_alphabetic() && !c.is_whitespace())
        .count();
    t.chars().count() >= 12 && letters < others
}

/// A field of a printed object (`errno: -2,`, `path: '/srv/app/package.json'`): an
/// identifier, a colon, and a value that ends in a comma or is one quoted literal.
fn is_object_field(t: &str) -> bool {
    let Some((key, value)) = t.split_once(": ") else {
        return false;
    };
    let identifier = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    let value = value.trim();
    let quoted = value.len() >= 2
        && ['\'', '"', '`']
            .iter()
            .any(|&q| value.starts_with(q) && value.ends_with(q));
    identifier && (value.ends_with(',') || quoted)
}

/// Removes a list or quote marker: `- `, `* `, `+ `, `> `, `1. `, `1) `.
fn strip_marker(line: &str) -> &str {
    let mut s = line;
    loop {
        let before = s;
        for m in ["- ", "* ", "+ ", "> ", "• "] {
            if let Some(rest) = s.strip_prefix(m) {
                s = rest.trim_start();
            }
        }
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && digits <= 3 {
            let rest = &s[digits..];
            if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
                s = r.trim_start();
            }
        }
        if s == before {
            return s;
        }
    }
}

fn split_line<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    let bytes = line.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if matches!(b, b'.' | b'!' | b'?') {
            let mut j = i;
            while j + 1 < bytes.len() && matches!(bytes[j + 1], b'.' | b'!' | b'?') {
                j += 1;
            }
            let at_end = j + 1 >= bytes.len();
            let before_space = !at_end && bytes[j + 1].is_ascii_whitespace();
            if (at_end || before_space) && !(b == b'.' && j == i && is_abbreviation(&line[..i])) {
                push_trimmed(&line[start..=j], out);
                start = j + 1;
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    push_trimmed(&line[start..], out);
}

fn is_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_lowercase();
    ABBREVIATIONS.contains(&word.as_str())
}

fn push_trimmed<'a>(s: &'a str, out: &mut Vec<&'a str>) {
    let s = s.trim();
    if s.chars().any(char::is_alphanumeric) {
        out.push(s);
    }
}

/// Lower-case words: runs of letters, digits, `'`, `_` and `-`, with `'` and `-`
/// trimmed from their ends.
pub(super) fn words(s: &str) -> Vec<String> {
    fold(s)
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

pub(super) fn is_stopword(w: &str) -> bool {
    static SET: std::sync::LazyLock<std::collections::HashSet<&'static str>> =
        std::sync::LazyLock::new(|| STOPWORDS.iter().copied().collect());
    SET.contains(w)
}

/// A light, deterministic stem: the same word in its plural, `-ing` and `-ed` forms
/// compares equal ("limits"/"limit", "pushing"/"push"). Not linguistics, only a key.
pub(super) fn stem(w: &str) -> String {
    let w = w.strip_suffix("'s").unwrap_or(w);
    let n = w.chars().count();
    if n > 5 {
        if let Some(s) = w.strip_suffix("ies") {
            return format!("{s}y");
        }
        for suffix in ["ing", "ed"] {
            if let Some(s) = w.strip_suffix(suffix) {
                return s.to_string();
            }
        }
    }
    if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

/// Stemmed words that say what a text is about: not stop words, not numbers.
pub(super) fn content_words(s: &str) -> BTreeSet<String> {
    words(s)
        .into_iter()
        .filter(|w| !is_stopword(w) && !w.chars().any(|c| c.is_ascii_digit()))
        .map(|w| stem(&w))
        .collect()
}

/// Distinctive words: stemmed content words of at least four characters, or with a
/// digit in them; hyphenated words count by their parts ("force-push" → force, push).
/// The yardstick for items without values (see `verify`).
pub(super) fn distinctive_words(s: &str) -> BTreeSet<String> {
    words(s)
        .iter()
        .flat_map(|w| w.split('-'))
        .filter(|w| !is_stopword(w))
        .filter(|w| w.chars().count() >= 4 || w.chars().any(|c| c.is_ascii_digit()))
        .map(stem)
        .collect()
}

/// Every stemmed word of a text, and the parts of hyphenated ones, for looking
/// distinctive words up.
pub(super) fn word_set(s: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for w in words(s) {
        if w.contains('-') {
            out.extend(w.split('-').filter(|p| !p.is_empty()).map(stem));
        }
        out.insert(stem(&w));
    }
    out
}

/// |a ∩ b| / |a ∪ b|; 0 when both are empty.
pub(super) fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Whether `phrase` (lower case, whole words) occurs in `folded` (lower case).
pub(super) fn has_phrase(folded: &str, phrase: &str) -> bool {
    phrase_positions(folded, phrase).next().is_some()
}

/// Byte offsets in `folded` where `phrase` starts and ends on word boundaries.
pub(super) fn phrase_positions<'a>(
    folded: &'a str,
    phrase: &'a str,
) -> impl Iterator<Item = usize> + 'a {
    matches(folded, phrase).filter(move |&i| {
        let before = folded[..i].chars().next_back();
        let after = folded[i + phrase.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let edge_ok = |c: Option<char>, edge: Option<char>| !(word(c) && word(edge));
        edge_ok(before, phrase.chars().next()) && edge_ok(after, phrase.chars().next_back())
    })
}

/// Where `needle` starts in `hay`, without overlaps, as `str::match_indices` finds them.
/// The phrases are short and the texts sentences: finding the first byte and comparing
/// costs less than the two-way searcher `match_indices` sets up on every call.
fn matches<'a>(hay: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let first = n.first().copied();
    let mut next = 0;
    // An empty needle matches at every character boundary (never asked for, kept exact).
    let empty = n.is_empty().then(|| hay.match_indices("").map(|(i, _)| i));
    empty.into_iter().flatten().chain(
        first
            .into_iter()
            .flat_map(move |b| memchr::memchr_iter(b, h))
            .filter(move |&i| {
                // A match starting inside the previous one is skipped, as match_indices does;
                // a match starts on a character boundary since the needle is UTF-8.
                let hit = i >= next && h[i..].starts_with(n);
                if hit {
                    next = i + n.len();
                }
                hit
            }),
    )
}

/// Cuts `s` to at most `max` characters on a character boundary, marking the cut.
pub(super) fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((i, _)) => format!("{} …", s[..i].trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_finds_what_match_indices_finds() {
        let cases = [
            ("go go go go", "go go"),
            ("aaaa", "aa"),
            ("never push to main, never!", "never"),
            ("naïve café ça", "ça"),
            ("x", "xy"),
            ("", "a"),
            ("abc", ""),
            ("é", ""),
        ];
        for (hay, needle) in cases {
            let want: Vec<usize> = hay.match_indices(needle).map(|(i, _)| i).collect();
            assert_eq!(
                matches(hay, needle).collect::<Vec<_>>(),
                want,
                "{hay:?} {needle:?}"
            );
        }
    }

    #[test]
    fn sentences_end_at_stops_followed_by_space_not_inside_values() {
        let s =
            sentences("Budget cap is $1.50 total. Never exceed it! Use v1.2.3 from config.toml");
        assert_eq!(
            s,
            [
                "Budget cap is $1.50 total.",
                "Never exceed it!",
                "Use v1.2.3 from config.toml"
            ]
        );
    }

    #[test]
    fn every_line_is_a_sentence_and_list_markers_are_trimmed() {
        let s = sentences("Rules:\n- never push to main\n2. always run tests\n> quoted");
        assert_eq!(
            s,
            ["Rules:", "never push to main", "always run tests", "quoted"]
        );
    }

    #[test]
    fn fenced_code_yields_no_sentences() {
        let s = sentences("Look:\n```\nyou must not see this\n```\nDone.");
        assert_eq!(s, ["Look:", "Done."]);
    }

    #[test]
    fn a_pasted_error_object_yields_no_sentences() {
        let text = "Error: ENOENT: no such file or directory, open '/srv/app/package.json'\n    at readFileSync (node:fs:443:20)\n    at async run (node:internal/main:98:5) {\n  errno: -2,\n  code: 'ENOENT',\n  syscall: 'open',\n  path: '/srv/app/package.json'\n}";
        assert!(sentences(text).is_empty(), "{:?}", sentences(text));
        // Prose with a colon stays prose.
        assert!(!is_machine_line("Note: the port is 8080 from now on"));
    }

    #[test]
    fn pasted_machine_output_yields_no_sentences() {
        let text = "Why does this fail?\n\
                    Error: ENOENT: no such file\n\
                    at readFileSync (node:fs:443:20)\n\
                    path: '/x/package.json'\n\
                    \n\
                    [theme] Detected truecolor mode\n\
                    ➜  pi-mono git:(main) npx tsx cli.ts\n\
                    {\"type\":\"message\"}\n\
                    \n\
                    Please fix it. Use at least 3 retries.";
        assert_eq!(
            sentences(text),
            ["Please fix it.", "Use at least 3 retries."]
        );
    }

    #[test]
    fn a_prose_paragraph_keeps_its_prose_lines() {
        let text =
            "Fix this.\nIt fails with code 2.\nSee the log.\nError: boom\n132     let x = 1;";
        assert_eq!(
            sentences(text),
            ["Fix this.", "It fails with code 2.", "See the log."]
        );
    }

    #[test]
    fn abbreviations_do_not_end_sentences() {
        assert_eq!(
            sentences("Use a tool, e.g. ripgrep. Fine."),
            ["Use a tool, e.g. ripgrep.", "Fine."]
        );
    }

    #[test]
    fn stems_make_inflections_compare_equal() {
        assert_eq!(stem("limits"), stem("limit"));
        assert_eq!(stem("pushing"), "push");
        assert_eq!(stem("retries"), "retry");
        assert_eq!(stem("class"), "class");
    }

    #[test]
    fn content_words_drop_triggers_and_function_words() {
        let a = content_words("Always use tabs.");
        let b = content_words("Never use tabs!");
        assert_eq!(a, b);
        assert_eq!(a.into_iter().collect::<Vec<_>>(), ["tab"]);
    }

    #[test]
    fn phrases_match_on_word_boundaries_only() {
        assert!(has_phrase("please never push", "never"));
        assert!(!has_phrase("nevermore", "never"));
        assert!(has_phrase("don't do that", "don't"));
    }

    #[test]
    fn clip_cuts_on_a_character_boundary() {
        assert_eq!(clip("ééééé", 3), "ééé …");
        assert_eq!(clip("short", 10), "short");
    }
}
