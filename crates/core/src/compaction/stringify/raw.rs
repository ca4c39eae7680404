//! `JSON.stringify(JSON.parse(raw))` straight from the JSON text as sent: the text is
//! walked once with the trusted lexer and written out (or only counted, for token
//! estimates) as JavaScript would write it. Objects whose keys JavaScript would not
//! keep as written (array indexes, duplicates, escapes) are left to the value path.

use std::fmt::Write as _;

use super::{array_index, escape_of, push_js_number};
use crate::json::string::unicode_escape;
use crate::json::{utf16_len, Lexer};

/// Where [`stringify_raw`] writes: text, or just its UTF-16 length.
pub trait Sink {
    fn push_str(&mut self, s: &str);

    /// Takes the JSON.stringify output of the escaped string literal body `body` in one
    /// go if the sink can do so cheaply; `false` leaves it to the general path.
    fn push_escaped_string(&mut self, _body: &str) -> bool {
        false
    }
}

impl Sink for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
}

/// Counts UTF-16 units.
#[derive(Default)]
pub struct Utf16Count(pub usize);

impl Sink for Utf16Count {
    fn push_str(&mut self, s: &str) {
        self.0 += utf16_len(s);
    }

    fn push_escaped_string(&mut self, body: &str) -> bool {
        // 64 bytes at a time (AVX2), or the plain count.
        match crate::json::escaped::js_literal_units(body) {
            Some(Some(units)) => {
                self.0 += 2 + units;
                true
            }
            Some(None) => false,
            None => self.plain_escaped_string(body),
        }
    }
}

impl Utf16Count {
    /// [`Sink::push_escaped_string`] one escape at a time.
    pub(crate) fn plain_escaped_string(&mut self, body: &str) -> bool {
        // JavaScript writes `\" \\ \b \f \n \r \t` back as they are and `\/` as `/`;
        // what a `\u` escape becomes depends on the character: the general path.
        let b = body.as_bytes();
        let mut saved = 0;
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'\\' {
                match memchr::memchr(b'\\', &b[i..]) {
                    Some(k) => i += k,
                    None => break,
                }
            }
            match b.get(i + 1) {
                Some(b'u') => return false,
                Some(b'/') => saved += 1,
                _ => {}
            }
            i += 2;
        }
        self.0 += 2 + utf16_len(body).saturating_sub(saved);
        true
    }
}

/// A case the raw transcoder leaves to the value-based path: array-index keys (which
/// JavaScript reorders), duplicate keys, escapes in object keys (or, defensively,
/// text the lexer does not take).
#[derive(Debug, PartialEq, Eq)]
pub struct NeedsValue;

/// `JSON.stringify(JSON.parse(raw))` written to `out`, for valid JSON `raw`.
pub fn stringify_raw<S: Sink>(raw: &str, out: &mut S) -> Result<(), NeedsValue> {
    let mut lx = Lexer::trusted(raw);
    lx.ws();
    raw_value(&mut lx, out).ok_or(NeedsValue)
}

/// `Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")` for a
/// raw JSON object.
pub fn tool_arguments_raw<S: Sink>(raw: &str, out: &mut S) -> Result<(), NeedsValue> {
    let mut lx = Lexer::trusted(raw);
    lx.ws();
    if lx.peek() != Some(b'{') {
        return Err(NeedsValue);
    }
    let mut keys: Vec<&str> = Vec::new();
    lx.object(|lx, key| {
        kept_key(key, &mut keys)?;
        if keys.len() > 1 {
            out.push_str(", ");
        }
        out.push_str(key);
        out.push_str("=");
        raw_value(lx, out)
    })
    .ok_or(NeedsValue)
}

