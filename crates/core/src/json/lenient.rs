//! The end of a JSON-ish value inside plain text.
//!
//! The serialized conversation shows tool calls as `name(key=value, key=value)`, each
//! value written by `JSON.stringify`. Reading such a transcript back (the extractive
//! summarizer does), the text around a value is not JSON and the value itself may be
//! cut short or not JSON at all (a model's own prose), so this skip is lenient: it
//! balances brackets and skips strings, and a bare word ends at a `,` or `)` outside
//! brackets, where the transcript's next argument or the call's end begins.

/// The end (exclusive) of the value starting at byte `start` of `b`: after the closing
/// quote of a string, after the bracket that balances the first one, or at the first
/// `,` or `)` outside brackets for anything else (or at the end of the text). `None`
/// when a string or bracket is left open, a closing bracket has no opening one, or the
/// value would be empty.
pub fn value_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i + 1)?;
                if depth == 0 {
                    return Some(i);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' | b')' if depth == 0 => return (i > start).then_some(i),
            _ => {}
        }
        i += 1;
    }
    (depth == 0 && i > start).then_some(i)
}

/// After the closing quote of the string whose body starts at `i`. A backslash takes
/// the next byte with it, whatever it is.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::value_end;

    fn end(s: &str) -> Option<&str> {
        value_end(s.as_bytes(), 0).map(|e| &s[..e])
    }

    #[test]
    fn strings_end_at_their_closing_quote() {
        assert_eq!(end(r#""a, b) \" c", x=1"#), Some(r#""a, b) \" c""#));
        assert_eq!(end(r#""\\", x"#), Some(r#""\\""#));
        assert_eq!(end(r#""open"#), None);
        assert_eq!(end(r#""ends in a backslash\"#), None);
    }

    #[test]
    fn brackets_balance_whatever_is_inside() {
        assert_eq!(end(r#"{"a":[1,")"]}, b=2)"#), Some(r#"{"a":[1,")"]}"#));
        assert_eq!(end("[1,[2]],3"), Some("[1,[2]]"));
        assert_eq!(end("{(,)}"), Some("{(,)}"));
        assert_eq!(end("[1,2"), None);
        assert_eq!(end("]"), None);
    }

    #[test]
    fn bare_words_end_at_a_comma_or_parenthesis() {
        assert_eq!(end("12, b=3"), Some("12"));
        assert_eq!(end("true)"), Some("true"));
        assert_eq!(end("two words"), Some("two words"));
        assert_eq!(end("x}"), None);
        assert_eq!(end(",x"), None);
        assert_eq!(end(")"), None);
        assert_eq!(end(""), None);
        // A quote after a bare word: the string ends the value.
        assert_eq!(end(r#"ab"c,d"e"#), Some(r#"ab"c,d""#));
    }

    #[test]
    fn starts_anywhere_in_the_text() {
        let s = "f(a=1, b=[2])";
        assert_eq!(value_end(s.as_bytes(), 4), Some(5));
        assert_eq!(value_end(s.as_bytes(), 9), Some(12));
    }
}
