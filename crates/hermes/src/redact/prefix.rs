//! Vendor-prefixed keys (`sk-…`, `ghp_…`, `AIza…`: hermes's `_PREFIX_RE`).
//!
//! hermes joins about forty `prefix + [class]{n,}` alternatives into one pattern fenced by
//! a look-behind and a look-ahead on `[A-Za-z0-9_-]`. The `regex` crate has neither, so
//! this is a small scanner that reproduces the backtracking exactly: at a start position
//! the alternatives are tried in hermes's order; each takes its longest run (greedy), then
//! gives back characters until the look-ahead holds. The first alternative that succeeds
//! decides the span, and the span decides the mask, so order matters (`sk_live_` before
//! `sk_`). Candidate starts are found with one literal alternation (a fast substring
//! search), and a failed candidate resumes one character later, since prefixes overlap
//! (`gsk_` holds `sk_`).

use std::sync::LazyLock;

use super::classes::is_digit;
use super::mask;

/// The characters a key may continue with (`[…]` of each alternative).
#[derive(Clone, Copy)]
enum Class {
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Za-z0-9_]`
    AlnumUnderscore,
    /// `[A-Za-z0-9_-]`
    AlnumUnderscoreDash,
    /// `[A-Za-z0-9-]`
    AlnumDash,
    /// `[A-Za-z0-9_=-]`
    AlnumUnderscoreEqualsDash,
    /// `[A-Z0-9]`
    UpperDigit,
}

impl Class {
    fn has(self, c: char) -> bool {
        let an = c.is_ascii_alphanumeric();
        match self {
            Class::Alnum => an,
            Class::AlnumUnderscore => an || c == '_',
            Class::AlnumUnderscoreDash => an || c == '_' || c == '-',
            Class::AlnumDash => an || c == '-',
            Class::AlnumUnderscoreEqualsDash => an || c == '_' || c == '-' || c == '=',
            Class::UpperDigit => c.is_ascii_uppercase() || c.is_ascii_digit(),
        }
    }
}

/// One alternative: `literal`, for Slack app tokens `\d+-`, then `class{min,max}`.
struct Alt {
    literal: &'static str,
    digits_dash: bool,
    class: Class,
    min: usize,
    max: usize,
}

const fn alt(literal: &'static str, class: Class, min: usize) -> Alt {
    Alt {
        literal,
        digits_dash: false,
        class,
        min,
        max: usize::MAX,
    }
}

use Class::*;

/// hermes's `_PREFIX_PATTERNS`, in order (`xox[baprs]-` spelled out: at most one of the
/// five can match at a position, so their relative order is free).
const ALTS: &[Alt] = &[
    alt("sk-", AlnumUnderscoreDash, 10),
    alt("ghp_", Alnum, 10),
    alt("github_pat_", AlnumUnderscore, 10),
    alt("gho_", Alnum, 10),
    alt("ghu_", Alnum, 10),
    alt("ghs_", Alnum, 10),
    alt("ghr_", Alnum, 10),
    Alt {
        literal: "xapp-",
        digits_dash: true,
        class: AlnumDash,
        min: 10,
        max: usize::MAX,
    },
    alt("xoxb-", AlnumDash, 10),
    alt("xoxa-", AlnumDash, 10),
    alt("xoxp-", AlnumDash, 10),
    alt("xoxr-", AlnumDash, 10),
    alt("xoxs-", AlnumDash, 10),
    alt("AIza", AlnumUnderscoreDash, 30),
    alt("pplx-", Alnum, 10),
    alt("fal_", AlnumUnderscoreDash, 10),
    alt("fc-", Alnum, 10),
    alt("bb_live_", AlnumUnderscoreDash, 10),
    alt("gAAAA", AlnumUnderscoreEqualsDash, 20),
    Alt {
        literal: "AKIA",
        digits_dash: false,
        class: UpperDigit,
        min: 16,
        max: 16,
    },
    alt("sk_live_", Alnum, 10),
    alt("sk_test_", Alnum, 10),
    alt("rk_live_", Alnum, 10),
    alt("SG.", AlnumUnderscoreDash, 10),
    alt("hf_", Alnum, 10),
    alt("r8_", Alnum, 10),
    alt("npm_", Alnum, 10),
    alt("pypi-", AlnumUnderscoreDash, 10),
    alt("dop_v1_", Alnum, 10),
    alt("doo_v1_", Alnum, 10),
    alt("am_", AlnumUnderscoreDash, 10),
    alt("sk_", AlnumUnderscore, 10),
    alt("tvly-", Alnum, 10),
    alt("exa_", Alnum, 10),
    alt("gsk_", Alnum, 10),
    alt("syt_", Alnum, 10),
    alt("retaindb_", Alnum, 10),
    alt("hsk-", Alnum, 10),
    alt("mem0_", Alnum, 10),
    alt("brv_", Alnum, 10),
    alt("xai-", Alnum, 30),
    alt("ntn_", Alnum, 10),
    alt("fw-", Alnum, 30),
    alt("fw_", Alnum, 30),
    alt("fpk_", Alnum, 30),
];

/// The look-around class `[A-Za-z0-9_-]`.
fn fence(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

static CANDIDATES: LazyLock<regex::Regex> = LazyLock::new(|| {
    let lits: Vec<String> = ALTS.iter().map(|a| regex::escape(a.literal)).collect();
    regex::Regex::new(&lits.join("|")).expect("literal alternation")
});

/// The byte length of the key `alt` matches at the start of `rest`, if any.
fn try_alt(alt: &Alt, rest: &str) -> Option<usize> {
    let mut body = rest.strip_prefix(alt.literal)?;
    if alt.digits_dash {
        let digits: usize = body
            .chars()
            .take_while(|&c| is_digit(c))
            .map(char::len_utf8)
            .sum();
        if digits == 0 {
            return None;
        }
        body = body[digits..].strip_prefix('-')?;
    }
    let head = rest.len() - body.len();
    // Byte offsets after each character of the greedy run (all ASCII, but stay general).
    let mut ends = Vec::new();
    let mut end = 0;
    for c in body.chars() {
        if ends.len() == alt.max || !alt.class.has(c) {
            break;
        }
        end += c.len_utf8();
        ends.push(end);
    }
    // Give back characters until the look-ahead holds.
    for k in (alt.min..=ends.len()).rev() {
        let at = if k == 0 { 0 } else { ends[k - 1] };
        if !body[at..].chars().next().is_some_and(fence) {
            return Some(head + at);
        }
    }
    None
}

/// Masks every vendor-prefixed key; `None` when there is none.
pub fn redact(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut pos = 0;
    while let Some(m) = CANDIDATES.find_at(text, pos) {
        let start = m.start();
        let behind_ok = !text[..start].chars().next_back().is_some_and(fence);
        let found = if behind_ok {
            ALTS.iter().find_map(|a| try_alt(a, &text[start..]))
        } else {
            None
        };
        match found {
            Some(len) => {
                out.push_str(&text[copied..start]);
                out.push_str(&mask::token(&text[start..start + len]));
                copied = start + len;
                pos = copied;
            }
            None => {
                pos = start + text[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
        if pos >= text.len() {
            break;
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact(s).unwrap_or_else(|| s.to_string())
    }

    // Expected values: hermes's _PREFIX_RE.sub(lambda m: _mask_token(m.group(1)), s).
    #[test]
    fn keys_are_masked_keeping_six_and_four() {
        assert_eq!(
            r("key sk-proj-AbCdEfGhIjKlMnOpQrStUv12 end"),
            "key sk-pro...Uv12 end"
        );
        assert_eq!(
            r("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
            "ghp_16...8B4a"
        );
        assert_eq!(r("AKIAIOSFODNN7EXAMPLE"), "AKIAIO...MPLE");
        assert_eq!(r("xoxb-1234567890-abcdefghij"), "xoxb-1...ghij");
    }

    #[test]
    fn short_keys_become_three_stars() {
        // 'hf_' + 10 characters = 13 < 18.
        assert_eq!(r("token hf_abcdefghij."), "token ***.");
    }

    #[test]
    fn fences_and_backtracking() {
        // Preceded by a word character: no match.
        assert_eq!(r("xsk-abcdefghijklmnop"), "xsk-abcdefghijklmnop");
        // ghp_ allows only alphanumerics; a following '_' defeats the look-ahead.
        assert_eq!(r("ghp_abcdefghijkl_x"), "ghp_abcdefghijkl_x");
        // AKIA takes exactly 16; a 17th upper-case character defeats it.
        assert_eq!(r("AKIAIOSFODNN7EXAMPLEX"), "AKIAIOSFODNN7EXAMPLEX");
        // sk_live_ fails on '_' in the body, sk_ then takes the whole run.
        assert_eq!(r("sk_live_abcdefghij_klmnop"), "sk_liv...mnop");
        // gAAAA: the run may end in '=' (not a fence character).
        assert_eq!(r("gAAAAABkZ3Rva2VuX2RhdGFfMTIzNDU2==."), "gAAAAA...U2==.");
        // gsk_ inside: the candidate at 'g' wins, 'sk_' at the next position is fenced.
        assert_eq!(r("gsk_abcdefghijklmnopqr"), "gsk_ab...opqr");
        // Slack app token: digits then '-'.
        assert_eq!(r("xapp-1-A0123456789-abcdefghijkl"), "xapp-1...ijkl");
        assert_eq!(r("xapp--abcdefghijklmnop"), "xapp--abcdefghijklmnop");
    }

    #[test]
    fn nothing_to_do_is_none() {
        assert_eq!(redact("plain words, sk- and ghp_ too short"), None);
    }
}
