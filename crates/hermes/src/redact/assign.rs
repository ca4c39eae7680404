//! Assignments whose name sounds secret: `OPENAI_API_KEY=…`, `spring.datasource.password=…`,
//! `password=…` at a line start, `"apiKey": "…"` and `password: …` (hermes's
//! `_ENV_ASSIGN_RE`, `_CFG_DOTTED_RE`, `_CFG_ANCHORED_RE`, `_JSON_FIELD_RE`,
//! `_YAML_ASSIGN_RE`).
//!
//! hermes's patterns use a back-reference to a quote and, for config keys, a lazy value
//! closed by a look-ahead. Both are rewritten without them, matching the same spans:
//! `(['"]?)(\S+)\2` is `"(\S+)"|'(\S+)'|(\S+)` tried in that order, and the config value
//! `(['"]?)([^\s&]+?)\2(?=[\s&]|$)` always covers the whole run of `[^\s&]` after `=`,
//! quoted exactly when that run starts and ends with the same quote and is at least three
//! characters long ([`config_value`]). The YAML look-ahead `(?!['"])` after `:[ \t]*` is a
//! first-character class. Everything else is the `regex` crate with Python's classes.
//!
//! A value that is a programmatic environment lookup (`os.getenv(…)`, `process.env…`) is
//! code, not a secret, and keeps the whole match, as in hermes.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::classes::{space, I, LETTERS};
use super::mask;

fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("redaction pattern")
}

/// Secret-like words in upper-case environment names.
const ENV_NAMES: &str = "(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)";

fn cfg_names() -> String {
    format!("(?:ap{I}[ _.\\-]?key|token|secret|passwd|password|credent{I}al|auth)")
}

fn yaml_names() -> String {
    format!("(?:ap{I}[ _.\\-]?key|token|secret|passwd|password|credent{I}al)")
}

/// A necessary part of every `ENV` match, cheap to look for: most texts with `=` have
/// none, and then the full pattern (slow to scan: it opens with a class repetition) is
/// skipped.
static ENV_WORDS: LazyLock<Regex> = LazyLock::new(|| compile(ENV_NAMES));

/// The same for the config, YAML and JSON patterns (their names are case-insensitive).
static CFG_WORDS: LazyLock<Regex> = LazyLock::new(|| compile(&format!("(?i){}", cfg_names())));

static ENV: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!(
        "([A-Z0-9_]{{0,50}}{ENV_NAMES}[A-Z0-9_]{{0,50}})[{s}]*=[{s}]*\
         (?:\"([^{s}]+)\"|'([^{s}]+)'|([^{s}]+))"
    ))
});

static CFG_DOTTED: LazyLock<Regex> = LazyLock::new(|| {
    let (s, n, k) = (space(), cfg_names(), LETTERS);
    compile(&format!(
        "(?i)((?:[{k}0-9_\\-]+\\.)+[{k}0-9_.\\-]*{n}[{k}0-9_.\\-]*\
         |[{k}0-9_.\\-]*{n}[{k}0-9_.\\-]*\\.[{k}0-9_.\\-]+)=([^{s}&]+)"
    ))
});

static CFG_ANCHORED: LazyLock<Regex> = LazyLock::new(|| {
    let (s, n, k) = (space(), cfg_names(), LETTERS);
    compile(&format!(
        "(?im)(^[ \\t]*(?:export[ \\t]+)?[{k}0-9_\\-]*{n}[{k}0-9_\\-]*)=([^{s}&]+)"
    ))
});

static JSON_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    let s = space();
    compile(&format!(
        "(?i)(\"(?:ap{I}_?[Kk]ey|token|secret|password|access_token|refresh_token|auth_token\
         |bearer|secret_value|raw_secret|secret_{I}nput|key_mater{I}al)\")[{s}]*:[{s}]*\"([^\"]+)\""
    ))
});

static YAML: LazyLock<Regex> = LazyLock::new(|| {
    let (s, n, k) = (space(), yaml_names(), LETTERS);
    compile(&format!(
        "(?im)(^[ \\t]*[{k}0-9_.\\-]*{n}[{k}0-9_.\\-]*)(:[ \\t]*)([^{s}&'\"][^{s}&]*)"
    ))
});

