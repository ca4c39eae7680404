//! JSON string values kept as they appeared in the input.
//!
//! Session files are mostly long strings (tool output, file contents). Decoding them
//! eagerly would copy the whole session; instead a [`Text`] borrows the escaped JSON
//! text and answers the questions the core asks (UTF-16 length, emptiness, a prefix)
//! without allocating, decoding only when a caller needs the characters.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::json::string::{push_prefix, unescape_into, unescape_prefix_into};
/// Kept here too: JavaScript string lengths are what callers of `Text` count in.
pub use crate::json::utf16_len;

/// A JSON string: either still escaped (borrowed from the input) or already plain.
#[derive(Clone, PartialEq, Eq)]
pub enum Text<'a> {
    /// The characters between the quotes of a JSON string literal that contains escapes.
    Escaped(&'a str),
    /// Text that needs no unescaping.
    Plain(Cow<'a, str>),
}

impl Default for Text<'_> {
    fn default() -> Self {
        Text::Plain(Cow::Borrowed(""))
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.decode(), f)
    }
}

impl<'a> Text<'a> {
    pub fn plain(s: impl Into<Cow<'a, str>>) -> Self {
        Text::Plain(s.into())
    }

    /// Builds a `Text` from a raw JSON value that must be a string literal.
    pub fn from_raw(raw: &'a str) -> Option<Self> {
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        Some(if memchr::memchr(b'\\', inner.as_bytes()).is_some() {
            Text::Escaped(inner)
        } else {
            Text::Plain(Cow::Borrowed(inner))
        })
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Text::Escaped(s) => s.is_empty(),
            Text::Plain(s) => s.is_empty(),
        }
    }

    /// Length in bytes as held (escaped or not): never less than the UTF-16 length
    /// (an escape is at least two bytes for one unit, a character at least as many
    /// bytes as units), so a cheap bound before counting.
    pub fn byte_len(&self) -> usize {
        match self {
            Text::Escaped(s) => s.len(),
            Text::Plain(s) => s.len(),
        }
    }

    /// Length in UTF-16 code units, as JavaScript's `String.length` reports it.
    pub fn utf16_len(&self) -> usize {
        match self {
            Text::Plain(s) => utf16_len(s),
            Text::Escaped(s) => escaped_units(s),
        }
    }

    /// The decoded characters. A lone surrogate escape (valid JSON, not valid Unicode)
    /// becomes U+FFFD.
    pub fn decode(&self) -> Cow<'a, str> {
        match self {
            Text::Plain(s) => s.clone(),
            Text::Escaped(s) => {
                let mut out = String::with_capacity(s.len());
                unescape_into(s, &mut out);
                Cow::Owned(out)
            }
        }
    }

    /// Appends the decoded text to `out`.
    pub fn push_to(&self, out: &mut String) {
        match self {
            Text::Plain(s) => out.push_str(s),
            Text::Escaped(s) => unescape_into(s, out),
        }
    }

    /// Appends at most `max_units` UTF-16 units of the decoded text, never splitting a
    /// surrogate pair (a character that would straddle the limit is left out).
    /// Returns the number of units appended.
    pub fn push_prefix_to(&self, out: &mut String, max_units: usize) -> usize {
        match self {
            Text::Plain(s) => push_prefix(s, out, max_units),
            Text::Escaped(s) => unescape_prefix_into(s, out, max_units),
        }
    }
}

/// UTF-16 length of the string an escaped literal body decodes to (as
/// `json::string::escaped_utf16_len`): the body counted as if unescaped (escapes are
/// ASCII, a unit per byte), less what each escape saves (every escape is one unit,
/// `\uXXXX` included: a surrogate pair is two escapes). Backslashes are found eight
/// bytes at a time in a word, not by a `memchr` call per escape: long tool results
/// have an escape every few dozen bytes, and the call cost more than the search; a
/// run that goes on (four words) is left to `memchr`.
fn escaped_units(body: &str) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let b = body.as_bytes();
    let mut saved = 0;
    let mut i = 0;
    // Words in a row without a backslash.
    let mut clean = 0;
    while i < b.len() {
        if let Some(word) = b.get(i..i + 8) {
            let x = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ (ONES * b'\\' as u64);
            // The lowest set high bit marks the first zero byte (the first backslash)
            // exactly; bits above it may be false, and are not looked at.
            let zero = x.wrapping_sub(ONES) & !x & (ONES << 7);
            if zero == 0 {
                i += 8;
                clean += 1;
                // A long run without escapes: memchr's wide loads from here.
                if clean == 4 {
                    clean = 0;
                    match memchr::memchr(b'\\', &b[i..]) {
                        Some(k) => i += k,
                        None => break,
                    }
                }
                continue;
            }
            i += zero.trailing_zeros() as usize / 8;
        } else if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let len = if b.get(i + 1) == Some(&b'u') { 6 } else { 2 };
        saved += len - 1;
        i += len;
        clean = 0;
    }
    utf16_len(body).saturating_sub(saved)
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(deserializer)?;
        Text::from_raw(raw.get())
            .ok_or_else(|| de::Error::invalid_type(unexpected_of(raw.get()), &"a string"))
    }
}

