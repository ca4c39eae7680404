//! E.164 phone numbers (hermes's `_SIGNAL_PHONE_RE`: `\+[1-9]\d{6,14}` not followed by
//! `[A-Za-z0-9]`).
//!
//! A scanner rather than a regex because of the look-ahead: Python's `\d` is any decimal
//! digit, and when the greedy run is followed by an ASCII alphanumeric the match gives back
//! digits until the next one is not: `+12345678٣x` still masks `+12345678` (before the
//! Arabic-Indic digit), while a run of 16 ASCII digits is not masked at all.

use super::classes::is_digit;
use super::mask;

/// Masks every phone number; `None` when there is none.
pub fn redact(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut pos = 0;
    while let Some(off) = memchr::memchr(b'+', &text.as_bytes()[pos..]) {
        let start = pos + off;
        pos = start + 1;
        let Some(len) = number_at(&text[start + 1..]) else {
            continue;
        };
        let end = start + 1 + len;
        out.push_str(&text[copied..start]);
        out.push_str(&mask::phone(&text[start..end]));
        copied = end;
        pos = end;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// The byte length of `[1-9]\d{6,14}(?![A-Za-z0-9])` at the start of `rest`.
fn number_at(rest: &str) -> Option<usize> {
    let first = rest.chars().next()?;
    if !('1'..='9').contains(&first) {
        return None;
    }
    let mut ends = Vec::with_capacity(14);
    let mut end = 1;
    for c in rest[1..].chars() {
        if ends.len() == 14 || !is_digit(c) {
            break;
        }
        end += c.len_utf8();
        ends.push(end);
    }
    for k in (6..=ends.len()).rev() {
        let at = ends[k - 1];
        if !rest[at..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            return Some(at);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact(s).unwrap_or_else(|| s.to_string())
    }

    // Expected values: hermes's redact_sensitive_text on the same strings.
    #[test]
    fn numbers_are_masked() {
        assert_eq!(r("call +14155552671 now"), "call +141****2671 now");
        assert_eq!(r("+4915123456789"), "+491****6789");
        assert_eq!(r("+1234567"), "+1****67");
    }

    #[test]
    fn near_misses_stay() {
        // Too short, leading zero, glued to letters, more than 15 digits.
        assert_eq!(
            r("+123456 +0123456789 +1234567abc"),
            "+123456 +0123456789 +1234567abc"
        );
        assert_eq!(r("+12345678901234567"), "+12345678901234567");
    }

    #[test]
    fn lookahead_gives_back_digits() {
        // 15 ASCII digits then a letter: every shorter cut ends before an ASCII digit.
        assert_eq!(r("+123456789012345x"), "+123456789012345x");
        // A non-ASCII digit is \d but not [A-Za-z0-9]: the cut before it holds.
        assert_eq!(r("+12345678٣x"), "+123****5678٣x");
    }
}