/// hermes's `_ENV_LOOKUP_VALUE_RE`.
fn is_env_lookup(value: &str) -> bool {
    ["os.getenv", "os.environ", "process.env", "$ENV{"]
        .iter()
        .any(|p| value.starts_with(p))
}

/// Splits a config value run into (quote, value); see the module documentation.
fn config_value(run: &str) -> (&str, &str) {
    for q in ["\"", "'"] {
        if run.chars().count() >= 3 && run.starts_with(q) && run.ends_with(q) {
            return (q, &run[1..run.len() - 1]);
        }
    }
    ("", run)
}

/// `name=` + quote + masked value + quote (the spaces around `=` are dropped, as hermes
/// does), or the match unchanged for an environment lookup.
fn assignment(caps: &Captures, name: &str, quote: &str, value: &str) -> String {
    if is_env_lookup(value) {
        return caps[0].to_string();
    }
    format!("{name}={quote}{}{quote}", mask::token(value))
}

fn changed(out: std::borrow::Cow<'_, str>) -> Option<String> {
    match out {
        std::borrow::Cow::Owned(s) => Some(s),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

/// Upper-case `NAME=value` assignments.
pub fn env(text: &str) -> Option<String> {
    if !ENV_WORDS.is_match(text) {
        return None;
    }
    changed(ENV.replace_all(text, |caps: &Captures| {
        let (quote, value) = match (caps.get(2), caps.get(3), caps.get(4)) {
            (Some(v), _, _) => ("\"", v.as_str()),
            (_, Some(v), _) => ("'", v.as_str()),
            (_, _, Some(v)) => ("", v.as_str()),
            _ => return caps[0].to_string(),
        };
        assignment(caps, &caps[1], quote, value)
    }))
}

fn config_rewrite(caps: &Captures) -> String {
    let (quote, value) = config_value(&caps[2]);
    assignment(caps, &caps[1], quote, value)
}

/// Dotted config keys (`app.api.key=…`).
pub(crate) fn config_dotted(text: &str) -> Option<String> {
    if !CFG_WORDS.is_match(text) {
        return None;
    }
    changed(CFG_DOTTED.replace_all(text, config_rewrite))
}

/// Bare config keys at a line start (`password=…`, `export api_key=…`).
pub(crate) fn config_anchored(text: &str) -> Option<String> {
    on_word_lines(text, &CFG_ANCHORED, config_rewrite)
}

/// What may precede the secret word in a line-anchored key: `[ \t]`, `export`, and the
/// key characters `[A-Za-z0-9_.\-]` under CPython's `IGNORECASE` (`İ ı ſ K` too).
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, ' ' | '\t' | '_' | '.' | '-' | 'İ' | 'ı' | 'ſ' | 'K')
}

