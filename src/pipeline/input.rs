//! Session input as clients send it: a JSON body with `entries` and options, a JSON
//! array of entries, or a raw JSONL session file with options in the query string.

use std::marker::PhantomData;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use compactd_core::session::error::{pointer_of, strip_position};
use compactd_core::session::tree::Leaf;
use compactd_core::session::{InputError, Origin, Session, Violation};

use super::object_only::Object;
use super::options::{read_key, Options, SettingsRequest};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// `application/json`.
    Json,
    /// `application/x-ndjson` / `application/jsonl`: a pi session file.
    Jsonl,
}

/// A parsed session and the options that came with it.
/// `O` is the endpoint's options type (`pipeline::options`).
#[derive(Debug)]
pub struct SessionInput<'a, O> {
    pub session: Session<'a>,
    pub options: O,
    /// Where `leafId` came from, for error pointers.
    pub leaf_pointer: &'static str,
}

impl<O> SessionInput<'_, O> {
    /// Where an error about option `name` points: `/name` in a JSON body, the bare name
    /// for a query string (JSONL bodies carry their options there).
    pub fn option_pointer(&self, name: &str) -> String {
        if self.leaf_pointer.starts_with('/') {
            format!("/{name}")
        } else {
            name.to_string()
        }
    }

    /// Positions of the entries from the root to `leaf_id` (default: the last entry).
    pub fn path(&self, leaf_id: Option<&str>) -> Result<Vec<usize>, InputError> {
        let leaf = match leaf_id {
            Some(id) => Leaf::Id(id),
            None => Leaf::Last,
        };
        self.session.path(leaf, self.leaf_pointer)
    }
}

impl<'a, O: Options> SessionInput<'a, O> {
    /// Parses a body. `query` holds the options of the query string: all of a JSONL
    /// body's, and for a JSON body those it does not set itself (the body wins).
    pub fn parse(body: &'a [u8], format: BodyFormat, query: O) -> Result<Self, InputError> {
        Self::parse_limited(body, format, query, usize::MAX)
    }

    /// [`parse`](Self::parse), refusing a body with more than `max_entries` entries
    /// (header included) before any entry is parsed.
    pub fn parse_limited(
        body: &'a [u8],
        format: BodyFormat,
        query: O,
        max_entries: usize,
    ) -> Result<Self, InputError> {
        // Editors on some systems prepend a byte-order mark; it is not part of the JSON.
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let text = utf8(body)?;
        match format {
            BodyFormat::Jsonl => Ok(SessionInput {
                session: {
                    check_line_count(text, max_entries)?;
                    Session::from_jsonl(text)?
                },
                options: query,
                leaf_pointer: "leafId",
            }),
            BodyFormat::Json => parse_json(text, max_entries, query),
        }
    }
}

/// Refuses a JSONL body with more than `limit` non-blank lines. A body shorter than
/// `limit` bytes cannot have that many line breaks (no limit: no pass at all); else
/// counting newlines is a SIMD pass, and the line-by-line count only runs when that
/// bound is over the limit.
fn check_line_count(text: &str, limit: usize) -> Result<(), InputError> {
    if text.len() < limit || memchr::memchr_iter(b'\n', text.as_bytes()).count() < limit {
        return Ok(());
    }
    let mut entries = 0;
    for (n, line) in text.split('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        entries += 1;
        if entries > limit {
            return Err(too_many(limit, Origin::Line(n + 1)));
        }
    }
    Ok(())
}

fn check_entry_count(entries: &[&RawValue], limit: usize) -> Result<(), InputError> {
    if entries.len() > limit {
        return Err(too_many(limit, Origin::JsonEntry { index: limit }));
    }
    Ok(())
}

fn too_many(limit: usize, origin: Origin) -> InputError {
    InputError::TooManyEntries {
        limit,
        at: origin.violation(
            "",
            format!("entry {} is over the limit of {limit}", limit + 1),
        ),
    }
}

/// A JSON session body: `entries`, `settings` and the endpoint's options; other
/// properties are ignored.
struct SessionJson<'a, O> {
    entries: Option<Vec<&'a RawValue>>,
    settings: Option<SettingsRequest>,
    options: O,
}

impl<'de, O: Options> Deserialize<'de> for SessionJson<'de, O> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(BodyVisitor(PhantomData))
    }
}

struct BodyVisitor<O>(PhantomData<O>);

impl<'de, O: Options> Visitor<'de> for BodyVisitor<O> {
    type Value = SessionJson<'de, O>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a session object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut body = SessionJson {
            entries: None,
            settings: None,
            options: O::default(),
        };
        // Keys read so far, to refuse a repeated one as serde's derive does.
        let mut seen = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let envelope = matches!(key.as_str(), "entries" | "settings");
            if envelope && seen.contains(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate field `{key}`"
                )));
            }
            match key.as_str() {
                "entries" => body.entries = map.next_value()?,
                "settings" => body.settings = map.next_value::<Object<SettingsRequest>>()?.0,
                _ => {
                    if !read_key(&mut body.options, &key, &mut map, false, &mut seen)? {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            if envelope {
                seen.push(key);
            }
        }
        if let Some(settings) = &body.settings {
            body.options.apply_settings(settings);
        }
        Ok(body)
    }
}

