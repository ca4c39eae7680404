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

use crate::json::escaped::escaped_utf16_len;
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
    pub(crate) fn from_raw(raw: &'a str) -> Option<Self> {
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
    pub(crate) fn byte_len(&self) -> usize {
        match self {
            Text::Escaped(s) => s.len(),
            Text::Plain(s) => s.len(),
        }
    }

    /// Length in UTF-16 code units, as JavaScript's `String.length` reports it.
    pub fn utf16_len(&self) -> usize {
        match self {
            Text::Plain(s) => utf16_len(s),
            Text::Escaped(s) => escaped_utf16_len(s),
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
