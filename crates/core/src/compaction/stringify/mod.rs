//! JavaScript's `JSON.stringify`, reproduced exactly.
//!
//! Token estimates count `JSON.stringify(arguments).length` and the serialized
//! conversation shows `JSON.stringify(value)` for each tool argument, so compactd must
//! produce the same text as V8: no whitespace, JavaScript number formatting, JavaScript
//! string escaping, and JavaScript's property order (array-index keys first, ascending,
//! then the rest in insertion order).
//!
//! Two ways in: from a `serde_json::Value` (this file), and straight from the JSON text
//! as sent (`raw`: read with the trusted `crate::json::Lexer`, no value tree, no
//! allocation), which leaves to the value path the few objects JavaScript would
//! reorder.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use crate::json::utf16_len;

mod raw;

pub use raw::{stringify_raw, tool_arguments_raw, NeedsValue, Sink, Utf16Count};

/// Appends `JSON.stringify(value)` to `out`.
pub(crate) fn stringify_into(value: &Value, out: &mut String) {
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
pub(crate) fn stringify_len(value: &Value) -> usize {
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
pub(crate) fn entries_in_js_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
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
pub(crate) fn push_js_number(f: f64, out: &mut String) {
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
pub(crate) fn push_string(s: &str, out: &mut String) {
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
