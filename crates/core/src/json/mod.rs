//! JSON text, read by hand where serde_json would be slower or would lose what the
//! caller needs: the bottom layer, importing nothing from the rest of the crate.
//!
//! * `lexer`: one cursor over JSON text (whitespace, strings, keys, numbers,
//!   literals, objects and arrays). In its strict mode it accepts a conservative
//!   subset of what serde_json accepts and answers `None` for everything else, so
//!   serde_json stays the single source of parse results and error messages for
//!   unusual input; in its trusted mode it walks text a parser already accepted.
//!   The session entry reader (`session::entry::scan`) and the `JSON.stringify`
//!   transcoder (`compaction::stringify`) are both built on it.
//! * [`string`]: the bodies of string literals: escapes, decoding, UTF-16 lengths
//!   (JavaScript's `String.length`), lone surrogates.
//! * [`lines`]: the lines of a JSONL text, with whether each holds a control byte
//!   (what the strict lexer needs to know), found in one pass.
//! * [`lenient`]: finding the end of a JSON-ish value inside plain text (tool
//!   arguments as the serialized conversation shows them), where the text is not JSON.
//!
//! Design decisions: no value tree is ever built here (callers keep borrowed slices
//! of the input), and every reader is byte-oriented with SIMD searches for the
//! quotes and backslashes that end string runs, because session files are mostly
//! long strings.

mod blocks;
pub(crate) mod escaped;
pub mod lenient;
pub(crate) mod lexer;
pub mod lines;
#[cfg(test)]
pub(crate) mod mutations;
pub mod string;
pub(crate) mod transcode;
pub mod write;

pub use lexer::Lexer;
pub use string::utf16_len;

/// Reads valid JSON text as a `serde_json::Value`. Lone surrogate escapes (valid JSON,
/// but not representable in a Rust string) become U+FFFD; text that is not JSON
/// reads as `null`.
pub fn value_of_str(raw: &str) -> serde_json::Value {
    match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(_) => serde_json::from_str(&string::replace_lone_surrogates(raw))
            .unwrap_or(serde_json::Value::Null),
    }
}

/// Deepest nesting of arrays and objects in valid JSON text (brackets inside strings
/// do not count).
pub fn max_depth(json: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for &b in json.as_bytes() {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_depth_ignores_brackets_in_strings() {
        assert_eq!(max_depth(r#"{"a":"[[[[\\\"{{","b":[[1],{"c":[]}]}"#), 4);
        assert_eq!(max_depth("[]"), 1);
        assert_eq!(max_depth("5"), 0);
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let v = value_of_str(r#"{"a":"x\ud800y","b":"\ud83d\ude00"}"#);
        assert_eq!(v["a"], "x\u{FFFD}y");
        assert_eq!(v["b"], "😀");
        assert_eq!(value_of_str("{"), serde_json::Value::Null);
    }
}