/// Records an object key in `seen`, or `None` when JavaScript would not keep the keys
/// as written: array indexes (moved first), duplicates (one entry, first position).
/// Keys with escapes never get here (the lexer does not read them). Checked as the
/// object is written (the caller throws a failed attempt's output away), so the
/// object is not scanned twice.
fn kept_key<'a>(key: &'a str, seen: &mut Vec<&'a str>) -> Option<()> {
    if array_index(key).is_some() || seen.contains(&key) {
        return None;
    }
    seen.push(key);
    Some(())
}

/// The value at the cursor, transcoded; `None` leaves it to the value path.
fn raw_value<S: Sink>(lx: &mut Lexer, out: &mut S) -> Option<()> {
    match lx.peek()? {
        b'{' => {
            out.push_str("{");
            let mut keys: Vec<&str> = Vec::new();
            lx.object(|lx, key| {
                kept_key(key, &mut keys)?;
                // Kept keys hold no escapes: JavaScript writes them as they are.
                out.push_str(if keys.len() > 1 { ",\"" } else { "\"" });
                out.push_str(key);
                out.push_str("\":");
                raw_value(lx, out)
            })?;
            out.push_str("}");
        }
        b'[' => {
            out.push_str("[");
            let mut first = true;
            lx.array(|lx| {
                if !first {
                    out.push_str(",");
                }
                first = false;
                raw_value(lx, out)
            })?;
            out.push_str("]");
        }
        b'"' => {
            let (body, escaped) = lx.string()?;
            push_raw_string(body, escaped, out);
        }
        b't' => {
            lx.literal(b"true")?;
            out.push_str("true");
        }
        b'f' => {
            lx.literal(b"false")?;
            out.push_str("false");
        }
        b'n' => {
            lx.literal(b"null")?;
            out.push_str("null");
        }
        _ => push_raw_number(lx.number()?, out),
    }
    Some(())
}

fn push_raw_number<S: Sink>(text: &str, out: &mut S) {
    let digits = text.strip_prefix('-').unwrap_or(text);
    // Plain integers below 2^53 print as written; everything else goes through f64.
    if digits.len() <= 15
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0"
    {
        out.push_str(text);
    } else {
        let mut s = String::new();
        push_js_number(text.parse().unwrap_or(f64::NAN), &mut s);
        out.push_str(&s);
    }
}

