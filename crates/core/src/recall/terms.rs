//! The terms recall searches by: words, and whole identifiers beside them.
//!
//! A run of letters, digits and the characters identifiers are made of (`_ . - / : @ # $ %
//! +`) is one *token*. Each token gives its words (runs of letters or digits, camelCase
//! split, lower case), and a token that is more than one plain word (a path, a dotted or
//! camel-case name, an error code, a number with its unit) is a term too, whole and lower
//! case, without the punctuation that ends a sentence. So `src/lex.ts` finds the entries
//! that name that file, and "lex" those that name anything lex.
//!
//! Decisions:
//! * Hand-written, one pass, no allocation per term: a caller reads each term from a
//!   reused buffer, with its byte range.
//! * Single letters are no word (they match everything); single digits are, since
//!   numbers are what people look for.

/// Characters that join the parts of an identifier.
fn joins(c: char) -> bool {
    matches!(c, '_' | '.' | '-' | '/' | ':' | '@' | '#' | '$' | '%' | '+')
}

fn in_token(c: char) -> bool {
    c.is_alphanumeric() || joins(c)
}

/// Calls `each(term, start, end)` for every term of `text`, in order; `term` is lower
/// case, `start..end` its bytes in `text`.
pub fn each_term(text: &str, mut each: impl FnMut(&str, usize, usize)) {
    let mut buf = String::new();
    each_raw_term(text, |raw, s, e| {
        buf.clear();
        buf.extend(raw.chars().flat_map(char::to_lowercase));
        each(&buf, s, e);
    });
}

/// [`each_term`] before lower-casing: `each(&text[start..end], start, end)`. For a
/// reader that can tell from the raw text that a term is of no interest to it.
pub fn each_raw_term(text: &str, mut each: impl FnMut(&str, usize, usize)) {
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if !in_token(c) {
            chars.next();
            continue;
        }
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if !in_token(c) {
                break;
            }
            end = i + c.len_utf8();
            chars.next();
        }
        token(&text[start..end], start, &mut each);
    }
}

/// The terms of one token at `offset`.
fn token(tok: &str, offset: usize, each: &mut impl FnMut(&str, usize, usize)) {
    // Sentence punctuation and leading sigils are not part of the name.
    let trimmed = tok.trim_end_matches(|c: char| joins(c) && c != '%' && c != '+');
    let lead = trimmed.len()
        - trimmed
            .trim_start_matches(['-', '/', ':', '.', '#', '@'])
            .len();
    let core = &trimmed[lead..];
    let at = offset + lead;
    let mut words = 0;
    let mut word_start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut flush = |from: usize, to: usize, words: &mut usize| {
        let w = &core[from..to];
        let single_letter = w.chars().count() == 1 && !w.starts_with(|c: char| c.is_numeric());
        if !single_letter {
            each(w, at + from, at + to);
        }
        *words += 1;
    };
    for (i, c) in core.char_indices() {
        let boundary = match (prev, c.is_alphanumeric()) {
            (_, false) => true,
            // camelCase: a capital after a lower-case letter starts a word; so does a
            // letter after a digit and a digit after a letter.
            (Some(p), true) => {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_alphabetic() && c.is_numeric())
                    || (p.is_numeric() && c.is_alphabetic())
            }
            (None, true) => false,
        };
        if boundary {
            if let Some(s) = word_start.take() {
                flush(s, i, &mut words);
            }
        }
        if c.is_alphanumeric() && word_start.is_none() {
            word_start = Some(i);
        }
        prev = Some(c);
    }
    if let Some(s) = word_start {
        flush(s, core.len(), &mut words);
    }
    if words > 1 {
        each(core, at, at + core.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distinct terms of `text`, in order of first appearance.
    fn distinct_terms(text: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        each_term(text, |t, _, _| {
            if !out.iter().any(|o| o == t) {
                out.push(t.to_string());
            }
        });
        out
    }

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_term(text, |t, s, e| {
            out.push(t.to_string());
            assert_eq!(text[s..e].to_lowercase(), t, "{t} at {s}..{e}");
        });
        out
    }

    #[test]
    fn words_and_whole_identifiers() {
        assert_eq!(
            all("Edit src/lex.ts now."),
            ["edit", "src", "lex", "ts", "src/lex.ts", "now"]
        );
        assert_eq!(
            all("parseHTTPHeader"),
            ["parse", "httpheader", "parsehttpheader"]
        );
        assert_eq!(
            all("E0425 at 500ms"),
            ["e", "0425", "e0425", "at", "500", "ms", "500ms"]
                .into_iter()
                .filter(|t| *t != "e")
                .collect::<Vec<_>>()
        );
        assert_eq!(all("a b 7"), ["7"]);
        assert_eq!(all("MAX_RETRIES=3"), ["max", "retries", "max_retries", "3"]);
        assert_eq!(all("(--dry-run)"), ["dry", "run", "dry-run"]);
    }

    #[test]
    fn non_ascii_text_keeps_its_offsets() {
        assert_eq!(all("Größe: 5 µs — naïve"), ["größe", "5", "µs", "naïve"]);
    }

    #[test]
    fn distinct_terms_keep_their_first_order() {
        assert_eq!(
            distinct_terms("lex lex Lex src/lex.ts"),
            ["lex", "src", "ts", "src/lex.ts"]
        );
    }
}
