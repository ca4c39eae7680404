//! `json.loads` and `json.dumps(ensure_ascii=False)` as CPython 3.11 does them.
//!
//! hermes re-parses tool-call arguments and re-serializes them (pruning pass 3, the
//! replay-field estimate), so the exact Python reading matters: `NaN` and `Infinity`
//! are accepted, a duplicate key keeps its first position and its last value, ints
//! keep every digit, and `1E2` comes back as `100.0`.

use super::float::repr_float;
use super::value::{int_digits, PyValue};
use serde_json::Value;

/// Nesting deeper than this makes CPython raise `RecursionError`; hermes treats that
/// like any other failed parse.
const MAX_DEPTH: usize = 900;

/// `json.loads(s)`; `None` where Python raises.
pub fn loads(s: &str) -> Option<PyValue> {
    let mut p = Parser {
        b: s.as_bytes(),
        s,
        i: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    (p.i == p.b.len()).then_some(v)
}

struct Parser<'a> {
    b: &'a [u8],
    s: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.b[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<PyValue> {
        if depth > MAX_DEPTH {
            return None;
        }
        match *self.b.get(self.i)? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(PyValue::Str),
            b'n' if self.eat("null") => Some(PyValue::None),
            b't' if self.eat("true") => Some(PyValue::Bool(true)),
            b'f' if self.eat("false") => Some(PyValue::Bool(false)),
            b'N' if self.eat("NaN") => Some(PyValue::Float(f64::NAN)),
            b'I' if self.eat("Infinity") => Some(PyValue::Float(f64::INFINITY)),
            b'-' if self.eat("-Infinity") => Some(PyValue::Float(f64::NEG_INFINITY)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Option<PyValue> {
        let start = self.i;
        self.eat("-");
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return None,
        }
        let mut float = false;
        // A fraction or exponent that is not complete is not part of the number (the
        // rest then fails as extra data), as in Python's scanner.
        if self.b.get(self.i) == Some(&b'.') {
            let save = self.i;
            self.i += 1;
            if self.digits() == 0 {
                self.i = save;
            } else {
                float = true;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            let save = self.i;
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                self.i = save;
            } else {
                float = true;
            }
        }
        let token = &self.s[start..self.i];
        Some(if float {
            PyValue::Float(token.parse().ok()?)
        } else {
            PyValue::Int(int_digits(token))
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let run = self.b[self.i..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
            out.push_str(&self.s[self.i..self.i + run]);
            self.i += run;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.i += 1;
                    let c = *self.b.get(self.i)?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            out.push(self.code_point(hi));
                        }
                        _ => return None,
                    }
                }
                // strict=True: raw control characters are an error.
                _ => return None,
            }
        }
    }

    /// A `\uXXXX` escape, joined with a following low surrogate escape; a lone
    /// surrogate becomes U+FFFD (H11).
    fn code_point(&mut self, hi: u32) -> char {
        if (0xD800..0xDC00).contains(&hi) && self.b[self.i..].starts_with(b"\\u") {
            let save = self.i;
            self.i += 2;
            match self.hex4() {
                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(c).unwrap_or('\u{FFFD}');
                }
                _ => self.i = save,
            }
        }
        char::from_u32(hi).unwrap_or('\u{FFFD}')
    }

    fn array(&mut self, depth: usize) -> Option<PyValue> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat("]") {
            return Some(PyValue::List(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat("]") {
                return Some(PyValue::List(items));
            }
            if !self.eat(",") {
                return None;
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<PyValue> {
        self.i += 1;
        let mut pairs: Vec<(String, PyValue)> = Vec::new();
        self.ws();
        if self.eat("}") {
            return Some(PyValue::Dict(pairs));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(":") {
                return None;
            }
            self.ws();
            let value = self.value(depth + 1)?;
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => pairs.push((key, value)),
            }
            self.ws();
            if self.eat("}") {
                return Some(PyValue::Dict(pairs));
            }
            if !self.eat(",") {
                return None;
            }
        }
    }
}

/// `json.dumps(v, ensure_ascii=False, sort_keys=…)`.
pub fn dumps(v: &PyValue, sort_keys: bool) -> String {
    let mut out = String::new();
    write(&mut out, v, sort_keys);
    out
}

/// `json.dumps` of what `json.loads` makes of a JSON value.
pub fn dumps_json(v: &Value, sort_keys: bool) -> String {
    dumps(&PyValue::from_json(v), sort_keys)
}

fn write(out: &mut String, v: &PyValue, sort_keys: bool) {
    match v {
        PyValue::None => out.push_str("null"),
        PyValue::Bool(true) => out.push_str("true"),
        PyValue::Bool(false) => out.push_str("false"),
        PyValue::Int(d) => out.push_str(d),
        PyValue::Float(f) if f.is_nan() => out.push_str("NaN"),
        PyValue::Float(f) if f.is_infinite() => {
            out.push_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
        }
        PyValue::Float(f) => out.push_str(&repr_float(*f)),
        PyValue::Str(s) => write_str(out, s),
        PyValue::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, item, sort_keys);
            }
            out.push(']');
        }
        PyValue::Dict(pairs) => {
            let mut refs: Vec<&(String, PyValue)> = pairs.iter().collect();
            if sort_keys {
                // UTF-8 byte order is code point order.
                refs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (i, (k, v)) in refs.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, k);
                out.push_str(": ");
                write(out, v, sort_keys);
            }
            out.push('}');
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &str) -> Option<String> {
        loads(s).map(|v| dumps(&v, false))
    }

    #[test]
    fn loads_then_dumps_matches_python() {
        // json.dumps(json.loads(s), ensure_ascii=False) in CPython 3.11
        let cases = [
            (r#"{"a":1}"#, r#"{"a": 1}"#),
            (
                r#"{"a":1,"b":[1E2,-0,1.0e-5,"\u00e9\ud83d\ude00"]}"#,
                r#"{"a": 1, "b": [100.0, 0, 1e-05, "é😀"]}"#,
            ),
            (r#"{"a":1,"b":2,"a":3}"#, r#"{"a": 3, "b": 2}"#),
            ("[NaN, Infinity, -Infinity]", "[NaN, Infinity, -Infinity]"),
            (
                r#" "\u0001\u001f\u007f\b\f\/" "#,
                "\"\\u0001\\u001f\u{7f}\\b\\f/\"",
            ),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1e400", "Infinity"),
            ("{}", "{}"),
            ("[ ]", "[]"),
            (r#""\ud800x""#, "\"\u{FFFD}x\""),
        ];
        for (input, want) in cases {
            assert_eq!(round(input).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn loads_rejects_what_python_rejects() {
        for bad in [
            "",
            "01",
            "1.",
            "1e",
            "[1,]",
            "{\"a\":1,}",
            "\"a\nb\"",
            "{'a': 1}",
            "tru",
            "- 1",
            "\u{feff}1",
            "1 2",
            "[\"\\x\"]",
            "nan",
            "+1",
            ".5",
            "\"\\u12\"",
        ] {
            assert_eq!(loads(bad), None, "{bad:?}");
        }
        assert!(loads(&"[".repeat(5000)).is_none());
    }

    #[test]
    fn dumps_sorts_keys_by_code_point() {
        let v = loads(r#"{"b":1,"a":{"z":1,"é":2,"Z":3}}"#).unwrap();
        assert_eq!(
            dumps(&v, true),
            r#"{"a": {"Z": 3, "z": 1, "é": 2}, "b": 1}"#
        );
    }
}
