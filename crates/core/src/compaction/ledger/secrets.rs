//! Secrets are never pinned: everything that looks like a key or a token is replaced by
//! [`REDACTED`] before any text is classified, so no value and no pinned text can carry
//! one. The credential's *name* (`STRIPE_API_KEY`, `password`) stays.
//!
//! What counts as a secret (decisions):
//! * well-known token shapes by prefix: OpenAI/Anthropic/Stripe `sk-…`/`sk_live_…`,
//!   GitHub `ghp_…`/`github_pat_…`, GitLab `glpat-…`, Slack `xox?-…`, AWS `AKIA…`/`ASIA…`,
//!   Google `AIza…`, Hugging Face `hf_…`, npm `npm_…`, SendGrid `SG.…`, webhooks `whsec_…`;
//! * JSON Web Tokens (`eyJ….eyJ….…`);
//! * the value after `Bearer` / `Basic`;
//! * the value assigned to a secret-named key (`password=…`, `api_key: …`,
//!   `DB_PASSWORD="…"`, "my password is hunter2");
//! * long high-entropy strings: 24+ characters of a base64/url-safe alphabet mixing
//!   letters and digits, with frequent character-class changes and ≥ 3.5 bits of
//!   Shannon entropy per character.
//!
//! Pure hexadecimal strings (commit hashes, SHA-256 digests, UUIDs) are identifiers a
//! continuing agent needs, so they are not secrets unless assigned to a secret-named key.
//! Placeholders (`$VAR`, `${VAR}`, `<token>`, `***`, an `UPPER_SNAKE` variable name) are not
//! secrets either: they name where the secret lives.

use std::borrow::Cow;

/// What a secret is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Token prefixes of well-known credentials, and how many characters must follow.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("sk_live_", 8),
    ("sk_test_", 8),
    ("rk_live_", 8),
    ("rk_test_", 8),
    ("ghp_", 16),
    ("gho_", 16),
    ("ghu_", 16),
    ("ghs_", 16),
    ("ghr_", 16),
    ("github_pat_", 16),
    ("glpat-", 16),
    ("xoxb-", 8),
    ("xoxp-", 8),
    ("xoxa-", 8),
    ("xoxr-", 8),
    ("xoxs-", 8),
    ("xapp-", 8),
    ("AIza", 30),
    ("hf_", 20),
    ("npm_", 20),
    ("SG.", 20),
    ("whsec_", 16),
    ("shpat_", 16),
];

/// Parts of key names whose value is a secret.
#[rustfmt::skip]
const SECRET_KEYS: &[&str] = &[
    "password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "api_key",
    "api-key", "access_key", "private_key", "client_secret", "credential", "auth",
];

/// Replaces every secret in `text` by [`REDACTED`]; borrows when there is none.
pub fn redact(text: &str) -> Cow<'_, str> {
    let spans = secret_spans(text);
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Whether one token (no white space) is itself a key or token.
pub fn looks_like_secret(token: &str) -> bool {
    let t = token.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    if t.contains(REDACTED) {
        return false;
    }
    for (prefix, min_rest) in PREFIXES {
        if let Some(rest) = t.strip_prefix(prefix) {
            if rest.len() >= *min_rest && rest.bytes().all(is_token_byte) {
                return true;
            }
        }
    }
    if (t.starts_with("AKIA") || t.starts_with("ASIA"))
        && t.len() == 20
        && t.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return true;
    }
    if t.starts_with(['/', '~', '.']) {
        // A path: its segments may be random (temporary directories), its whole is not
        // a key.
        return t.split('/').any(is_high_entropy);
    }
    is_jwt(t) || is_high_entropy(t)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+' | b'/' | b'=')
}

fn is_jwt(t: &str) -> bool {
    let parts: Vec<&str> = t.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[0].len() >= 10
        && parts[1].len() >= 10
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

fn is_high_entropy(t: &str) -> bool {
    let bytes = t.as_bytes();
    if bytes.len() < 24
        || !bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-'))
    {
        return false;
    }
    // Random keys of this length mix all three classes; identifiers such as
    // `x86_64-unknown-linux-gnu` or hex digests do not.
    let upper = bytes.iter().any(u8::is_ascii_uppercase);
    let lower = bytes.iter().any(u8::is_ascii_lowercase);
    let digits = bytes.iter().any(u8::is_ascii_digit);
    if !(upper && lower && digits) {
        return false;
    }
    // camelCase words ("keepRecentTokensForCompaction2") have no lone lower-case letters;
    // random strings have many.
    let lone_lower = bytes.iter().enumerate().any(|(i, b)| {
        b.is_ascii_lowercase()
            && !(i > 0 && bytes[i - 1].is_ascii_lowercase())
            && !bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase)
    });
    if !lone_lower {
        return false;
    }
    let class = |b: u8| match b {
        b'a'..=b'z' => 0,
        b'A'..=b'Z' => 1,
        b'0'..=b'9' => 2,
        _ => 3,
    };
    let changes = bytes
        .windows(2)
        .filter(|w| class(w[0]) != class(w[1]))
        .count();
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum();
    changes as f64 / (n - 1.0) >= 0.3 && entropy >= 3.5
}

