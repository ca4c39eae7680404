//! Code-point lengths and slices, and the whitespace of `str.isspace`.

use super::{in_table, tables};

/// `len(s)`: code points.
pub fn len(s: &str) -> usize {
    s.chars().count()
}

/// `s[:n]`.
pub fn head(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s[-n:]` for `n > 0`; `""` for `n == 0` (Python's `s[-0:]` is the whole string,
/// a case hermes never reaches, so callers never rely on it).
pub fn last(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

/// `str.isspace()` for one code point.
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        return matches!(c, '\t'..='\r' | '\x1c'..='\x20');
    }
    in_table(tables::SPACE, c)
}

/// `s.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `s.lstrip()`.
pub fn lstrip(s: &str) -> &str {
    s.trim_start_matches(is_space)
}

/// `s.rstrip()`.
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// `" ".join(s.split())`.
pub fn collapse_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split(is_space).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `s.upper()`: the full mapping (`ß` → `SS`), as Rust's.
pub fn upper(s: &str) -> String {
    s.to_uppercase()
}

/// `f"{n:,}"`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_slices_count_code_points() {
        let s = "a😀é\u{301}z";
        assert_eq!(len(s), 5);
        assert_eq!(head(s, 2), "a😀");
        assert_eq!(head(s, 9), s);
        assert_eq!(last(s, 2), "\u{301}z");
        assert_eq!(last(s, 9), s);
        assert_eq!(last(s, 0), "");
    }

    #[test]
    fn whitespace_is_python_isspace() {
        // Python: '\x1c'..'\x1f' are spaces, U+200B and U+FEFF are not, U+0085 and U+3000 are.
        for c in [
            '\x1c', '\x1f', '\u{85}', '\u{a0}', '\u{2028}', '\u{3000}', '\u{180e}',
        ] {
            assert_eq!(is_space(c), c != '\u{180e}', "{c:?}");
        }
        assert!(!is_space('\u{200b}'));
        assert!(!is_space('\u{feff}'));
        assert_eq!(strip("\x1c a b \u{3000}"), "a b");
        assert_eq!(lstrip(" \u{200b}x "), "\u{200b}x ");
        assert_eq!(rstrip(" x\t\n"), " x");
        assert_eq!(collapse_spaces("  a \x1f\n b  "), "a b");
        assert_eq!(collapse_spaces(" \t "), "");
    }

    #[test]
    fn upper_and_thousands_match_python() {
        assert_eq!(upper("straße"), "STRASSE");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(12345678), "12,345,678");
    }
}
