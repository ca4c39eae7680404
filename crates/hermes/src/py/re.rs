//! Python `re` patterns on `str`, compiled for Rust with CPython 3.11's classes.
//!
//! hermes's patterns are written for Python: `\s` is `str.isspace`, `\d` is
//! `str.isdecimal`, `\w` is `str.isalnum` or `_`, and `\b` is a change between `\w`
//! and not `\w`. The `regex` crate's Unicode classes differ (marks count as word
//! characters there, U+001C–1F are not spaces), so [`compile`] rewrites those escapes
//! into explicit classes from the generated tables, and `\Z` into `\z`. A `$` outside
//! multi-line mode also matches before a final newline, as in Python. Look-around and
//! back-references go to `fancy_regex`, which hands everything else to `regex`.

use super::tables;
use fancy_regex::Regex;
use std::fmt::Write;
use std::sync::LazyLock;

static SPACE: LazyLock<String> = LazyLock::new(|| class_members(tables::SPACE));
static DIGIT: LazyLock<String> = LazyLock::new(|| class_members(tables::DIGIT));
static WORD: LazyLock<String> = LazyLock::new(|| class_members(tables::WORD));

/// A range table written as the inside of a `regex` class (`\x{..}-\x{..}…`).
pub(crate) fn class_members(table: &[(u32, u32)]) -> String {
    let mut out = String::new();
    for &(lo, hi) in table {
        if lo == hi {
            let _ = write!(out, "\\x{{{lo:X}}}");
        } else {
            let _ = write!(out, "\\x{{{lo:X}}}-\\x{{{hi:X}}}");
        }
    }
    out
}

/// Compiles a Python pattern (flags inline, e.g. `(?is)…`). Panics on a pattern that
/// does not compile: patterns are constants of this crate, checked by its tests.
pub(crate) fn compile(python_pattern: &str) -> Regex {
    let translated = translate(python_pattern);
    Regex::new(&translated).unwrap_or_else(|e| panic!("pattern {python_pattern:?}: {e}"))
}

