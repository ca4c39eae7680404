//! From the body of a JSON string literal as it was sent (escapes and all) straight to
//! the escaped bytes of an answer, without decoding into an intermediate string.
//!
//! The serialized conversation is mostly session strings, and the answer shows them
//! JSON-escaped as serde_json escapes them (`json::write`). Decoding a body and then
//! escaping the result again is two passes that undo each other for nearly every
//! escape: `\n`, `\"`, `\\`, `\t` come out as they went in. Here one pass copies the
//! body (the 16-byte block scanner of `json::write`) and stops only at a backslash,
//! where `\/` and `\uXXXX` are the escapes that change. Raw quotes and control bytes
//! cannot occur in a valid body, but are escaped as the characters they are all the
//! same, so any text gives what decode-then-escape gives.
//!
//! Two targets:
//! * [`write_decoded_contents`]: the decoded text, escaped (`Text::decode`, then
//!   `write_str_contents`): a lone surrogate escape becomes U+FFFD as `decode` makes it.
//! * [`write_js_literal_escaped`]: the string as `JSON.stringify` writes it (quotes
//!   included, `compaction::stringify`), escaped again as a part of a JSON string: the
//!   tool-call arguments shown in the conversation.

use super::escaped::{copy_decoded, copy_js, prefix_start};
use super::string::unicode_escape;
use super::write::{escape_buf, escape_of, escape_with, Stop};

/// Appends the text the string literal body `body` decodes to, escaped as
/// `json::write::write_str_contents` escapes it.
pub(crate) fn write_decoded_contents(out: &mut Vec<u8>, body: &str) {
    // Long runs copied 64 bytes at a time between the escapes that change (AVX2),
    // the rest (or all, without AVX2) one stop at each backslash.
    let done = copy_decoded(out, body.as_bytes(), decoded_stop);
    escape_with(out, &body.as_bytes()[done..], decoded_stop);
}

/// What [`write_decoded_contents`] writes at a byte that needs a look.
#[inline(always)]
fn decoded_stop(b: &[u8], i: usize) -> Stop {
    if b[i] != b'\\' {
        return raw(b[i]);
    }
    match b.get(i + 1) {
        // Written back as they are: `\"` `\\` `\b` `\f` `\n` `\r` `\t`.
        Some(&c @ (b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't')) => (buf(&[b'\\', c]), 2, 2),
        Some(b'/') => (buf(b"/"), 1, 2),
        Some(b'u') => {
            let (code, taken) = unicode_escape(&b[i..]).unwrap_or((0xFFFD, 6));
            let taken = taken.min(b.len() - i);
            let c = char::from_u32(code).unwrap_or('\u{FFFD}');
            let (bytes, n) = char_escaped(c);
            (bytes, n, taken)
        }
        // Another escape decodes to its character (defensive: not valid JSON).
        Some(&c) => {
            let (bytes, n) = char_escaped(c as char);
            (bytes, n, 2)
        }
        // A lone backslash at the end decodes to nothing.
        None => ([0; 8], 0, 1),
    }
}

/// [`write_decoded_contents`] of the longest start of the text that has at most
/// `max_units` UTF-16 units, never splitting a surrogate pair: what
/// `string::unescape_prefix_into` decodes, escaped.
pub(crate) fn write_decoded_prefix(out: &mut Vec<u8>, body: &str, max_units: usize) {
    let b = body.as_bytes();
    // Whole blocks counted 64 bytes at a time up to near the cut (AVX2).
    let (mut i, mut units) = prefix_start(b, max_units);
    const ONES: u64 = 0x0101_0101_0101_0101;
    while i < b.len() {
        // Eight ASCII bytes without a backslash are eight units: a word at a time.
        if let Some(word) = b.get(i..i + 8) {
            let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let y = x ^ (ONES * b'\\' as u64);
            let backslash = y.wrapping_sub(ONES) & !y & (ONES << 7);
            if (x | backslash) & (ONES << 7) == 0 && units + 8 <= max_units {
                units += 8;
                i += 8;
                continue;
            }
        }
        let (w, n) = match b[i] {
            b'\\' => match b.get(i + 1) {
                Some(b'u') => match unicode_escape(&b[i..]) {
                    Some((_, 12)) => (2, 12),
                    Some((_, n)) => (1, n),
                    None => (1, 6),
                },
                Some(_) => (1, 2),
                // A lone backslash at the end decodes to nothing.
                None => break,
            },
            0..0x80 => (1, 1),
            0xF0.. => (2, 4),
            0xE0.. => (1, 3),
            _ => (1, 2),
        };
        if units + w > max_units {
            break;
        }
        units += w;
        i += n;
    }
    write_decoded_contents(out, &body[..i.min(b.len())]);
}

