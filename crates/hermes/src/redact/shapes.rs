//! Credentials recognised by their shape: `Authorization` and API-key headers, Telegram
//! bot tokens, private-key blocks, database connection-string passwords,
//! `scheme://TOKEN@host` and JWTs (hermes's `_AUTH_HEADER_RE`, `_SECRET_HEADER_RE`,
//! `_TELEGRAM_RE`, `_PRIVATE_KEY_RE`, `_DB_CONNSTR_RE`, `_URL_BARE_TOKEN_RE`, `_JWT_RE`).
//!
//! None of these needs look-around or back-references, so each is one `regex` pattern
//! with Python's `\s`, `\d`, `\w` and `IGNORECASE` spelled out (see `classes`). The
//! `regex` crate's leftmost-first semantics pick the same spans and groups as Python's
//! backtracking engine for such patterns.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::classes::{digit, space, word, I, LETTERS};
use super::mask;

fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("redaction pattern")
}

fn changed(out: Cow<'_, str>) -> Option<String> {
    match out {
        Cow::Owned(s) => Some(s),
        Cow::Borrowed(_) => None,
    }
}

static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    let (s, w) = (space(), word());
    // The scheme word's `\w` is a class member, which IGNORECASE leaves alone in CPython.
    compile(&format!(
        "(?i)((?:Proxy-)?Author{I}zat{I}on:[{s}]*)([{LETTERS}](?-i:[{w}.+\\-])*[{s}]+)?([^{s}\"']+)"
    ))
});

static SECRET_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!(
        "(?i)((?:x-ap{I}-key|x-goog-ap{I}-key|ap{I}-key|ap{I}key|x-ap{I}-token|x-auth-token\
         |x-access-token)[{s}]*:[{s}]*)([^{s}]+)"
    ))
});

static TELEGRAM: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        "(bot)?([{}]{{8,}}):([-A-Za-z0-9_]{{30,}})",
        digit()
    ))
});

static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    compile("-----BEGIN[A-Z ]*PRIVATE KEY-----(?s:.)*?-----END[A-Z ]*PRIVATE KEY-----")
});

static DB_CONNSTR: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!(
        "(?i)((?:postgres(?:ql)?|mysql|mongodb(?:\\+srv)?|red{I}s|amqp)://[^:{s}]+:)([^@{s}]+)@"
    ))
});

static URL_BARE_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!(
        "(?i)((?:https?|wss?|g{I}t|ssh|ftp|ftps|sftp)://)([^{s}:@/]{{8,}})(@[^{s}]+)"
    ))
});

static JWT: LazyLock<Regex> =
    LazyLock::new(|| compile("eyJ[A-Za-z0-9_-]{10,}(?:\\.[A-Za-z0-9_=-]{4,}){0,2}"));

/// `Authorization: <scheme> <credential>`: the credential is masked, the scheme kept.
pub(crate) fn auth_header(text: &str) -> Option<String> {
    changed(AUTH_HEADER.replace_all(text, |caps: &Captures| {
        let scheme = caps.get(2).map_or("", |m| m.as_str());
        format!("{}{scheme}{}", &caps[1], mask::token(&caps[3]))
    }))
}

/// `x-api-key: …` and its kin.
pub(crate) fn secret_header(text: &str) -> Option<String> {
    changed(SECRET_HEADER.replace_all(text, |caps: &Captures| {
        format!("{}{}", &caps[1], mask::token(&caps[2]))
    }))
}

/// `bot123456789:AA…` becomes `bot123456789:***`.
pub(crate) fn telegram(text: &str) -> Option<String> {
    changed(TELEGRAM.replace_all(text, |caps: &Captures| {
        let bot = caps.get(1).map_or("", |m| m.as_str());
        format!("{bot}{}:***", &caps[2])
    }))
}

/// A whole `-----BEGIN … PRIVATE KEY-----` block.
pub(crate) fn private_key(text: &str) -> Option<String> {
    changed(PRIVATE_KEY.replace_all(text, "[REDACTED PRIVATE KEY]"))
}