/// Describes a raw JSON value for a serde "invalid type" error.
pub(crate) fn unexpected_of(raw: &str) -> de::Unexpected<'static> {
    match raw.as_bytes().first() {
        Some(b'{') => de::Unexpected::Map,
        Some(b'[') => de::Unexpected::Seq,
        Some(b't') => de::Unexpected::Bool(true),
        Some(b'f') => de::Unexpected::Bool(false),
        Some(b'n') => de::Unexpected::Unit,
        Some(b'"') => de::Unexpected::Other("string"),
        _ => de::Unexpected::Other("number"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Text<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn utf16_lengths_match_javascript() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("𝒳a"), 3);
        assert_eq!(parse(r#""a\nb""#).utf16_len(), 3);
        assert_eq!(parse(r#""\ud83d\ude00""#).utf16_len(), 2);
        assert_eq!(parse(r#""\ud800x""#).utf16_len(), 2);
        assert_eq!(parse(r#""é\"\\\/""#).utf16_len(), 4);
    }

    #[test]
    fn escaped_lengths_count_as_the_memchr_count_at_every_offset() {
        let pieces = [
            r"\n",
            r#"\""#,
            r"\\",
            r"\\u",
            r"\/",
            r"\u00e9",
            r"\ud83d\ude00",
            r"\ud800",
            "é",
            "😀",
            "a",
            "bcdefgh",
            r"\\\\n",
            "a run of text without a single escape in it, longer than four words",
        ];
        let mut rng = fastrand::Rng::with_seed(1616);
        for len in 0..300 {
            let body: String = (0..len)
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect();
            // Every start: the words fall at every offset of the escapes.
            for start in 0..body.len().min(9) {
                let Some(body) = body.get(start..) else {
                    continue;
                };
                let want = crate::json::string::escaped_utf16_len(body);
                assert_eq!(escaped_units(body), want, "{body:?}");
            }
        }
    }

    #[test]
    fn byte_lengths_bound_utf16_lengths() {
        for json in [
            r#""a\nb""#,
            r#""\ud83d\ude00""#,
            r#""😀é""#,
            r#""\u00e9""#,
            r#""""#,
        ] {
            let t = parse(json);
            assert!(t.byte_len() >= t.utf16_len(), "{json}");
        }
    }

    #[test]
    fn decoding_handles_escapes_and_lone_surrogates() {
        assert_eq!(parse(r#""a\nb\u00e9\ud83d\ude00""#).decode(), "a\nbé😀");
        assert_eq!(parse(r#""\ud800x""#).decode(), "\u{FFFD}x");
        assert_eq!(parse(r#""\/""#).decode(), "/");
    }

    #[test]
    fn prefixes_continue_past_runs_longer_in_bytes_than_the_budget() {
        let mut out = String::new();
        assert_eq!(parse(r#""éééé\nbc""#).push_prefix_to(&mut out, 6), 6);
        assert_eq!(out, "éééé\nb");
        out.clear();
        assert_eq!(parse(r#""éééé\nbc""#).push_prefix_to(&mut out, 3), 3);
        assert_eq!(out, "ééé");
    }

    #[test]
    fn prefixes_never_split_a_surrogate_pair() {
        let mut out = String::new();
        assert_eq!(parse(r#""ab😀c""#).push_prefix_to(&mut out, 3), 2);
        assert_eq!(out, "ab");
        out.clear();
        assert_eq!(
            parse(r#""a\nb\ud83d\ude00c""#).push_prefix_to(&mut out, 5),
            5
        );
        assert_eq!(out, "a\nb😀");
        out.clear();
        assert_eq!(
            parse(r#""a\nb\ud83d\ude00c""#).push_prefix_to(&mut out, 4),
            3
        );
        assert_eq!(out, "a\nb");
    }

    #[test]
    fn non_strings_are_rejected() {
        assert!(serde_json::from_str::<Text>("5").is_err());
    }
}