/// Appends `JSON.stringify` of the string whose literal body is `body` (quotes
/// included), escaped as a part of a JSON string (`\"…\"`).
pub(crate) fn write_js_literal_escaped(out: &mut Vec<u8>, body: &str) {
    out.extend_from_slice(b"\\\"");
    // Runs between escapes copied from 64-byte blocks (AVX2), the rest (or all,
    // without AVX2) one stop at each backslash.
    let done = copy_js(out, body.as_bytes(), js_stop);
    escape_with(out, &body.as_bytes()[done..], js_stop);
    out.extend_from_slice(b"\\\"");
}

/// What [`write_js_literal_escaped`] writes at a byte that needs a look.
#[inline(always)]
pub(crate) fn js_stop(b: &[u8], i: usize) -> Stop {
    if b[i] != b'\\' {
        return raw(b[i]);
    }
    let Some(&c) = b.get(i + 1) else {
        // `JSON.parse` would not take it; written as an escaped backslash.
        return (buf(b"\\\\"), 2, 1);
    };
    // JavaScript writes `\" \\ \b \f \n \r \t` back as they are; escaped once more:
    // `\\` and the character escaped. A table, not a `match`: the mix of escapes in
    // real text mispredicts a jump table's indirect branch.
    let (e, n) = JS_KEPT[c as usize];
    if n != 0 {
        return ([e[0], e[1], e[2], e[3], 0, 0, 0, 0], n as usize, 2);
    }
    match c {
        b'/' => (buf(b"/"), 1, 2),
        b'u' => {
            let (code, taken) = unicode_escape(&b[i..]).unwrap_or((0xFFFD, 6));
            let taken = taken.min(b.len() - i);
            let (bytes, n) = js_char_escaped(code);
            (bytes, n, taken)
        }
        c => {
            let (bytes, n) = js_char_escaped(c as u32);
            (bytes, n, 2)
        }
    }
}

/// For each byte after a backslash that JavaScript writes back as it is, that escape
/// escaped once more and its length; 0 for the others.
static JS_KEPT: [([u8; 4], u8); 256] = {
    let mut t = [([0u8; 4], 0u8); 256];
    t[b'"' as usize] = (*b"\\\\\\\"", 4);
    t[b'\\' as usize] = (*b"\\\\\\\\", 4);
    let short = *b"bfnrt";
    let mut k = 0;
    while k < short.len() {
        t[short[k] as usize] = ([b'\\', b'\\', short[k], 0], 3);
        k += 1;
    }
    t
};

/// A raw byte that needs escaping (a quote or a control byte).
fn raw(b: u8) -> Stop {
    let (e, n) = escape_of(b);
    (escape_buf(e), n, 1)
}

