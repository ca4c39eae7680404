//! JavaScript's `JSON.stringify`, reproduced exactly.
//!
//! Token estimates count `JSON.stringify(arguments).length` and the serialized
//! conversation shows `JSON.stringify(value)` for each tool argument, so compactd must
//! produce the same text as V8: no whitespace, JavaScript number formatting, JavaScript
//! string escaping, and JavaScript's property order (array-index keys first, ascending,
//! then the rest in insertion order).

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use crate::session::text::utf16_len;

/// Appends `JSON.stringify(value)` to `out`.
pub fn stringify_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => push_number(n, out),
        Value::String(s) => push_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                stringify_into(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in entries_in_js_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(k, out);
                out.push(':');
                stringify_into(v, out);
            }
            out.push('}');
        }
    }
}

pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    stringify_into(value, &mut out);
    out
}

/// `JSON.stringify(value).length` (UTF-16 units), without building the string.
pub fn stringify_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => {
            let mut buf = String::new();
            push_number(n, &mut buf);
            buf.len()
        }
        Value::String(s) => string_len(s),
        Value::Array(items) => {
            2 + items.iter().map(stringify_len).sum::<usize>() + items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| string_len(k) + 1 + stringify_len(v))
                .sum::<usize>()
                + map.len().saturating_sub(1)
        }
    }
}

/// The property order of a JavaScript object built by `JSON.parse`: integer-like keys
/// (canonical array indexes) ascending, then string keys in insertion order. This is
/// the order of `JSON.stringify` and `Object.entries`.
pub fn entries_in_js_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    if entries.iter().any(|(k, _)| array_index(k).is_some()) {
        // Stable sort: index keys first by value, the rest keep insertion order.
        entries.sort_by_key(|(k, _)| match array_index(k) {
            Some(i) => (0u8, i),
            None => (1u8, 0),
        });
    }
    entries
}

/// A canonical array index (`0` … `4294967294`, no leading zeros), as ECMAScript defines it.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    if !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v: u64 = key.parse().ok()?;
    (v < u32::MAX as u64).then_some(v as u32)
}

fn push_number(n: &Number, out: &mut String) {
    // JSON.parse reads every number as an IEEE double; u64/i64 convert with correct rounding.
    let f = if let Some(u) = n.as_u64() {
        u as f64
    } else if let Some(i) = n.as_i64() {
        i as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    };
    push_js_number(f, out);
}