/// A JSON body's options with the query string's filled in where the body is silent,
/// and where `leafId` came from (its error names the query parameter, or the pointer).
fn with_query<O: Options>(mut options: O, query: O) -> (O, &'static str) {
    let mut taken = Vec::new();
    options.fill_from(query, &mut taken);
    let leaf_pointer = if taken.contains(&"leafId") {
        "leafId"
    } else {
        "/leafId"
    };
    (options, leaf_pointer)
}

fn parse_json<O: Options>(
    text: &str,
    max_entries: usize,
    query: O,
) -> Result<SessionInput<'_, O>, InputError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        // A bare array of entries: its options are the query string's.
        let entries: Vec<&RawValue> = serde_json::from_str(text).map_err(malformed)?;
        check_entry_count(&entries, max_entries)?;
        let (options, leaf_pointer) = with_query(O::default(), query);
        return Ok(SessionInput {
            session: Session::from_json_entries(&entries)?,
            options,
            leaf_pointer,
        });
    }
    if !trimmed.starts_with('{') {
        let _: &RawValue = serde_json::from_str(text).map_err(malformed)?;
        return Err(InputError::invalid(Violation {
            pointer: String::new(),
            message: "the body must be an object with `entries`, or an array of entries".into(),
            line: None,
        }));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let body: SessionJson<O> = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        // Syntax errors are a 400 with a position; type errors a 422 with a pointer.
        if e.inner().is_syntax() || e.inner().is_eof() {
            return malformed(e.into_inner());
        }
        InputError::invalid(Violation {
            pointer: pointer_of(e.path()),
            message: strip_position(&e.inner().to_string()).to_string(),
            line: None,
        })
    })?;
    de.end().map_err(malformed)?;
    let entries = body.entries.ok_or_else(|| {
        InputError::invalid(Violation {
            pointer: "/entries".into(),
            message: "missing `entries` (the session's entries, header allowed)".into(),
            line: None,
        })
    })?;
    check_entry_count(&entries, max_entries)?;
    let (options, leaf_pointer) = with_query(body.options, query);
    Ok(SessionInput {
        session: Session::from_json_entries(&entries)?,
        options,
        leaf_pointer,
    })
}

fn malformed(e: serde_json::Error) -> InputError {
    InputError::Malformed {
        message: strip_position(&e.to_string()).to_string(),
        line: e.line(),
        column: e.column(),
    }
}

