//! Credentials by parameter name: form-urlencoded bodies (`_redact_form_body`) and, in
//! the memory mode only, URL query/fragment parameters and `user:pass@` userinfo
//! (`_redact_strict_url_credentials`).
//!
//! The strict mode compares a parameter name after hermes's canonicalisation: up to three
//! rounds of `unquote_plus`, then `casefold()`, then `-` → `_`. Only equality with an
//! ASCII name matters, so casefolding needs just the non-ASCII characters whose folding
//! is all ASCII (`ß`, `ſ`, the Kelvin sign, the `ﬀ`–`ﬆ` ligatures: computed from CPython
//! 3.11); any other non-ASCII character can never produce a match and is kept as is.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::classes::space;
use crate::py::strip;

/// hermes's `_SENSITIVE_QUERY_PARAMS` (`x-amz-signature` can never equal a canonical
/// name, whose dashes became underscores; kept as hermes has it).
const QUERY_PARAMS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "api_key",
    "apikey",
    "client_secret",
    "password",
    "auth",
    "jwt",
    "session",
    "secret",
    "key",
    "code",
    "signature",
    "x-amz-signature",
];

fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("redaction pattern")
}

static FORM_BODY: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!(
        "^[A-Za-z_][A-Za-z0-9_.-]*=[^&{s}]*(?:&[A-Za-z_][A-Za-z0-9_.-]*=[^&{s}]*)+$"
    ))
});

static STRICT_PARAM: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!("([?#&;])([A-Za-z0-9_.~+%\\-]+)=([^#&;{s}\"'<>]*)"))
});

static STRICT_USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!("((?:[A-Za-z][A-Za-z0-9+.-]*:)?//)([^/{s}?#@]+)@"))
});

/// `_redact_query_string`: `key=***` for each pair whose lower-cased key is sensitive.
fn redact_query(query: &str) -> String {
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if QUERY_PARAMS.contains(&key.to_lowercase().as_str()) => {
                format!("{key}=***")
            }
            _ => pair.to_string(),
        })
        .collect();
    pairs.join("&")
}

/// A text that is nothing but one `k=v&k=v` line (surrounding spaces stripped) has its
/// sensitive values masked; the stripped text is what comes back, as in hermes.
pub(crate) fn form_body(text: &str) -> Option<String> {
    if text.contains('\n') || !text.contains('&') {
        return None;
    }
    let body = strip(text);
    if !FORM_BODY.is_match(body) {
        return None;
    }
    let out = redact_query(body);
    (out != text).then_some(out)
}

/// Python's `unquote_plus` (UTF-8, errors replaced): `+` is a space, `%XX` a byte, bytes
/// decoded per run of ASCII characters.
fn unquote_plus(s: &str) -> String {
    let s = s.replace('+', " ");
    if !s.contains('%') {
        return s;
    }
    let mut out = String::new();
    let mut bytes = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !c.is_ascii() {
            out.push_str(&String::from_utf8_lossy(&bytes));
            bytes.clear();
            out.push(c);
            continue;
        }
        let hex = s
            .get(i + 1..i + 3)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        match (c, hex) {
            ('%', Some(h)) => {
                bytes.push(u8::from_str_radix(h, 16).unwrap_or(b'%'));
                chars.next();
                chars.next();
            }
            _ => bytes.push(c as u8),
        }
    }
    out.push_str(&String::from_utf8_lossy(&bytes));
    out
}

/// `casefold()` where it can matter (see the module documentation).
fn casefold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            'ß' | 'ẞ' => out.push_str("ss"),
            'ſ' => out.push('s'),
            'K' => out.push('k'),
            'ﬀ' => out.push_str("ff"),
            'ﬁ' => out.push_str("fi"),
            'ﬂ' => out.push_str("fl"),
            'ﬃ' => out.push_str("ffi"),
            'ﬄ' => out.push_str("ffl"),
            'ﬅ' | 'ﬆ' => out.push_str("st"),
            _ => out.push(c.to_ascii_lowercase()),
        }
    }
    out
}

/// `_canonical_url_param_name`.
fn canonical(name: &str) -> String {
    let mut decoded = name.to_string();
    for _ in 0..3 {
        let next = unquote_plus(&decoded);
        if next == decoded {
            break;
        }
        decoded = next;
    }
    casefold(&decoded).replace('-', "_")
}

/// Sensitive URL parameters become `name=***`; `user:pass@` becomes `user:***@` and a
/// bare `token@` becomes `***@`.
pub(crate) fn strict_credentials(text: &str) -> Option<String> {
    let params = match STRICT_PARAM.replace_all(text, |caps: &Captures| {
        if QUERY_PARAMS.contains(&canonical(&caps[2]).as_str()) {
            format!("{}{}=***", &caps[1], &caps[2])
        } else {
            caps[0].to_string()
        }
    }) {
        Cow::Owned(s) if s != text => Some(s),
        _ => None,
    };
    let base = params.as_deref().unwrap_or(text);
    let userinfo =
        match STRICT_USERINFO.replace_all(base, |caps: &Captures| match caps[2].split_once(':') {
            Some((user, _)) => format!("{}{user}:***@", &caps[1]),
            None => format!("{}***@", &caps[1]),
        }) {
            Cow::Owned(s) => Some(s),
            Cow::Borrowed(_) => None,
        };
    userinfo.or(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values: hermes's _redact_form_body / _redact_strict_url_credentials.
    #[test]
    fn form_bodies() {
        assert_eq!(
            form_body(" grant_type=password&password=hunter2&Client_Secret=x&token_count=3 ")
                .as_deref(),
            Some("grant_type=password&password=***&Client_Secret=***&token_count=3")
        );
        assert_eq!(form_body("a=1&b=2 c=3"), None);
        assert_eq!(form_body("a=1&b=2\n"), None);
        assert_eq!(form_body("a=1&b=2").as_deref(), None);
        // Stripped even when nothing is sensitive.
        assert_eq!(form_body(" a=1&b=2").as_deref(), Some("a=1&b=2"));
    }

    #[test]
    fn canonical_names() {
        assert_eq!(canonical("Access-Token"), "access_token");
        assert_eq!(canonical("%2561pi_key"), "api_key");
        assert_eq!(canonical("pa%C3%9Fword"), "password");
        assert_eq!(canonical("%C5%BFecret"), "secret");
        assert_eq!(canonical("to+ken"), "to ken");
        assert_eq!(canonical("%zz%C3"), "%zz\u{fffd}");
        // Three rounds only: %25252561 -> %252561 -> %2561 -> %61.
        assert_eq!(canonical("%25252561uth"), "%61uth");
    }

    #[test]
    fn strict_urls() {
        assert_eq!(
            strict_credentials("see https://u:p4ss@h.io/cb?code=abc&state=xyz#access_token=t;id=1")
                .as_deref(),
            Some("see https://u:***@h.io/cb?code=***&state=xyz#access_token=***;id=1")
        );
        assert_eq!(
            strict_credentials("//tok@host and mailto:a@b").as_deref(),
            Some("//***@host and mailto:a@b")
        );
        assert_eq!(strict_credentials("?state=1&page=2"), None);
    }
}
