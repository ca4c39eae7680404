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
                unescape_into(s, &mut out, usize::MAX);
                Cow::Owned(out)
            }
        }
    }

    /// Appends the decoded text to `out`.
    pub fn push_to(&self, out: &mut String) {
        match self {
            Text::Plain(s) => out.push_str(s),
            Text::Escaped(s) => {
                unescape_into(s, out, usize::MAX);
            }
        }
    }

    /// Appends at most `max_units` UTF-16 units of the decoded text, never splitting a
    /// surrogate pair (a character that would straddle the limit is left out).
    /// Returns the number of units appended.
    pub fn push_prefix_to(&self, out: &mut String, max_units: usize) -> usize {
        match self {
            Text::Plain(s) => push_str_prefix(s, out, max_units),
            Text::Escaped(s) => unescape_into(s, out, max_units),
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

/// UTF-16 length of a Rust string.
pub fn utf16_len(s: &str) -> usize {
    // Every byte that is not a UTF-8 continuation byte starts a character (one unit);
    // four-byte sequences are astral characters and take a second unit. Counting in
    // u8 lanes over chunks lets the compiler vectorize the loop.
    let bytes = s.as_bytes();
    let mut continuation = 0usize;
    let mut astral = 0usize;
    for chunk in bytes.chunks(255) {
        let (mut c, mut a) = (0u8, 0u8);
        for &b in chunk {
            c += ((b as i8) < -64) as u8;
            a += (b >= 0xF0) as u8;
        }
        continuation += c as usize;
        astral += a as usize;
    }
    bytes.len() - continuation + astral
}

/// UTF-16 length of the string an escaped JSON literal body decodes to.
fn escaped_utf16_len(s: &str) -> usize {
    // Count the whole text as if unescaped (escapes are ASCII: a unit per byte), then
    // take off what each escape saves: every escape is one unit, `\uXXXX` included (a
    // surrogate pair is two escapes).
    let bytes = s.as_bytes();
    let mut saved = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Escapes often come in runs (`\n\t\t`): look before calling memchr.
        if bytes[i] != b'\\' {
            match memchr::memchr(b'\\', &bytes[i..]) {
                Some(k) => i += k,
                None => break,
            }
        }
        let len = if bytes.get(i + 1) == Some(&b'u') {
            6
        } else {
            2
        };
        saved += len - 1;
        i += len;
    }
    utf16_len(s).saturating_sub(saved)
}

fn push_str_prefix(s: &str, out: &mut String, max_units: usize) -> usize {
    push_str_prefix_whole(s, out, max_units).0
}

/// [`push_str_prefix`], also telling whether all of `s` fit.
fn push_str_prefix_whole(s: &str, out: &mut String, max_units: usize) -> (usize, bool) {
    let mut units = 0;
    for (idx, ch) in s.char_indices() {
        let w = ch.len_utf16();
        if units + w > max_units {
            out.push_str(&s[..idx]);
            return (units, false);
        }
        units += w;
    }
    out.push_str(s);
    (units, true)
}

fn hex4(b: &[u8]) -> Option<u32> {
    if b.len() < 4 {
        return None;
    }
    let mut v = 0u32;
    for &c in &b[..4] {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Decodes an escaped JSON string body into `out`, stopping before `max_units` UTF-16
/// units would be exceeded. Returns the units written, except that runs between escapes
/// are not counted when there is no limit (`usize::MAX`: `push_to` and `decode`, which
/// ignore the count; counting would be a second pass over the text). The input was
/// validated by the JSON parser, so malformed escapes cannot occur; they are skipped
/// defensively.
fn unescape_into(s: &str, out: &mut String, max_units: usize) -> usize {
    let bytes = s.as_bytes();
    let mut units = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Copy the run up to the next backslash in one go.
        let run_end = memchr::memchr(b'\\', &bytes[i..]).map_or(bytes.len(), |p| i + p);
        if run_end > i {
            let run = &s[i..run_end];
            if max_units == usize::MAX {
                out.push_str(run);
                i = run_end;
                continue;
            }
            let budget = max_units - units;
            if run.len() > budget {
                // May not fit: walk the run only up to the budget rather than count all
                // of it (a tool result cut at 2000 units can be one long run).
                let (run_units, whole) = push_str_prefix_whole(run, out, budget);
                units += run_units;
                if !whole {
                    return units;
                }
            } else {
                // Fits: no character takes more UTF-16 units than UTF-8 bytes.
                out.push_str(run);
                units += utf16_len(run);
            }
            i = run_end;
            continue;
        }
        let (ch, consumed) = match bytes.get(i + 1) {
            Some(b'u') => {
                let hi = hex4(&bytes[i + 2..]).unwrap_or(0xFFFD);
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = if bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u')
                    {
                        hex4(&bytes[i + 8..])
                    } else {
                        None
                    };
                    match lo {
                        Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                            (char::from_u32(c).unwrap_or('\u{FFFD}'), 12)
                        }
                        _ => ('\u{FFFD}', 6),
                    }
                } else {
                    (char::from_u32(hi).unwrap_or('\u{FFFD}'), 6)
                }
            }
            Some(b'n') => ('\n', 2),
            Some(b't') => ('\t', 2),
            Some(b'r') => ('\r', 2),
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(&c) => (c as char, 2),
            None => break,
        };
        // A lone surrogate counts one unit in JavaScript even though we emit U+FFFD.
        let w = if consumed == 12 { 2 } else { 1 };
        if units + w > max_units {
            return units;
        }
        out.push(ch);
        units += w;
        i += consumed;
    }
    units
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