/// A string literal whose body (between the quotes) is `body`, as JavaScript writes it.
fn push_raw_string<S: Sink>(body: &str, escaped: bool, out: &mut S) {
    if !escaped {
        // Valid JSON strings hold no raw control characters: JavaScript writes them as is.
        out.push_str("\"");
        out.push_str(body);
        out.push_str("\"");
        return;
    }
    if out.push_escaped_string(body) {
        return;
    }
    out.push_str("\"");
    let b = body.as_bytes();
    let mut i = 0;
    let mut run = 0;
    let mut buf = [0u8; 4];
    let lower_hex = |code: u32, out: &mut S| {
        let mut s = String::with_capacity(6);
        let _ = write!(s, "\\u{code:04x}");
        out.push_str(&s);
    };
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        i += k;
        let esc = b.get(i + 1).copied().unwrap_or(b'\\');
        if !matches!(esc, b'/' | b'u') {
            // \" \\ \b \f \n \r \t: JavaScript writes the same escape, so it stays in
            // the run copied as is (no piece-by-piece copy for text full of `\n`).
            i = (i + 2).min(b.len());
            continue;
        }
        out.push_str(&body[run..i]);
        if esc == b'/' {
            out.push_str("/");
            i += 2;
        } else {
            // `\u`, the only other escape that gets here.
            let (code, taken) = unicode_escape(&b[i..]).unwrap_or((0xFFFD, 6));
            match char::from_u32(code) {
                // A lone surrogate: JavaScript writes it as a lowercase escape.
                None => lower_hex(code, out),
                Some(c) => match escape_of(c) {
                    Some(e) => out.push_str(e),
                    None if c < ' ' => lower_hex(code, out),
                    None => out.push_str(c.encode_utf8(&mut buf)),
                },
            }
            i += taken;
        }
        run = i;
    }
    out.push_str(&body[run..]);
    out.push_str("\"");
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::stringify;
    use super::*;

    fn both(json: &str) {
        let v: Value = serde_json::from_str(json).unwrap();
        let want = stringify(&v);
        let mut got = String::new();
        stringify_raw(json, &mut got).unwrap();
        assert_eq!(got, want, "{json}");
        let mut n = Utf16Count::default();
        stringify_raw(json, &mut n).unwrap();
        assert_eq!(n.0, utf16_len(&want));
    }

    #[test]
    fn raw_transcoding_matches_the_value_path() {
        both(
            r#" { "a" : [ 1 , 1.50 , -0 , 1e21 , 1E-7 , 123456789012345678901 , 9007199254740993 , 0.000001 , true , null , "x\/y\u00e9\u0001\n\"\\\ud83d\ude00" ] , "b" : { } , "c" : [ ] } "#,
        );
        both(r#""plain €😀 text""#);
        both(r#"{"p":"a\/b\n\t\"q\" \\\\ é😀\r\b\f\/","q":["\\","\\/"]}"#);
        both("-12");
        both(r#"{"k":"\u2028\u007f\u001F"}"#);
    }

    #[test]
    fn javascript_literal_lengths_in_blocks_agree_with_the_plain_count() {
        let mut rng = fastrand::Rng::with_seed(1500);
        let mut fast = 0;
        for round in 0..3000 {
            let body =
                crate::json::escaped::tests::random_body_with(&mut rng, round % 50, round % 2 == 0);
            // Bodies without `\u` too, which the block count must count.
            let body = if round % 3 == 0 {
                body.replace(r"\u", r"\\u")
            } else {
                body
            };
            let mut plain = Utf16Count::default();
            let plain = plain.plain_escaped_string(&body).then_some(plain.0);
            let mut n = Utf16Count::default();
            assert_eq!(n.push_escaped_string(&body), plain.is_some(), "{body:?}");
            if let Some(p) = plain {
                assert_eq!(n.0, p, "{body:?}");
                fast += (body.len() >= 64) as usize;
            }
        }
        assert!(fast > 300, "{fast}");
    }

    #[test]
    fn lone_surrogates_are_escaped_like_javascript() {
        let mut got = String::new();
        stringify_raw(r#""a\uD800b""#, &mut got).unwrap();
        assert_eq!(got, r#""a\ud800b""#);
    }

    #[test]
    fn reordering_cases_fall_back_to_values() {
        let mut s = String::new();
        assert_eq!(stringify_raw(r#"{"b":1,"2":2}"#, &mut s), Err(NeedsValue));
        assert_eq!(stringify_raw(r#"{"a":1,"a":2}"#, &mut s), Err(NeedsValue));
        assert_eq!(stringify_raw(r#"{"a\n":1}"#, &mut s), Err(NeedsValue));
        assert_eq!(
            stringify_raw(r#"[{"x":[{"1":0}]}]"#, &mut s),
            Err(NeedsValue)
        );
    }

    #[test]
    fn tool_arguments_render_entries() {
        let mut s = String::new();
        tool_arguments_raw(r#"{"path": "a.rs", "n": 1.0, "o": {"x": [1]}}"#, &mut s).unwrap();
        assert_eq!(s, r#"path="a.rs", n=1, o={"x":[1]}"#);
    }

    #[test]
    fn tool_arguments_with_reordered_keys_need_values() {
        // Keys are checked while writing: a late bad key still fails the whole call.
        for raw in [
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"a":1,"7":2}"#,
            r#"{"a":"x\ny","b\u0041":2}"#,
            r#"{"a":{"x":1,"x":2}}"#,
        ] {
            assert_eq!(
                tool_arguments_raw(raw, &mut String::new()),
                Err(NeedsValue),
                "{raw}"
            );
        }
    }
}
