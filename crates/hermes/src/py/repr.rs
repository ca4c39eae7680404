//! `repr(str)`: how Python quotes a string inside `str()` of a list or dict.

use super::{in_table, tables};
use std::fmt::Write;

/// Whether `repr` writes `c` as itself (`str.isprintable`).
pub(crate) fn is_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !in_table(tables::NOT_PRINTABLE, c)
}

/// `repr(s)`: `'…'`, or `"…"` when the text holds `'` and no `"`.
pub fn repr_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_repr(&mut out, s);
    out
}

/// Appends `repr(s)` to `out`.
pub(crate) fn push_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_follow_python() {
        assert_eq!(repr_str("abc"), "'abc'");
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_str("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(repr_str("a\\b"), "'a\\\\b'");
    }

    #[test]
    fn escapes_follow_python() {
        // repr('\t\n\r\x00\x7f\x85\xa0\xad\u200b\u2028\ue000\U000e0001 é😀\u0378')
        assert_eq!(
            repr_str("\t\n\r\0\x7f\u{85}\u{a0}\u{ad}\u{200b}\u{2028}\u{e000}\u{e0001} é😀\u{378}"),
            "'\\t\\n\\r\\x00\\x7f\\x85\\xa0\\xad\\u200b\\u2028\\ue000\\U000e0001 é😀\\u0378'"
        );
    }

    #[test]
    fn unassigned_in_unicode_14_counts_as_unprintable() {
        // U+1FAE8 (shaking face) arrived in Unicode 15: CPython 3.11 escapes it.
        assert_eq!(repr_str("\u{1fae8}"), "'\\U0001fae8'");
    }
}