/// Where a value names a secret's location instead of being one.
fn is_placeholder(v: &str) -> bool {
    let v = v.trim_matches(['"', '\'', '`']);
    v.is_empty()
        || v.starts_with('$')
        || v.starts_with('<')
        || v.starts_with('{')
        || v.contains(REDACTED)
        || v.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '…'))
        || (v.chars().any(|c| c.is_ascii_uppercase())
            && v.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
}

fn is_secret_key(key: &str) -> bool {
    // Asked of every word: lower-cased on the stack when short (ASCII lower-casing keeps
    // what is alphanumeric, so trimming first is the same).
    let k = key.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if k.len() < 3 {
        return false;
    }
    let mut buf = [0u8; 64];
    let owned;
    let k = match buf.get_mut(..k.len()) {
        Some(b) => {
            b.copy_from_slice(k.as_bytes());
            b.make_ascii_lowercase();
            std::str::from_utf8(b).expect("ASCII lower-casing keeps UTF-8")
        }
        None => {
            owned = k.to_ascii_lowercase();
            owned.as_str()
        }
    };
    SECRET_KEYS.iter().any(|s| k.contains(s)) && !k.ends_with("_file") && !k.ends_with("_env")
}

/// A value after the loose "is" form ("my password is hunter2") must look made up: a
/// digit or a symbol in it, so "the token is expired" keeps its word.
fn looks_made_up(v: &str) -> bool {
    v.chars()
        .any(|c| c.is_ascii_digit() || (!c.is_alphanumeric() && c != '.' && c != ','))
}

