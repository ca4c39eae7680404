//! The masks hermes writes in place of a secret (`_mask_token`, and the phone mask).
//!
//! Lengths and slices count code points, as Python's do.

/// `_mask_token`: `***` for a value under 18 characters, else its first 6 and last 4
/// characters around `...`.
pub fn token(value: &str) -> String {
    let n = value.chars().count();
    if n < 18 {
        return "***".to_string();
    }
    keep_ends(value, n, 6, "...", 4)
}

/// The E.164 mask: `+1****89` for a number of at most 8 characters, else the first 4 and
/// last 4 around `****`.
pub(crate) fn phone(number: &str) -> String {
    let n = number.chars().count();
    if n <= 8 {
        keep_ends(number, n, 2, "****", 2)
    } else {
        keep_ends(number, n, 4, "****", 4)
    }
}

/// `s[:head] + middle + s[-tail:]` for `s` of `n` code points (`n >= head, tail`).
fn keep_ends(s: &str, n: usize, head: usize, middle: &str, tail: usize) -> String {
    let mut out: String = s.chars().take(head).collect();
    out.push_str(middle);
    out.extend(s.chars().skip(n.saturating_sub(tail)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_floor_is_18_code_points() {
        // _mask_token('a'*17) == '***'; _mask_token('abcdefghijklmnopqr') == 'abcdef...opqr'
        assert_eq!(token(""), "***");
        assert_eq!(token(&"a".repeat(17)), "***");
        assert_eq!(token("abcdefghijklmnopqr"), "abcdef...opqr");
        // 18 code points, 36 bytes: _mask_token('é'*18) == 'éééééé...éééé'
        assert_eq!(token(&"é".repeat(18)), "éééééé...éééé");
    }

    #[test]
    fn phone_keeps_two_or_four_each_side() {
        assert_eq!(phone("+1234567"), "+1****67");
        assert_eq!(phone("+14155552671"), "+141****2671");
    }
}
