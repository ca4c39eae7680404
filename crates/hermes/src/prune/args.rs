//! Pass 3's argument shrinking (hermes `_truncate_tool_call_args_json`): long string
//! leaves of a tool call's JSON arguments are cut inside the parsed structure, so the
//! arguments stay valid JSON for the provider.
//!
//! Design decision: parsing and printing are Python's `json.loads` and
//! `json.dumps(ensure_ascii=False)` ([`py::loads`], [`py::dumps`]), because re-serializing
//! alone changes the text (`{"a":1}` becomes `{"a": 1}`, `1E2` becomes `100.0`, duplicate
//! keys merge) and hermes replaces the arguments whenever the text differs.

use crate::py::{self, PyValue};

/// String leaves of shrunk arguments keep this many code points.
const ARG_STRING_KEEP: usize = 200;
/// Python 3.11's default `sys.get_int_max_str_digits()`.
const INT_MAX_STR_DIGITS: usize = 4300;

/// `_truncate_tool_call_args_json`: long string leaves cut, re-serialized with
/// `json.dumps(ensure_ascii=False)`; None when the arguments do not parse (then hermes
/// keeps them), including an integer over Python's 4300-digit conversion limit.
pub fn shrink_args(args: &str) -> Option<String> {
    let parsed = py::loads(args)?;
    if !fits_int_limit(&parsed) {
        return None;
    }
    Some(py::dumps(&shrink(parsed), false))
}

/// Every integer within Python 3.11's 4300-digit `int()` limit.
fn fits_int_limit(v: &PyValue) -> bool {
    match v {
        PyValue::Int(d) => d.trim_start_matches('-').len() <= INT_MAX_STR_DIGITS,
        PyValue::List(items) => items.iter().all(fits_int_limit),
        PyValue::Dict(entries) => entries.iter().all(|(_, v)| fits_int_limit(v)),
        _ => true,
    }
}

/// String leaves longer than 200 code points keep 200 + `...[truncated]`.
fn shrink(v: PyValue) -> PyValue {
    match v {
        PyValue::Str(s) if py::len(&s) > ARG_STRING_KEEP => {
            PyValue::Str(format!("{}...[truncated]", py::head(&s, ARG_STRING_KEEP)))
        }
        PyValue::List(items) => PyValue::List(items.into_iter().map(shrink).collect()),
        PyValue::Dict(entries) => {
            PyValue::Dict(entries.into_iter().map(|(k, v)| (k, shrink(v))).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    //! Expected texts come from hermes-agent 0.19.0's `_truncate_tool_call_args_json`.

    use super::*;

    fn x(c: &str, n: usize) -> String {
        c.repeat(n)
    }

    #[test]
    fn shrink_args_follows_json_dumps() {
        let long = |s: &str| format!(r#"{{"x":{s},"pad":"{}"}}"#, x("p", 500));
        let pad = format!("{}...[truncated]", x("p", 200));
        // Escapes become raw text, controls stay escaped, "/" is not escaped.
        assert_eq!(
            shrink_args(&long(r#""\u00e9\n\t\u0001\"\\/""#)),
            Some(format!(r#"{{"x": "é\n\t\u0001\"\\/", "pad": "{pad}"}}"#))
        );
        // Numbers as Python re-prints them; duplicate keys merge at the first position.
        let nums = r#"{"a": 1.0, "b": 1.5e300, "c": 0.0001, "d": 1e-05, "e": 1e16, "f": 123456789.123456789, "g": [1E2, 1e400, -0, 12345678901234567890, NaN, -Infinity, true, null]}"#;
        assert_eq!(
            shrink_args(nums),
            Some(r#"{"a": 1.0, "b": 1.5e+300, "c": 0.0001, "d": 1e-05, "e": 1e+16, "f": 123456789.12345679, "g": [100.0, Infinity, 0, 12345678901234567890, NaN, -Infinity, true, null]}"#.to_owned())
        );
        assert_eq!(
            shrink_args(&format!(r#"{{"a":1,"a":"{}","b":2}}"#, x("z", 600))),
            Some(format!(
                r#"{{"a": "{}...[truncated]", "b": 2}}"#,
                x("z", 200)
            ))
        );
        // The cut counts code points; keys are never cut; top-level strings and lists shrink.
        let s = format!("{}😀x\u{301}", x("é", 199));
        assert_eq!(
            shrink_args(&format!(r#"{{"{}": "{s}"}}"#, x("k", 300))),
            Some(format!(
                r#"{{"{}": "{}😀...[truncated]"}}"#,
                x("k", 300),
                x("é", 199)
            ))
        );
        assert_eq!(
            shrink_args(&format!(r#""{}""#, x("s", 600))),
            Some(format!(r#""{}...[truncated]""#, x("s", 200)))
        );
        assert_eq!(
            shrink_args(" \n{\"a\": 1}\n "),
            Some(r#"{"a": 1}"#.to_owned())
        );
        // Not JSON, trailing data, a raw tab, an integer over 4300 digits: kept as is.
        assert_eq!(shrink_args(&format!("not json {}", x("n", 600))), None);
        assert_eq!(
            shrink_args(&format!(r#"{{"a":"{}"}} trailing"#, x("x", 600))),
            None
        );
        assert_eq!(
            shrink_args(&format!("{{\"a\":\"{}\"}}", x("x\ty", 300))),
            None
        );
        assert_eq!(shrink_args(&format!(r#"{{"big":{}}}"#, x("9", 4301))), None);
        assert_eq!(
            shrink_args(&format!(r#"{{"big":{}}}"#, x("9", 600))),
            Some(format!(r#"{{"big": {}}}"#, x("9", 600)))
        );
    }
}