/// Runs a line-anchored pattern (`CFG_ANCHORED`, `YAML`) on the lines holding a
/// secret-like word only. Both begin with a `(?m)^` and none of their classes takes a
/// `\n`, so a match lies within one line and holds one of the words: the result is the
/// whole-text scan's, without the scan (a `(?m)^` pattern finds no literal to skip to).
fn on_word_lines(text: &str, re: &Regex, rewrite: fn(&Captures) -> String) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut done = 0;
    for hit in CFG_WORDS.find_iter(text) {
        if hit.start() < done {
            continue;
        }
        let start = text[..hit.start()].rfind('\n').map_or(0, |i| i + 1);
        let end = text[hit.end()..]
            .find('\n')
            .map_or(text.len(), |i| hit.end() + i);
        done = end;
        // The key runs from the line start over the first word: a character no key can
        // hold before it rules the line out without running the pattern.
        if !text[start..hit.start()].chars().all(key_char) {
            continue;
        }
        let line = &text[start..end];
        if let Some(caps) = re.captures(line) {
            let whole = caps.get(0).map_or(0, |m| m.end());
            out.push_str(&text[copied..start]);
            out.push_str(&rewrite(&caps));
            out.push_str(&line[whole..]);
            copied = end;
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// `"apiKey": "…"` fields, rewritten as `"apiKey": "<mask>"`.
pub(crate) fn json_field(text: &str) -> Option<String> {
    changed(JSON_FIELD.replace_all(text, |caps: &Captures| {
        let value = &caps[2];
        if is_env_lookup(value) {
            return caps[0].to_string();
        }
        format!("{}: \"{}\"", &caps[1], mask::token(value))
    }))
}

fn yaml_rewrite(caps: &Captures) -> String {
    let value = &caps[3];
    if is_env_lookup(value) {
        return caps[0].to_string();
    }
    format!("{}{}{}", &caps[1], &caps[2], mask::token(value))
}

/// Unquoted `password: value` lines.
pub fn yaml(text: &str) -> Option<String> {
    on_word_lines(text, &YAML, yaml_rewrite)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: fn(&str) -> Option<String>, s: &str) -> String {
        f(s).unwrap_or_else(|| s.to_string())
    }

    // Expected values: the matching hermes pattern's .sub(...) on the same strings.
    #[test]
    fn env_assignments() {
        assert_eq!(
            run(env, "MY_SERVICE_TOKEN=abc123randomstring99"),
            "MY_SERVICE_TOKEN=abc123...ng99"
        );
        assert_eq!(run(env, "DB_PASSWORD = 'hunter2'"), "DB_PASSWORD='***'");
        assert_eq!(run(env, "X_SECRET=\"a\"b\" tail"), "X_SECRET=\"***\" tail");
        assert_eq!(run(env, "AUTH=\"open"), "AUTH=***");
        assert_eq!(
            run(env, "API_KEY=os.getenv('API_KEY')"),
            "API_KEY=os.getenv('API_KEY')"
        );
        assert_eq!(run(env, "MAX_TOKENS=\n4096"), "MAX_TOKENS=***");
        assert_eq!(run(env, "max_tokens=4096"), "max_tokens=4096");
    }

    #[test]
    fn config_keys() {
        assert_eq!(
            run(config_dotted, "spring.datasource.password=hunter2&x=1"),
            "spring.datasource.password=***&x=1"
        );
        assert_eq!(
            run(config_dotted, "app.api.key=\"abcdefghijklmnopqrstuvwxyz\""),
            "app.api.key=\"abcdef...wxyz\""
        );
        assert_eq!(run(config_dotted, "password=foo"), "password=foo");
        assert_eq!(
            run(
                config_anchored,
                "  export api_key=s3cr3t\nI have password=foo"
            ),
            "  export api_key=***\nI have password=foo"
        );
        assert_eq!(run(config_anchored, "passwd=\"\""), "passwd=***");
    }

    #[test]
    fn json_fields() {
        assert_eq!(
            run(
                json_field,
                "{\"apiKey\" :  \"abcdefghijklmnopqrstu\", \"n\": 1}"
            ),
            "{\"apiKey\": \"abcdef...rstu\", \"n\": 1}"
        );
        assert_eq!(
            run(json_field, "{\"token_count\": \"12\"}"),
            "{\"token_count\": \"12\"}"
        );
        assert_eq!(
            run(json_field, "{\"SECRET_VALUE\":\"x\"}"),
            "{\"SECRET_VALUE\": \"***\"}"
        );
    }

    #[test]
    fn yaml_lines() {
        assert_eq!(
            run(yaml, "db:\n  password: hunter2\nnote: secret meeting"),
            "db:\n  password: ***\nnote: secret meeting"
        );
        assert_eq!(run(yaml, "token: \"quoted\""), "token: \"quoted\"");
        assert_eq!(
            run(yaml, "Authorization: Basic x"),
            "Authorization: Basic x"
        );
    }

    #[test]
    fn ignorecase_dotted_i() {
        // CPython's IGNORECASE: 'İ' and 'ı' match 'i' (re.match('(?i)api', 'APİ')).
        assert_eq!(run(config_dotted, "app.APİ_KEY=zzz"), "app.APİ_KEY=***");
    }
}
