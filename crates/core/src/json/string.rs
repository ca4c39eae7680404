//! The bodies of JSON string literals (the text between the quotes, escapes and all)
//! and the lengths JavaScript gives strings.
//!
//! Bodies handled here were validated by a parser (the lexer or serde_json), so
//! malformed escapes do not occur; they are skipped defensively rather than checked.
//! A lone surrogate escape (`\ud800` alone: valid JSON, not a Unicode scalar value)
//! decodes to U+FFFD but counts one UTF-16 unit, as the original does in JavaScript.

/// UTF-16 length of a Rust string: JavaScript's `String.length`.
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

/// UTF-16 length of the string an escaped literal body decodes to.
pub(crate) fn escaped_utf16_len(body: &str) -> usize {
    // Count the whole text as if unescaped (escapes are ASCII: a unit per byte), then
    // take off what each escape saves: every escape is one unit, `\uXXXX` included (a
    // surrogate pair is two escapes).
    let bytes = body.as_bytes();
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
    utf16_len(body).saturating_sub(saved)
}

/// The four hex digits at the start of `b`.
fn hex4(b: &[u8]) -> Option<u32> {
    let h = b.get(..4)?;
    h.iter()
        .try_fold(0, |v, &c| Some(v * 16 + (c as char).to_digit(16)?))
}

/// The `\uXXXX` escape at the start of `b` (at its backslash), joined with the
/// `\uXXXX` low half that follows a high surrogate: the code point (a lone surrogate's
/// own value when unpaired) and the bytes taken (6, or 12 for a pair). `None` when the
/// hex digits are not there.
pub(crate) fn unicode_escape(b: &[u8]) -> Option<(u32, usize)> {
    let hi = hex4(b.get(2..)?)?;
    if (0xD800..0xDC00).contains(&hi) && b.get(6..8) == Some(b"\\u") {
        if let Some(lo) = b.get(8..).and_then(hex4) {
            if (0xDC00..0xE000).contains(&lo) {
                return Some((0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12));
            }
        }
    }
    Some((hi, 6))
}

/// Appends the decoded `body` to `out`.
pub(crate) fn unescape_into(body: &str, out: &mut String) {
    unescape_prefix_into(body, out, usize::MAX);
}

/// Appends the decoded `body`, stopping before `max_units` UTF-16 units would be
/// exceeded and never splitting a surrogate pair. Returns the units written, except
/// that runs between escapes are not counted when there is no limit (`usize::MAX`:
/// counting would be a second pass over the text, and nobody reads the count then).
pub(crate) fn unescape_prefix_into(body: &str, out: &mut String, max_units: usize) -> usize {
    let bytes = body.as_bytes();
    let mut units = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Copy the run up to the next backslash in one go.
        let run_end = memchr::memchr(b'\\', &bytes[i..]).map_or(bytes.len(), |p| i + p);
        if run_end > i {
            let run = &body[i..run_end];
            if max_units == usize::MAX {
                out.push_str(run);
                i = run_end;
                continue;
            }
            let budget = max_units - units;
            if run.len() > budget {
                // May not fit: walk the run only up to the budget rather than count all
                // of it (a tool result cut at 2000 units can be one long run).
                let (run_units, whole) = push_prefix_whole(run, out, budget);
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
            Some(b'u') => match unicode_escape(&bytes[i..]) {
                Some((c, n)) => (char::from_u32(c).unwrap_or('\u{FFFD}'), n),
                None => ('\u{FFFD}', 6),
            },
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

/// Appends at most `max_units` UTF-16 units of `s` (a character that would straddle
/// the limit is left out); returns the units appended.
pub(crate) fn push_prefix(s: &str, out: &mut String, max_units: usize) -> usize {
    push_prefix_whole(s, out, max_units).0
}

/// [`push_prefix`], also telling whether all of `s` fit.
fn push_prefix_whole(s: &str, out: &mut String, max_units: usize) -> (usize, bool) {
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

/// JSON text with every lone surrogate escape replaced by `\ufffd`, so that serde_json
/// (which rejects them when decoding) reads it; pairs are kept.
pub fn replace_lone_surrogates(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        match unicode_escape(&b[i..]) {
            Some((c, 6)) if (0xD800..0xE000).contains(&c) => {
                out.push_str(&s[last..i]);
                out.push_str("\\ufffd");
                i += 6;
                last = i;
            }
            Some((_, n)) => i += n,
            None => i += 6,
        }
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(body: &str) -> String {
        let mut out = String::new();
        unescape_into(body, &mut out);
        out
    }

    #[test]
    fn utf16_lengths_match_javascript() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("𝒳a"), 3);
        assert_eq!(escaped_utf16_len(r"a\nb"), 3);
        assert_eq!(escaped_utf16_len(r"\ud83d\ude00"), 2);
        assert_eq!(escaped_utf16_len(r"\ud800x"), 2);
        assert_eq!(escaped_utf16_len(r#"é\"\\\/"#), 4);
    }

    #[test]
    fn decoding_handles_escapes_and_lone_surrogates() {
        assert_eq!(decode(r"a\nb\u00e9\ud83d\ude00"), "a\nbé😀");
        assert_eq!(decode(r#"\"\\\/\b\f\r\t"#), "\"\\/\u{8}\u{c}\r\t");
        assert_eq!(decode(r"\ud800x"), "\u{FFFD}x");
        assert_eq!(decode(r"\ude00\ud83d"), "\u{FFFD}\u{FFFD}");
        assert_eq!(decode(r"\ud83d\u0041"), "\u{FFFD}A");
    }

    #[test]
    fn unicode_escapes_join_surrogate_pairs() {
        assert_eq!(unicode_escape(br"\u00e9"), Some((0xE9, 6)));
        assert_eq!(unicode_escape(br"\uD83D\uDE00"), Some((0x1F600, 12)));
        assert_eq!(unicode_escape(br"\ud83dx"), Some((0xD83D, 6)));
        assert_eq!(unicode_escape(br"\ude00"), Some((0xDE00, 6)));
        assert_eq!(unicode_escape(br"\u12"), None);
    }

    #[test]
    fn prefixes_continue_past_runs_longer_in_bytes_than_the_budget() {
        let mut out = String::new();
        assert_eq!(unescape_prefix_into(r"éééé\nbc", &mut out, 6), 6);
        assert_eq!(out, "éééé\nb");
        out.clear();
        assert_eq!(unescape_prefix_into(r"éééé\nbc", &mut out, 3), 3);
        assert_eq!(out, "ééé");
    }

    #[test]
    fn prefixes_never_split_a_surrogate_pair() {
        let mut out = String::new();
        assert_eq!(push_prefix("ab😀c", &mut out, 3), 2);
        assert_eq!(out, "ab");
        out.clear();
        assert_eq!(unescape_prefix_into(r"a\nb\ud83d\ude00c", &mut out, 5), 5);
        assert_eq!(out, "a\nb😀");
        out.clear();
        assert_eq!(unescape_prefix_into(r"a\nb\ud83d\ude00c", &mut out, 4), 3);
        assert_eq!(out, "a\nb");
    }

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_kept() {
        assert_eq!(
            replace_lone_surrogates(r#"{"a":"x\ud800y\\ud800","b":"\ud83d\ude00\udc00"}"#),
            r#"{"a":"x\ufffdy\\ud800","b":"\ud83d\ude00\ufffd"}"#
        );
    }
}
