//! Python's `re` character classes, for the `regex` crate and for hand-written scanners.
//!
//! hermes's patterns are CPython 3.11 patterns on `str`: `\s` is `str.isspace`, `\d` is
//! `str.isdecimal`, `\w` is `str.isalnum` or `_`. The `regex` crate's own `\s`, `\d`, `\w`
//! differ from these (its `\w` lacks `²`, its `\s` lacks U+001C–U+001F), and a different
//! `\w` can move the boundary between an `Authorization` scheme word and the credential, so
//! the classes are spelled out from the generated tables of `py::tables`.
//!
//! Case-insensitive patterns: CPython's `IGNORECASE` lets an ASCII `i` also match `İ`
//! (U+0130) and `ı` (U+0131), which Unicode simple case folding (the `regex` crate) does
//! not; [`I`] and [`LETTERS`] add them back. `k`/`K` (Kelvin) and `s`/`ſ` agree already.

use crate::py::tables::{DIGIT, SPACE, WORD};

/// An ASCII `i` of a case-insensitive hermes pattern.
pub const I: &str = "[iIİı]";

/// The members `[A-Za-z]` gains under hermes's `IGNORECASE` beyond simple case folding;
/// append inside a class.
pub(crate) const LETTERS: &str = "A-Za-zİı";

/// Python `\d` on `str`.
pub(crate) fn is_digit(c: char) -> bool {
    crate::py::in_table(DIGIT, c)
}

/// Inside of a class for Python `\s` (combine: `format!("[^{}:]", space())`).
pub fn space() -> String {
    crate::py::re::class_members(SPACE)
}

/// Inside of a class for Python `\d`.
pub fn digit() -> String {
    crate::py::re::class_members(DIGIT)
}

/// Inside of a class for Python `\w`.
pub fn word() -> String {
    crate::py::re::class_members(WORD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_pythons() {
        // '٣'.isdecimal() True, '²'.isdecimal() False.
        assert!(is_digit('٣') && !is_digit('²') && is_digit('7'));
        let w = regex::Regex::new(&format!("^[{}]+$", word())).unwrap();
        // '²'.isalnum() is True in Python; the regex crate's \w says no.
        assert!(w.is_match("Bearer²_ß"));
        assert!(!w.is_match("a-b"));
        let s = regex::Regex::new(&format!("^[^{}]+$", space())).unwrap();
        assert!(s.is_match("abc\u{200b}") && !s.is_match("a\u{1f}b"));
    }

    #[test]
    fn ignorecase_i_matches_dotted_and_dotless() {
        // re.match('(?i)api', 'APİ') and re.match('(?i)api', 'apı') both match in CPython.
        let r = regex::Regex::new(&format!("^(?i)ap{I}$")).unwrap();
        assert!(r.is_match("APİ") && r.is_match("apı") && r.is_match("Api"));
    }
}