/// Tokens split at white space and at brackets and quotes, with their byte ranges.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let sep = c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}'
            );
        match (sep, start) {
            (true, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// The byte ranges to redact, in order, non-overlapping.
fn secret_spans(text: &str) -> Vec<(usize, usize)> {
    let toks = tokens(text);
    let mut spans = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (s, e) = toks[i];
        let tok = &text[s..e];
        let trimmed = tok.trim_end_matches(['.', ',', ';', '!', '?']);
        if let Some(scheme) = tok.find("://") {
            // A URL: its query parameters may carry a token (`?access_token=…`).
            query_secrets(tok, s, scheme, &mut spans);
            i += 1;
            continue;
        }
        // KEY=VALUE or KEY:VALUE inside one token.
        if let Some(p) = tok.find(['=', ':']) {
            let (key, value) = (&tok[..p], tok[p + 1..].trim_end_matches(['.', ',', ';']));
            if !value.is_empty() {
                if (is_secret_key(key) && !is_placeholder(value)) || looks_like_secret(value) {
                    spans.push((s + p + 1, s + p + 1 + value.len()));
                    i += 1;
                    continue;
                }
            } else if is_secret_key(key) {
                // "password: hunter2", "Authorization: Bearer abc"
                if let Some((span, next)) = value_after(text, &toks, i + 1, false) {
                    spans.push(span);
                    i = next;
                    continue;
                }
            }
        }
        if looks_like_secret(trimmed) {
            spans.push((s, s + trimmed.len()));
            i += 1;
            continue;
        }
        if trimmed.eq_ignore_ascii_case("bearer") || trimmed.eq_ignore_ascii_case("basic") {
            if let Some((span, next)) = value_after(text, &toks, i + 1, false) {
                spans.push(span);
                i = next;
                continue;
            }
        }
        let named = is_secret_key(trimmed)
            || (trimmed.eq_ignore_ascii_case("key")
                && i > 0
                && [
                    "api",
                    "secret",
                    "access",
                    "private",
                    "signing",
                    "encryption",
                ]
                .iter()
                .any(|w| text[toks[i - 1].0..toks[i - 1].1].eq_ignore_ascii_case(w)));
        if named {
            // "password = hunter2", "api key is abc123"
            let next = toks.get(i + 1).map(|&(a, b)| &text[a..b]);
            let (skip, loose) = match next {
                Some("=") | Some(":") => (2, false),
                Some("is") | Some("was") => (2, true),
                _ => (0, false),
            };
            if skip > 0 {
                if let Some((span, next)) = value_after(text, &toks, i + skip, loose) {
                    spans.push(span);
                    i = next;
                    continue;
                }
            }
        }
        i += 1;
    }
    spans
}

/// Secret-named or secret-looking query parameters of a URL token starting at `base`.
fn query_secrets(url: &str, base: usize, scheme: usize, spans: &mut Vec<(usize, usize)>) {
    let Some(q) = url[scheme..].find('?').map(|q| scheme + q + 1) else {
        return;
    };
    let mut at = q;
    for pair in url[q..].split('&') {
        if let Some((key, value)) = pair.split_once('=') {
            let value = value.split('#').next().unwrap_or("");
            if !value.is_empty()
                && ((is_secret_key(key) && !is_placeholder(value)) || looks_like_secret(value))
            {
                let start = base + at + key.len() + 1;
                spans.push((start, start + value.len()));
            }
        }
        at += pair.len() + 1;
    }
}

/// The value token at `toks[at]` when it is a real value (not a placeholder), skipping
/// an authorization scheme word; with the index of the token after it.
fn value_after(
    text: &str,
    toks: &[(usize, usize)],
    mut at: usize,
    loose: bool,
) -> Option<((usize, usize), usize)> {
    let word = |at: usize| toks.get(at).map(|&(s, e)| (s, &text[s..e]));
    let (_, first) = word(at)?;
    if first.eq_ignore_ascii_case("bearer") || first.eq_ignore_ascii_case("basic") {
        at += 1;
    }
    let (s, v) = word(at)?;
    let v = v.trim_end_matches(['.', ',', ';', '!', '?']);
    if is_placeholder(v) || (loose && !looks_made_up(v)) {
        return None;
    }
    Some(((s, s + v.len()), at + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_token_shapes_are_secrets() {
        for t in [
            "sk-proj-abcdefghijklmnop1234",
            "sk_live_51HxYzAbCdEf",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "xoxb-1234-5678-abcdefgh",
            "AKIAIOSFODNN7EXAMPLE",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ] {
            assert!(looks_like_secret(t), "{t}");
        }
    }

    #[test]
    fn high_entropy_strings_are_secrets_but_hashes_and_identifiers_are_not() {
        assert!(looks_like_secret("q8Zr3LmV0xT7pW2nK9bY4cF6"));
        assert!(!looks_like_secret(
            "3f2a9c1b04de5e6f7a8b9c0d1e2f3a4b5c6d7e8f"
        )); // commit
        assert!(!looks_like_secret("123e4567-e89b-12d3-a456-426614174000")); // UUID
        assert!(!looks_like_secret("keepRecentTokensForCompaction2"));
        assert!(!looks_like_secret("x86_64-unknown-linux-gnu"));
        assert!(!looks_like_secret("STRIPE_API_KEY"));
        assert!(!looks_like_secret(
            "/var/folders/g_/lq6n3w0x7k1bnymxd3n3g4s40000gn/T/TemporaryItems/Screenshot"
        ));
        assert!(looks_like_secret("/tmp/q8Zr3LmV0xT7pW2nK9bY4cF6"));
    }

    #[test]
    fn a_credential_value_is_redacted_but_its_name_kept() {
        assert_eq!(
            redact("Set STRIPE_API_KEY=sk_live_51HxYzAbCdEfGh in the env."),
            "Set STRIPE_API_KEY=[REDACTED] in the env."
        );
        assert_eq!(
            redact("export OPENAI_API_KEY=\"sk-abcdefghijklmnop12345678\""),
            "export OPENAI_API_KEY=\"[REDACTED]\""
        );
    }

    #[test]
    fn password_assignments_in_every_spelling_are_redacted() {
        assert_eq!(redact("password=hunter2"), "password=[REDACTED]");
        assert_eq!(redact("db password: hunter2!"), "db password: [REDACTED]!");
        assert_eq!(
            redact("the password = hunter2"),
            "the password = [REDACTED]"
        );
        assert_eq!(
            redact("My password is hunter2."),
            "My password is [REDACTED]."
        );
        assert_eq!(redact("The token is expired."), "The token is expired.");
    }

    #[test]
    fn url_query_tokens_are_redacted() {
        assert_eq!(
            redact("GET https://api.example.com/v1?user=bob&access_token=abc123def"),
            "GET https://api.example.com/v1?user=bob&access_token=[REDACTED]"
        );
    }

    #[test]
    fn bearer_tokens_are_redacted() {
        assert_eq!(
            redact("curl -H 'Authorization: Bearer abc.def.ghi'"),
            "curl -H 'Authorization: Bearer [REDACTED]'"
        );
    }

    #[test]
    fn placeholders_name_where_the_secret_lives_and_stay() {
        for s in [
            "api_key=$STRIPE_API_KEY",
            "token: <your token>",
            "password=${DB_PASSWORD}",
            "api_key: STRIPE_API_KEY",
            "password=***",
        ] {
            assert_eq!(redact(s), s);
        }
    }

    #[test]
    fn key_names_match_in_any_case_and_length() {
        assert_eq!(
            redact("The API KEY is zq81-77xy."),
            "The API KEY is [REDACTED]."
        );
        assert_eq!(redact("auth: BASIC dXNlcjpwYXNz"), "auth: BASIC [REDACTED]");
        // A key name longer than the stack buffer is lower-cased on the heap.
        let long = format!("{}_Secret = s3cr3t-v4lue", "X".repeat(80));
        assert_eq!(
            redact(&long),
            format!("{}_Secret = [REDACTED]", "X".repeat(80))
        );
        assert_eq!(
            redact("DB_PASSWORD_FILE=/run/secrets/db"),
            "DB_PASSWORD_FILE=/run/secrets/db"
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed_unchanged() {
        let s = "Use port 8080 on https://api.example.com/v1 and commit 3f2a9c1b.";
        assert!(matches!(redact(s), Cow::Borrowed(_)));
    }
}
