//! Readers of single fields kept as raw JSON text: strings, numbers, JavaScript
//! truthiness, the message role, and serde reads that name the JSON pointer of a problem.

use std::borrow::Cow;

use serde::Deserialize;

use super::{RawJson, Role};
use crate::session::error::{pointer_of, strip_position, Origin, Violation};
use crate::session::text::Text;

/// Deserializes `raw`; on failure, parses again with path tracking (too slow for the
/// happy path) to name the JSON pointer of the problem.
pub(super) fn parse_tracked<'a, T: Deserialize<'a>>(raw: &'a str) -> Result<T, (String, String)> {
    serde_json::from_str(raw).map_err(|fast_err| {
        let mut de = serde_json::Deserializer::from_str(raw);
        match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(e) => (
                pointer_of(e.path()),
                strip_position(&e.inner().to_string()).to_string(),
            ),
            Ok(_) => (
                String::new(),
                strip_position(&fast_err.to_string()).to_string(),
            ),
        }
    })
}

/// A string field that may be absent or null.
pub(super) fn opt_str<'a>(raw: Option<RawJson<'a>>) -> Result<Option<Cow<'a, str>>, &'static str> {
    match raw {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => match Text::from_raw(r.get()) {
            Some(t) => Ok(Some(t.decode())),
            None => Err("must be a string"),
        },
    }
}

/// Pointers are built only when something is wrong (`ptr` is called on errors only).
pub(super) fn required_text<'a>(
    raw: Option<RawJson<'a>>,
    origin: Origin,
    ptr: impl FnOnce() -> String,
) -> Result<Text<'a>, Violation> {
    raw.and_then(|r| Text::from_raw(r.get()))
        .ok_or_else(|| origin.violation(&ptr(), "must be a string"))
}

pub(super) fn optional_text<'a>(
    raw: Option<RawJson<'a>>,
    origin: Origin,
    ptr: impl FnOnce() -> String,
) -> Result<Option<Text<'a>>, Violation> {
    match raw {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => Text::from_raw(r.get())
            .map(Some)
            .ok_or_else(|| origin.violation(&ptr(), "must be a string")),
    }
}

/// A header's `version`: absent or `null` (pi's `header.version ?? 1`) is `None`; else an
/// integer (`3`, `3.0`, `3e0`). Anything else is refused: taking `"3"` or `2.5` for some
/// version would migrate, and so rename, every entry of a file the client thinks current.
pub(super) fn version_of(raw: Option<RawJson>) -> Result<Option<f64>, &'static str> {
    match raw {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => match number_of(r) {
            Some(v) if v.is_finite() && v.fract() == 0.0 => Ok(Some(v)),
            _ => Err("`version` must be an integer (1, 2 or 3)"),
        },
    }
}

pub(super) fn number_of(raw: RawJson) -> Option<f64> {
    let s = raw.get();
    match s.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => s.parse().ok(),
        _ => None,
    }
}

/// JavaScript truthiness of a JSON value (absent counts as `undefined`).
pub fn truthy(raw: Option<RawJson>) -> bool {
    let Some(raw) = raw else { return false };
    match raw.get() {
        "null" | "false" | "\"\"" => false,
        s if s.starts_with('"') || s.starts_with('[') || s.starts_with('{') || s == "true" => true,
        s => s
            .parse::<f64>()
            .map(|f| f != 0.0 && !f.is_nan())
            .unwrap_or(true),
    }
}

pub(super) fn role_of(raw: Option<RawJson>) -> Role {
    match raw.map(RawJson::get) {
        Some("\"user\"") => Role::User,
        Some("\"assistant\"") => Role::Assistant,
        Some("\"toolResult\"") => Role::ToolResult,
        Some("\"bashExecution\"") => Role::BashExecution,
        Some("\"custom\"") => Role::Custom,
        Some("\"branchSummary\"") => Role::BranchSummary,
        Some("\"compactionSummary\"") => Role::CompactionSummary,
        Some("\"hookMessage\"") => Role::HookMessage,
        _ => Role::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javascript_truthiness() {
        let t = |s: &str| truthy(Some(RawJson(s)));
        assert!(!t("0") && !t("-0") && !t("\"\"") && !t("null") && !t("false") && !t("0.0"));
        assert!(t("1") && t("\"0\"") && t("[]") && t("{}") && t("true"));
        assert!(!truthy(None));
    }
}