/// The body as UTF-8, or a 400 naming the line and column of the first bad byte.
fn utf8(body: &[u8]) -> Result<&str, InputError> {
    // The SIMD check is several times faster on non-ASCII text; std's error says where.
    if let Ok(s) = simdutf8::basic::from_utf8(body) {
        return Ok(s);
    }
    std::str::from_utf8(body).map_err(|e| {
        let valid = &body[..e.valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        InputError::Malformed {
            message: "the body is not valid UTF-8".into(),
            line,
            column: valid.len() - line_start + 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::options::{CompactOptions, PrepareOptions};

    #[test]
    fn json_body_errors_have_pointers() {
        let err = SessionInput::parse(
            br#"{"entries":[{"type":"message","id":"a","message":{"role":"user","content":5}}]}"#,
            BodyFormat::Json,
            PrepareOptions::default(),
        )
        .unwrap_err();
        let InputError::Invalid(v) = err else {
            panic!()
        };
        assert_eq!(v[0].pointer, "/entries/0/message/content");
        let err = SessionInput::parse(
            br#"{"entries":5}"#,
            BodyFormat::Json,
            PrepareOptions::default(),
        )
        .unwrap_err();
        let InputError::Invalid(v) = err else {
            panic!()
        };
        assert_eq!(v[0].pointer, "/entries");
        let err = SessionInput::parse(
            b"{\n\"entries\": [,]}",
            BodyFormat::Json,
            PrepareOptions::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, InputError::Malformed { line: 2, .. }),
            "{err:?}"
        );
    }

    fn invalid(body: &str) -> Violation {
        let err = SessionInput::parse(body.as_bytes(), BodyFormat::Json, CompactOptions::default())
            .unwrap_err();
        let InputError::Invalid(mut v) = err else {
            panic!("{err:?}")
        };
        v.remove(0)
    }

    #[test]
    fn json_options_errors_have_pointers() {
        let v = invalid(r#"{"entries":[],"keepRecentTokens":"x"}"#);
        assert_eq!(v.pointer, "/keepRecentTokens");
        let v = invalid(r#"{"entries":[],"settings":{"reserveTokens":-1}}"#);
        assert_eq!(v.pointer, "/settings/reserveTokens");
        let v = invalid(r#"{"entries":[],"settings":[1,2]}"#);
        assert_eq!(v.pointer, "/settings");
        let v = invalid(r#"{"entries":[],"reason":"bored"}"#);
        assert_eq!(v.pointer, "/reason");
        let v = invalid(r#"{"entries":[],"additionalContext":null}"#);
        assert_eq!(v.pointer, "/additionalContext");
        let v = invalid(r#"{"entries":[],"leafId":"a","leafId":"b"}"#);
        assert_eq!(
            (v.pointer.as_str(), v.message.as_str()),
            ("", "duplicate field `leafId`")
        );
        let v = invalid(r#"{"entries":[],"entries":[]}"#);
        assert_eq!(v.message, "duplicate field `entries`");
    }

    #[test]
    fn json_settings_win_and_other_properties_are_ignored() {
        let body = br#"{"keepRecentTokens":1,"settings":{"keepRecentTokens":2},"reserveTokens":3,
            "entries":[],"messages":false,"protectTokens":"any","preserveData":[1]}"#;
        let input = SessionInput::parse(body, BodyFormat::Json, CompactOptions::default()).unwrap();
        let o = &input.options;
        assert_eq!(o.prepare.keep_recent_tokens, Some(2));
        assert_eq!(o.prepare.reserve_tokens, Some(3));
        assert_eq!(
            o.prepare.include_messages, None,
            "`messages` is the query's name"
        );
        assert_eq!(o.preserve_data, Some(serde_json::json!([1])));
        // A JSON body's options win; the query string's fill in what it leaves unset.
        let query = CompactOptions {
            model: Some("m".into()),
            dry_run: Some(true),
            ..CompactOptions::default()
        };
        let body = br#"{"entries":[],"dryRun":false,"settings":{"keepRecentTokens":5}}"#;
        let input = SessionInput::parse(body, BodyFormat::Json, query.clone()).unwrap();
        assert_eq!(input.options.model.as_deref(), Some("m"));
        assert_eq!(input.options.dry_run, Some(false));
        assert_eq!(input.options.prepare.keep_recent_tokens, Some(5));
        assert_eq!(input.leaf_pointer, "/leafId");
        let query = CompactOptions {
            prepare: PrepareOptions {
                leaf_id: Some("x".into()),
                keep_recent_tokens: Some(9),
                ..PrepareOptions::default()
            },
            ..query
        };
        let input = SessionInput::parse(body, BodyFormat::Json, query.clone()).unwrap();
        assert_eq!(
            input.options.prepare.keep_recent_tokens,
            Some(5),
            "settings win"
        );
        assert_eq!(input.leaf_pointer, "leafId", "the query's leafId");
        let input = SessionInput::parse(b"[]", BodyFormat::Json, query.clone()).unwrap();
        assert_eq!(
            input.options, query,
            "a bare array takes the query's options"
        );
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let err = SessionInput::parse(
            b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n\n{oops",
            BodyFormat::Jsonl,
            PrepareOptions::default(),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                InputError::Malformed {
                    line: 3,
                    column: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        let bom = SessionInput::parse(
            b"\xEF\xBB\xBF{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
            BodyFormat::Jsonl,
            PrepareOptions::default(),
        );
        assert!(bom.is_ok());
        let err =
            SessionInput::parse(b"\xff", BodyFormat::Jsonl, PrepareOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                InputError::Malformed {
                    line: 1,
                    column: 1,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn entry_limit_counts_entries_not_lines() {
        let jsonl = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n\n{\"type\":\"x\",\"id\":\"a\"}\r\n\n";
        // Header + one entry: within a limit of 2 although there are 4 newlines.
        assert!(SessionInput::parse_limited(
            jsonl,
            BodyFormat::Jsonl,
            PrepareOptions::default(),
            2
        )
        .is_ok());
        let err =
            SessionInput::parse_limited(jsonl, BodyFormat::Jsonl, PrepareOptions::default(), 1)
                .unwrap_err();
        let InputError::TooManyEntries { limit: 1, at } = err else {
            panic!("{err:?}")
        };
        assert_eq!(at.line, Some(3));

        // The shortest bodies over a limit (one-byte lines) are still refused: the
        // length shortcut in `check_line_count` never skips one.
        for limit in 1..6 {
            let body: Vec<String> = (0..=limit).map(|i| i.to_string()).collect();
            let err = SessionInput::parse_limited(
                body.join("\n").as_bytes(),
                BodyFormat::Jsonl,
                PrepareOptions::default(),
                limit,
            )
            .unwrap_err();
            let InputError::TooManyEntries { at, .. } = err else {
                panic!("{err:?}")
            };
            assert_eq!(at.line, Some(limit + 1));
        }

        let json =
            br#"{"entries":[{"type":"x","id":"a"},{"type":"x","id":"b"},{"type":"x","id":"c"}]}"#;
        assert!(
            SessionInput::parse_limited(json, BodyFormat::Json, PrepareOptions::default(), 3)
                .is_ok()
        );
        for body in [&json[..], &json[11..json.len() - 1]] {
            let err =
                SessionInput::parse_limited(body, BodyFormat::Json, PrepareOptions::default(), 2)
                    .unwrap_err();
            let InputError::TooManyEntries { limit: 2, at } = err else {
                panic!("{err:?}")
            };
            assert_eq!(at.pointer, "/entries/2");
        }
    }
}