fn buf(bytes: &[u8]) -> [u8; 8] {
    let mut b = [0; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    b
}

/// A character as `write_str_contents` writes it.
fn char_escaped(c: char) -> ([u8; 8], usize) {
    if c < ' ' || c == '"' || c == '\\' {
        let (e, n) = escape_of(c as u8);
        return (escape_buf(e), n);
    }
    let mut b = [0; 8];
    let n = c.encode_utf8(&mut b[..4]).len();
    (b, n)
}

/// The character `code` as `JSON.stringify` writes it inside a string (lowercase
/// `\uXXXX` for lone surrogates and control characters without a short escape), then
/// escaped as a part of a JSON string.
fn js_char_escaped(code: u32) -> ([u8; 8], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = |c: u8| (buf(&[b'\\', b'\\', b'\\', c]), 4);
    match char::from_u32(code) {
        Some('"') => short(b'"'),
        Some('\\') => short(b'\\'),
        Some('\u{8}') => (buf(b"\\\\b"), 3),
        Some('\u{c}') => (buf(b"\\\\f"), 3),
        Some('\n') => (buf(b"\\\\n"), 3),
        Some('\r') => (buf(b"\\\\r"), 3),
        Some('\t') => (buf(b"\\\\t"), 3),
        Some(c) if c >= ' ' => {
            let mut b = [0; 8];
            let n = c.encode_utf8(&mut b[..4]).len();
            (b, n)
        }
        // A control character or a lone surrogate: `\u` and four lowercase digits.
        _ => {
            let h = |k: u32| HEX[((code >> k) & 0xf) as usize];
            (buf(&[b'\\', b'\\', b'u', h(12), h(8), h(4), h(0)]), 7)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::json::string::unescape_into;
    use crate::json::write::write_str_contents;

    /// Decode, then escape: what `write_decoded_contents` must give.
    fn decoded_then_escaped(body: &str) -> Vec<u8> {
        let mut text = String::new();
        unescape_into(body, &mut text);
        let mut out = Vec::new();
        write_str_contents(&mut out, &text);
        out
    }

    /// (`write_js_literal_escaped` is held to `JSON.stringify` then escaping in
    /// `compaction::conversation_json`, where the stringifier is.)
    fn check(body: &str) {
        let mut out = b"x".to_vec();
        write_decoded_contents(&mut out, body);
        assert_eq!(out[1..], decoded_then_escaped(body), "decoded {body:?}");
    }

    /// Escapes, surrogates, astral and control characters at every offset of a
    /// 16-byte block.
    pub(crate) const PIECES: [&str; 28] = [
        r"\n",
        r#"\""#,
        r"\\",
        r"\/",
        r"\t",
        r"\b",
        r"\f",
        r"\r",
        r"\u0000",
        r"\u001F",
        r"\u001f",
        r"\u0022",
        r"\u005c",
        r"\u005C",
        r"\u000a",
        r"\u007f",
        r"\u00e9",
        r"\u2028",
        r"\ud83d\ude00",
        r"\uD83D\uDE00",
        r"\ud800",
        r"\ud800x",
        r"\udc00\ud83d",
        r"\ud83d\u0041",
        "é",
        "😀",
        "\u{7f}",
        "a",
    ];

    #[test]
    fn bodies_transcode_as_decoding_then_escaping_does() {
        for p in PIECES {
            for pad in 0..34 {
                for tail in ["", "b", "cdefghijklmnopqrstuvwxyz", r"\n\n"] {
                    check(&format!("{}{p}{tail}", "a".repeat(pad)));
                }
            }
        }
    }

    /// `len` pieces drawn from [`PIECES`].
    fn random_body(rng: &mut fastrand::Rng, len: usize) -> String {
        (0..len)
            .map(|_| PIECES[rng.usize(..PIECES.len())])
            .collect()
    }

    #[test]
    fn prefixes_transcode_as_decoding_a_prefix_then_escaping_does() {
        let mut rng = fastrand::Rng::with_seed(2000);
        for len in 0..200 {
            let body = random_body(&mut rng, len);
            for max in 0..len + 3 {
                let mut text = String::new();
                crate::json::string::unescape_prefix_into(&body, &mut text, max);
                let mut want = Vec::new();
                write_str_contents(&mut want, &text);
                let mut out = Vec::new();
                write_decoded_prefix(&mut out, &body, max);
                assert_eq!(out, want, "{body:?} {max}");
            }
        }
        let mut out = Vec::new();
        write_decoded_prefix(&mut out, "ab\\", 5);
        write_decoded_prefix(&mut out, "a\\u12", 5);
        assert_eq!(out, "aba\u{FFFD}".as_bytes());
    }

    #[test]
    fn random_bodies_transcode_as_decoding_then_escaping_does() {
        let mut rng = fastrand::Rng::with_seed(16);
        for len in 0..400 {
            let body = random_body(&mut rng, len);
            check(&body);
        }
        // Long bodies, across the 4096-byte windows.
        for _ in 0..10 {
            let len = rng.usize(3000..9000);
            let body = random_body(&mut rng, len);
            check(&body);
        }
    }

    #[test]
    fn raw_quotes_and_control_bytes_are_escaped_as_the_characters_they_are() {
        // Not valid JSON bodies, but decoding leaves raw characters as they are.
        for body in ["a\"b", "\u{1}", "x\ny\tz", &"\u{1f}".repeat(40)] {
            let mut out = Vec::new();
            write_decoded_contents(&mut out, body);
            let mut want = Vec::new();
            write_str_contents(&mut want, body);
            assert_eq!(out, want, "{body:?}");
        }
        let mut out = Vec::new();
        write_js_literal_escaped(&mut out, "a\u{1}\"");
        assert_eq!(out, br#"\"a\u0001\"\""#);
    }

    #[test]
    fn js_literals_keep_javascripts_escapes_and_escape_them_again() {
        let js = |body: &str| {
            let mut out = Vec::new();
            write_js_literal_escaped(&mut out, body);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(js(r"a\nb"), r#"\"a\\nb\""#);
        assert_eq!(js(r#"q\"\\"#), r#"\"q\\\"\\\\\""#);
        assert_eq!(
            js(r"\/\u00e9\u0001\u001F\u0022\ud800\ud83d\ude00"),
            r#"\"/é\\u0001\\u001f\\\"\\ud800😀\""#
        );
    }

    #[test]
    fn a_trailing_backslash_neither_panics_nor_reads_past_the_end() {
        let mut out = Vec::new();
        write_decoded_contents(&mut out, "ab\\");
        assert_eq!(out, b"ab");
        write_decoded_contents(&mut out, "\\u12");
        let mut out = Vec::new();
        write_js_literal_escaped(&mut out, "ab\\");
        assert_eq!(out, br#"\"ab\\\""#);
    }
}