/// `postgres://user:PASSWORD@host` becomes `postgres://user:***@host`.
pub(crate) fn db_connstr(text: &str) -> Option<String> {
    changed(DB_CONNSTR.replace_all(text, |caps: &Captures| format!("{}***@", &caps[1])))
}

/// `https://TOKEN@host` (no `user:` part, 8+ characters).
pub(crate) fn url_bare_token(text: &str) -> Option<String> {
    changed(URL_BARE_TOKEN.replace_all(text, |caps: &Captures| {
        format!("{}{}{}", &caps[1], mask::token(&caps[2]), &caps[3])
    }))
}

/// JSON Web Tokens, one to three parts.
pub(crate) fn jwt(text: &str) -> Option<String> {
    changed(JWT.replace_all(text, |caps: &Captures| mask::token(&caps[0])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: fn(&str) -> Option<String>, s: &str) -> String {
        f(s).unwrap_or_else(|| s.to_string())
    }

    // Expected values: the matching hermes pattern's .sub(...) on the same strings.
    #[test]
    fn authorization_headers() {
        assert_eq!(
            run(
                auth_header,
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz"
            ),
            "Authorization: Bearer abcdef...wxyz"
        );
        assert_eq!(
            run(
                auth_header,
                "curl -H \"proxy-authorization: Basic dXNlcjpwYXNz\""
            ),
            "curl -H \"proxy-authorization: Basic ***\""
        );
        assert_eq!(
            run(auth_header, "AUTHORIZATION:tok_abcdefghijklmnopqrs"),
            "AUTHORIZATION:tok_ab...pqrs"
        );
        // '²'.isalnum(): Python's \w keeps "Bearer²" a scheme word.
        assert_eq!(
            run(auth_header, "Authorization: Bearer² opensesame"),
            "Authorization: Bearer² ***"
        );
        // A scheme with nothing after it is itself the credential.
        assert_eq!(
            run(auth_header, "Authorization: Bearer \""),
            "Authorization: *** \""
        );
    }

    #[test]
    fn api_key_headers() {
        assert_eq!(
            run(secret_header, "x-api-key: local-backend-key-123456"),
            "x-api-key: local-...3456"
        );
        assert_eq!(run(secret_header, "X-Auth-Token:abc"), "X-Auth-Token:***");
        assert_eq!(run(secret_header, "api_key: abc"), "api_key: abc");
    }

    #[test]
    fn telegram_tokens() {
        assert_eq!(
            run(telegram, "bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"),
            "bot123456789:***"
        );
        assert_eq!(
            run(telegram, "at 12345678:abcdefghijklmnopqrstuvwxyz0123 ok"),
            "at 12345678:*** ok"
        );
        assert_eq!(
            run(telegram, "1234567:abcdefghijklmnopqrstuvwxyz0123"),
            "1234567:abcdefghijklmnopqrstuvwxyz0123"
        );
    }

    #[test]
    fn private_key_blocks() {
        assert_eq!(
            run(
                private_key,
                "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb"
            ),
            "a\n[REDACTED PRIVATE KEY]\nb"
        );
        assert_eq!(
            run(
                private_key,
                "-----BEGIN PUBLIC KEY-----x-----END PUBLIC KEY-----"
            ),
            "-----BEGIN PUBLIC KEY-----x-----END PUBLIC KEY-----"
        );
    }

    #[test]
    fn connection_strings_and_url_tokens() {
        assert_eq!(
            run(db_connstr, "DSN postgresql://app:pa55word@db:5432/x"),
            "DSN postgresql://app:***@db:5432/x"
        );
        assert_eq!(run(db_connstr, "REDİS://u:p@h"), "REDİS://u:***@h");
        assert_eq!(
            run(
                url_bare_token,
                "git remote set-url origin https://ghtoken1234567890abc@github.com/o/r"
            ),
            "git remote set-url origin https://ghtoke...0abc@github.com/o/r"
        );
        assert_eq!(
            run(url_bare_token, "https://user:pass@host ssh://git@host"),
            "https://user:pass@host ssh://git@host"
        );
    }

    #[test]
    fn jwts() {
        assert_eq!(
            run(jwt, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature-x"),
            "eyJhbG...re-x"
        );
        assert_eq!(run(jwt, "eyJshort"), "eyJshort");
    }
}