/// Appends JavaScript's `Number.prototype.toString()` of `f` (ECMAScript Number::toString).
pub fn push_js_number(f: f64, out: &mut String) {
    if f.is_nan() {
        // JSON.stringify writes non-finite numbers as null.
        out.push_str("null");
        return;
    }
    if f.is_infinite() {
        out.push_str("null");
        return;
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as ECMAScript requires.
    let mut sci = String::with_capacity(32);
    let _ = write!(sci, "{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

/// JavaScript `String(f)`.
pub fn js_number_string(f: f64) -> String {
    let mut s = String::new();
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    push_js_number(f, &mut s);
    s
}

fn escape_of(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\u{8}' => "\\b",
        '\u{c}' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        _ => return None,
    })
}

/// Appends a JSON string literal escaped the way `JSON.stringify` escapes it.
pub fn push_string(s: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c >= ' ' && c != '"' && c != '\\' {
            continue;
        }
        out.push_str(&s[start..i]);
        match escape_of(c) {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

fn string_len(s: &str) -> usize {
    let extra: usize = s
        .chars()
        .filter(|c| *c < ' ' || *c == '"' || *c == '\\')
        .map(|c| if escape_of(c).is_some() { 1 } else { 5 })
        .sum();
    2 + utf16_len(s) + extra
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(json: &str) -> String {
        let v: Value = serde_json::from_str(json).unwrap();
        let s = stringify(&v);
        assert_eq!(stringify_len(&v), utf16_len(&s), "length of {s}");
        s
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(
            js("[1.5, 1e21, 1E-7, -0, 0.000001, 1.0, 100]"),
            "[1.5,1e+21,1e-7,0,0.000001,1,100]"
        );
        assert_eq!(js("123456789012345678901"), "123456789012345680000");
        assert_eq!(js("9007199254740993"), "9007199254740992");
        assert_eq!(js("5e-324"), "5e-324");
        assert_eq!(js("1.7976931348623157e308"), "1.7976931348623157e+308");
        assert_eq!(js("-1234.5678e10"), "-12345678000000");
        assert_eq!(js("1e20"), "100000000000000000000");
        assert_eq!(js("0.1"), "0.1");
        assert_eq!(js("-0.0000001"), "-1e-7");
        assert_eq!(js("123e-20"), "1.23e-18");
    }

    #[test]
    fn strings_escape_like_javascript() {
        assert_eq!(
            js(r#""a\"b\\c\/d\u0000\u001f\u007f\u2028é😀\b\f\n\r\t""#),
            "\"a\\\"b\\\\c/d\\u0000\\u001f\u{7f}\u{2028}é😀\\b\\f\\n\\r\\t\""
        );
    }

    #[test]
    fn objects_order_index_keys_first() {
        assert_eq!(
            js(r#"{"b":1,"10":2,"2":3,"a":{"1":0,"x":1},"01":4,"4294967295":5,"4294967294":6}"#),
            r#"{"2":3,"10":2,"4294967294":6,"b":1,"a":{"1":0,"x":1},"01":4,"4294967295":5}"#
        );
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        assert_eq!(js(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn whitespace_is_dropped() {
        assert_eq!(
            js("{ \"a\" : [ 1 , true , null ] , \"b\" : { } }"),
            r#"{"a":[1,true,null],"b":{}}"#
        );
    }
}

// ---------------------------------------------------------------------------------
// The same, straight from the JSON text as sent (no value tree, no allocation).
// ---------------------------------------------------------------------------------

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
/// JavaScript reorders), duplicate keys, or escapes in object keys.
#[derive(Debug, PartialEq, Eq)]
pub struct NeedsValue;

/// `JSON.stringify(JSON.parse(raw))` written to `out`, for valid JSON `raw`.
pub fn stringify_raw<S: Sink>(raw: &str, out: &mut S) -> Result<(), NeedsValue> {
    let mut r = Reader { s: raw, i: 0 };
    r.value(out)
}

/// `Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")` for a
/// raw JSON object.
pub fn tool_arguments_raw(raw: &str, out: &mut String) -> Result<(), NeedsValue> {
    let mut r = Reader { s: raw, i: 0 };
    r.ws();
    if r.peek() != b'{' {
        return Err(NeedsValue);
    }
    r.i += 1;
    let mut keys: Vec<&str> = Vec::new();
    loop {
        r.ws();
        if r.peek() != b'"' {
            break;
        }
        let key = r.key(&mut keys)?;
        r.ws();
        r.i += 1; // ':'
        if keys.len() > 1 {
            out.push_str(", ");
        }
        out.push_str(key);
        out.push('=');
        r.value(out)?;
        r.ws();
        if r.peek() == b',' {
            r.i += 1;
        }
    }
    Ok(())
}

struct Reader<'s> {
    s: &'s str,
    i: usize,
}

impl<'s> Reader<'s> {
    fn peek(&self) -> u8 {
        self.s.as_bytes().get(self.i).copied().unwrap_or(0)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// Skips a string starting at the opening quote; returns its body (escaped) and
    /// whether it holds a backslash (found while skipping: no second search).
    fn skip_string(&mut self) -> (&'s str, bool) {
        let b = self.s.as_bytes();
        let start = self.i + 1;
        let mut j = start;
        let mut escaped = false;
        while let Some(k) = memchr::memchr2(b'"', b'\\', &b[j..]) {
            j += k;
            if b[j] == b'"' {
                self.i = j + 1;
                return (&self.s[start..j], escaped);
            }
            escaped = true;
            j += 2;
            if j > b.len() {
                break;
            }
        }
        self.i = b.len();
        (&self.s[start.min(b.len())..], escaped)
    }

    /// Reads an object key at the cursor (an opening quote) and records it in `seen`,
    /// or `NeedsValue` when JavaScript would not keep the keys as written: escapes,
    /// array indexes, duplicates. Checked as the object is written (the caller throws
    /// a failed attempt's output away), so the object is not scanned twice.
    fn key(&mut self, seen: &mut Vec<&'s str>) -> Result<&'s str, NeedsValue> {
        let (key, escaped) = self.skip_string();
        if escaped || array_index(key).is_some() || seen.contains(&key) {
            return Err(NeedsValue);
        }
        seen.push(key);
        Ok(key)
    }

    fn value<S: Sink>(&mut self, out: &mut S) -> Result<(), NeedsValue> {
        self.ws();
        match self.peek() {
            b'{' => {
                self.i += 1;
                out.push_str("{");
                let mut keys: Vec<&str> = Vec::new();
                loop {
                    self.ws();
                    if self.peek() != b'"' {
                        break;
                    }
                    if !keys.is_empty() {
                        out.push_str(",");
                    }
                    // Checked keys hold no escapes: JavaScript writes them as they are.
                    let key = self.key(&mut keys)?;
                    out.push_str("\"");
                    out.push_str(key);
                    out.push_str("\"");
                    self.ws();
                    self.i += 1; // ':'
                    out.push_str(":");
                    self.value(out)?;
                    self.ws();
                    if self.peek() == b',' {
                        self.i += 1;
                    }
                }
                self.ws();
                self.i += 1; // '}'
                out.push_str("}");
            }
            b'[' => {
                self.i += 1;
                out.push_str("[");
                let mut first = true;
                loop {
                    self.ws();
                    if self.peek() == b']' {
                        self.i += 1;
                        break;
                    }
                    if !first {
                        out.push_str(",");
                    }
                    first = false;
                    self.value(out)?;
                    self.ws();
                    if self.peek() == b',' {
                        self.i += 1;
                    }
                }
                out.push_str("]");
            }
            b'"' => self.string(out),
            b't' => {
                self.i += 4;
                out.push_str("true");
            }
            b'f' => {
                self.i += 5;
                out.push_str("false");
            }
            b'n' => {
                self.i += 4;
                out.push_str("null");
            }
            _ => self.number(out),
        }
        Ok(())
    }

    fn number<S: Sink>(&mut self, out: &mut S) {
        let start = self.i;
        while matches!(self.peek(), b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.i += 1;
        }
        let text = &self.s[start..self.i];
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

    fn string<S: Sink>(&mut self, out: &mut S) {
        let (body, escaped) = self.skip_string();
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
            match esc {
                b'/' => {
                    out.push_str("/");
                    i += 2;
                }
                // `\u`, the only other escape that gets here.
                _ => {
                    let code = hex4(&b[i + 2..]);
                    let lo = if (0xD800..0xDC00).contains(&code)
                        && b.get(i + 6) == Some(&b'\\')
                        && b.get(i + 7) == Some(&b'u')
                    {
                        Some(hex4(&b[i + 8..])).filter(|l| (0xDC00..0xE000).contains(l))
                    } else {
                        None
                    };
                    if let Some(lo) = lo {
                        let c = char::from_u32(0x10000 + ((code - 0xD800) << 10) + (lo - 0xDC00))
                            .unwrap_or('\u{FFFD}');
                        out.push_str(c.encode_utf8(&mut buf));
                        i += 12;
                    } else {
                        match char::from_u32(code) {
                            // A lone surrogate: JavaScript writes it as a lowercase escape.
                            None => {
                                let mut s = String::with_capacity(6);
                                let _ = write!(s, "\\u{code:04x}");
                                out.push_str(&s);
                            }
                            Some(c) => match escape_of(c) {
                                Some(e) => out.push_str(e),
                                None if c < ' ' => {
                                    let mut s = String::with_capacity(6);
                                    let _ = write!(s, "\\u{code:04x}");
                                    out.push_str(&s);
                                }
                                None => out.push_str(c.encode_utf8(&mut buf)),
                            },
                        }
                        i += 6;
                    }
                }
            }
            run = i;
        }
        out.push_str(&body[run..]);
        out.push_str("\"");
    }
}

fn hex4(b: &[u8]) -> u32 {
    b.iter()
        .take(4)
        .fold(0, |v, &c| v * 16 + (c as char).to_digit(16).unwrap_or(0))
}

#[cfg(test)]
mod raw_tests {
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
