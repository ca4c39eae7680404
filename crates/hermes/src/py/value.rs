//! JSON values as Python holds them after `json.loads`, and their `str()`, `repr()`
//! and truthiness.

use super::float::repr_float;
use super::repr::push_repr;
use serde_json::{Number, Value};

/// A value of Python's `json.loads`: ints keep every digit, floats may be `nan` or
/// `inf`, dicts keep insertion order (a duplicate key keeps its first position and
/// its last value).
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    None,
    Bool(bool),
    /// Decimal digits, with a leading `-` when negative (never `-0`).
    Int(String),
    Float(f64),
    Str(String),
    List(Vec<PyValue>),
    Dict(Vec<(String, PyValue)>),
}

/// A JSON number token as Python reads it: a float when it has `.`, `e` or `E`.
pub fn number(n: &Number) -> PyValue {
    let token = n.to_string();
    if token.contains(['.', 'e', 'E']) {
        PyValue::Float(token.parse().unwrap_or(f64::NAN))
    } else {
        PyValue::Int(int_digits(&token))
    }
}

/// An integer token's digits as `str(int(token))` writes them.
pub(crate) fn int_digits(token: &str) -> String {
    let (neg, digits) = match token.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, token),
    };
    let digits = digits.trim_start_matches('0');
    match (neg, digits.is_empty()) {
        (_, true) => "0".into(),
        (true, false) => format!("-{digits}"),
        (false, false) => digits.into(),
    }
}

impl PyValue {
    /// The Python value `json.loads` makes of this JSON value.
    pub fn from_json(v: &Value) -> PyValue {
        match v {
            Value::Null => PyValue::None,
            Value::Bool(b) => PyValue::Bool(*b),
            Value::Number(n) => number(n),
            Value::String(s) => PyValue::Str(s.clone()),
            Value::Array(items) => PyValue::List(items.iter().map(PyValue::from_json).collect()),
            Value::Object(map) => PyValue::Dict(
                map.iter()
                    .map(|(k, v)| (k.clone(), PyValue::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// `d.get(key)` on a dict (the last pair wins, as duplicates are merged on read).
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Dict(pairs) => pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `bool(x)`.
    pub fn is_truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(d) => d != "0",
            PyValue::Float(f) => *f != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::List(items) => !items.is_empty(),
            PyValue::Dict(pairs) => !pairs.is_empty(),
        }
    }

    /// `str(x)`.
    pub fn to_str(&self) -> String {
        match self {
            PyValue::Str(s) => s.clone(),
            other => other.to_repr(),
        }
    }

    /// `repr(x)`.
    pub(crate) fn to_repr(&self) -> String {
        let mut out = String::new();
        self.push_repr(&mut out);
        out
    }

    fn push_repr(&self, out: &mut String) {
        match self {
            PyValue::None => out.push_str("None"),
            PyValue::Bool(true) => out.push_str("True"),
            PyValue::Bool(false) => out.push_str("False"),
            PyValue::Int(d) => out.push_str(d),
            PyValue::Float(f) => out.push_str(&repr_float(*f)),
            PyValue::Str(s) => push_repr(out, s),
            PyValue::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.push_repr(out);
                }
                out.push(']');
            }
            PyValue::Dict(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    push_repr(out, k);
                    out.push_str(": ");
                    v.push_repr(out);
                }
                out.push('}');
            }
        }
    }
}

/// `bool(x)` of a JSON value.
pub fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => number(n).is_truthy(),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// `str(x)` of a JSON value (a string is itself).
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr_of(other),
    }
}

/// `repr(x)` of a JSON value.
pub fn repr_of(v: &Value) -> String {
    let mut out = String::new();
    push_repr_json(&mut out, v);
    out
}

/// Written without building a `PyValue`, since messages hold large strings.
fn push_repr_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => number(n).push_repr(out),
        Value::String(s) => push_repr(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_repr_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_repr(out, k);
                out.push_str(": ");
                push_repr_json(out, v);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn str_of_json_matches_python() {
        // str(json.loads(text)) in CPython 3.11
        let cases = [
            (r#""plain""#, "plain"),
            ("-0", "0"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1E2", "100.0"),
            ("1e400", "inf"),
            ("-0.0", "-0.0"),
            ("1.5e-7", "1.5e-07"),
            ("null", "None"),
            ("true", "True"),
            (
                r#"{"role": "tool", "content": [{"type": "text", "text": "it's"}], "n": 1.0, "z": null}"#,
                r#"{'role': 'tool', 'content': [{'type': 'text', 'text': "it's"}], 'n': 1.0, 'z': None}"#,
            ),
            (r#"["a\nb", false, [], {}]"#, r"['a\nb', False, [], {}]"),
        ];
        for (json, want) in cases {
            assert_eq!(str_of(&v(json)), want, "{json}");
            assert_eq!(PyValue::from_json(&v(json)).to_str(), want, "{json}");
        }
    }

    #[test]
    fn truthiness_matches_python() {
        for (json, want) in [
            ("0", false),
            ("0.0", false),
            ("-0", false),
            ("1e-400", false),
            ("0.5", true),
            ("\"\"", false),
            ("\" \"", true),
            ("[]", false),
            ("{}", false),
            ("null", false),
            ("false", false),
        ] {
            assert_eq!(is_truthy(&v(json)), want, "{json}");
        }
    }

    #[test]
    fn get_takes_the_last_duplicate() {
        let d = PyValue::Dict(vec![
            ("a".into(), PyValue::Int("1".into())),
            ("a".into(), PyValue::Int("2".into())),
        ]);
        assert_eq!(d.get("a"), Some(&PyValue::Int("2".into())));
        assert_eq!(d.get("b"), None);
    }
}