/// The pattern rewritten for `fancy_regex` (see the module documentation).
pub(crate) fn translate(p: &str) -> String {
    let flags = leading_flags(p);
    let multiline = flags.contains('m');
    let ignore_case = flags.contains('i');
    let word = &*WORD;
    let mut out = String::with_capacity(p.len() * 2);
    // The leading flags group is copied as it is (its letters are not literals).
    let body = match flags {
        "" => p,
        f => {
            out.push_str(&p[..f.len() + 3]);
            &p[f.len() + 3..]
        }
    };
    let mut chars = body.chars().peekable();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let at_class_start = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let class = match e {
                    's' | 'S' => Some(&*SPACE),
                    'd' | 'D' => Some(&*DIGIT),
                    'w' | 'W' => Some(word),
                    _ => None,
                };
                match (class, in_class) {
                    (Some(set), false) if e.is_lowercase() => {
                        let _ = write!(out, "[{set}]");
                    }
                    (Some(set), false) => {
                        let _ = write!(out, "[^{set}]");
                    }
                    (Some(set), true) if e.is_lowercase() => out.push_str(set),
                    // Nested negated class inside a class: a union in `regex` syntax.
                    (Some(set), true) => {
                        let _ = write!(out, "[^{set}]");
                    }
                    (None, false) if e == 'b' => {
                        let _ = write!(
                            out,
                            "(?:(?<=[{word}])(?![{word}])|(?<![{word}])(?=[{word}]))"
                        );
                    }
                    (None, false) if e == 'B' => {
                        let _ = write!(
                            out,
                            "(?:(?<=[{word}])(?=[{word}])|(?<![{word}])(?![{word}]))"
                        );
                    }
                    (None, false) if e == 'Z' => out.push_str("\\z"),
                    _ => {
                        out.push('\\');
                        out.push(e);
                        // `\x{..}`, `\p{..}`, `\N{..}`: the braces are the escape's.
                        if chars.peek() == Some(&'{') {
                            for b in chars.by_ref() {
                                out.push(b);
                                if b == '}' {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                class_start = true;
            }
            ']' if in_class && !at_class_start => {
                in_class = false;
                out.push(']');
            }
            // Literal in Python classes, operators or nesting in `regex` classes.
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            ']' if in_class => out.push_str("\\]"),
            // A group's header (`(?P<name>`, `(?=`, `(?:`) is syntax, not literals.
            '(' if !in_class && chars.peek() == Some(&'?') => {
                out.push('(');
                for h in chars.by_ref() {
                    out.push(h);
                    if matches!(h, ':' | '=' | '!' | '>' | ')') {
                        break;
                    }
                }
            }
            '$' if !in_class && !multiline => out.push_str("(?:(?=\\n\\z)|\\z)"),
            // Python's IGNORECASE compares lowercased code points, so `i` also meets
            // U+0130 and U+0131, `k` the Kelvin sign and `s` the long s, which simple case
            // folding (the `regex` crate's) leaves apart.
            'i' | 'I' if ignore_case && !in_class => out.push_str("[iIİı]"),
            'k' | 'K' if ignore_case && !in_class => out.push_str("[kKK]"),
            's' | 'S' if ignore_case && !in_class => out.push_str("[sSſ]"),
            c => out.push(c),
        }
    }
    out
}

/// The flag letters of a leading `(?…)` group.
fn leading_flags(p: &str) -> &str {
    p.strip_prefix("(?")
        .and_then(|rest| rest.split_once(')'))
        .map(|(flags, _)| flags)
        .filter(|flags| flags.chars().all(|c| c.is_ascii_alphabetic()))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &str, text: &str) -> Vec<String> {
        compile(p)
            .find_iter(text)
            .map(|m| m.unwrap().as_str().to_string())
            .collect()
    }

    #[test]
    fn classes_are_pythons() {
        // re.findall(r"\s+", "a\x1c\x1fb\u200bc\u3000d") == ['\x1c\x1f', '\u3000']
        assert_eq!(
            all(r"\s+", "a\x1c\x1fb\u{200b}c\u{3000}d"),
            ["\x1c\x1f", "\u{3000}"]
        );
        // re.findall(r"\w+", "e\u0301x_1 ٣") == ['e', 'x_1', '٣']  (marks are not \w)
        assert_eq!(all(r"\w+", "e\u{301}x_1 ٣"), ["e", "x_1", "٣"]);
        // re.findall(r"\d", "1²٣") == ['1', '٣']  (superscripts are not decimal)
        assert_eq!(all(r"\d", "1²٣"), ["1", "٣"]);
        assert_eq!(all(r"[^\s`]+", "a`b c"), ["a", "b", "c"]);
        assert_eq!(all(r"[\S]+", "ab c"), ["ab", "c"]);
    }

    #[test]
    fn word_boundaries_are_pythons() {
        // re.findall(r"<think\b[^>]*>", "<think\u0301> <thinker> <think x>")
        assert_eq!(
            all(r"<think\b[^>]*>", "<think\u{301}> <thinker> <think x>"),
            ["<think\u{301}>", "<think x>"]
        );
        assert_eq!(
            all(r"(?i)\bERROR\b", "error errors x-Error"),
            ["error", "Error"]
        );
        assert_eq!(all(r"a\B", "ab a"), ["a"]);
    }

    #[test]
    fn ignore_case_lowercases_as_python_does() {
        // re.findall(r"failed|kind|is", "faİled FAıLED Kınd ſ", re.I) in CPython 3.11
        assert_eq!(
            all(r"(?i)failed|kind|is", "faİled FAıLED \u{212a}ınd ıſ"),
            ["faİled", "FAıLED", "\u{212a}ınd", "ıſ"]
        );
        // Classes fold by simple case folding (`[i]` meets `I`, not U+0130).
        assert_eq!(all(r"(?i)\s[i]", " I i"), [" I", " i"]);
    }

    #[test]
    fn end_anchors_are_pythons() {
        // re.findall(r"x$", "x\n") == ['x']; re.search(r"x\Z", "x\n") is None
        assert_eq!(all(r"x$", "x\n"), ["x"]);
        assert!(all(r"x\Z", "x\n").is_empty());
        assert_eq!(all(r"(?m)x$", "x\nx\n"), ["x", "x"]);
    }

    #[test]
    fn class_literals_stay_literal() {
        assert_eq!(all(r"[[&~]+", "a[&~b"), ["[&~"]);
        assert_eq!(all(r"[]a]+", "b]a]"), ["]a]"]);
    }
}
