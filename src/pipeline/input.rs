//! Session input as clients send it: a JSON body with `entries` and options, a JSON
//! array of entries, or a raw JSONL session file with options in the query string.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::compaction::Settings;
use crate::session::error::{pointer_of, strip_position};
use crate::session::tree::Leaf;
use crate::session::{InputError, Origin, Session, Violation};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// `application/json`.
    Json,
    /// `application/x-ndjson` / `application/jsonl`: a pi session file.
    Jsonl,
}

/// Options every session endpoint takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOptions {
    pub leaf_id: Option<String>,
    pub keep_recent_tokens: Option<u64>,
    pub reserve_tokens: Option<u64>,
    pub context_window: Option<u64>,
    /// `false` omits the message arrays of a prepare answer.
    pub include_messages: Option<bool>,
    pub custom_instructions: Option<String>,
    pub prompt_override: Option<String>,
    #[serde(default)]
    pub additional_context: Vec<String>,
    /// `/v1/compact`: also write a one-paragraph summary for a UI.
    pub short_summary: Option<bool>,
    /// `/v1/compact`: echoed into the answer and the compaction entry.
    pub preserve_data: Option<serde_json::Value>,
    /// `/v1/compact`: the configured model to use.
    pub model: Option<String>,
    /// `/v1/compact`: why the client compacts (logs and metrics only).
    pub reason: Option<CompactReason>,
    /// `/v1/compact`: answer like `/v1/prepare`, call no model.
    pub dry_run: Option<bool>,
    /// `/v1/branch-summary`: the leaf being left.
    pub old_leaf_id: Option<String>,
    /// `/v1/branch-summary`: where the session goes back to.
    pub target_id: Option<String>,
    /// `/v1/branch-summary`: `customInstructions` replace the template instead of adding focus.
    pub replace_instructions: Option<bool>,
    /// `/v1/prune`: the newest tool-output tokens never pruned [40000].
    pub protect_tokens: Option<u64>,
    /// `/v1/prune`: prune only when this many tokens are saved [20000].
    pub minimum_savings: Option<u64>,
    /// `/v1/prune`: tools whose results are never pruned [`skill`, `read`].
    pub protected_tools: Option<Vec<String>>,
}

/// Why a client compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompactReason {
    Manual,
    Threshold,
    Overflow,
}

impl SessionOptions {
    pub fn settings(&self, defaults: Settings) -> Settings {
        Settings {
            keep_recent_tokens: self
                .keep_recent_tokens
                .unwrap_or(defaults.keep_recent_tokens),
            reserve_tokens: self.reserve_tokens.unwrap_or(defaults.reserve_tokens),
        }
    }
}

/// A parsed session and the options that came with it.
#[derive(Debug)]
pub struct SessionInput<'a> {
    pub session: Session<'a>,
    pub options: SessionOptions,
    /// Where `leafId` came from, for error pointers.
    pub leaf_pointer: &'static str,
}

impl<'a> SessionInput<'a> {
    pub fn leaf(&self) -> Leaf<'_> {
        match &self.options.leaf_id {
            Some(id) => Leaf::Id(id),
            None => Leaf::Last,
        }
    }

    /// Parses a body. `query` holds the options of a JSONL body (JSON bodies carry
    /// their own and ignore it).
    pub fn parse(
        body: &'a [u8],
        format: BodyFormat,
        query: SessionOptions,
    ) -> Result<Self, InputError> {
        Self::parse_limited(body, format, query, usize::MAX)
    }

    /// [`parse`](Self::parse), refusing a body with more than `max_entries` entries
    /// (header included) before any entry is parsed.
    pub fn parse_limited(
        body: &'a [u8],
        format: BodyFormat,
        query: SessionOptions,
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
            BodyFormat::Json => parse_json(text, max_entries),
        }
    }
}

/// Refuses a JSONL body with more than `limit` non-blank lines. Counting newlines is a
/// SIMD pass; the line-by-line count only runs when that bound is over the limit.
fn check_line_count(text: &str, limit: usize) -> Result<(), InputError> {
    if memchr::memchr_iter(b'\n', text.as_bytes()).count() < limit {
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

/// A JSON session body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonBody<'a> {
    #[serde(borrow)]
    entries: Option<Vec<&'a RawValue>>,
    leaf_id: Option<String>,
    #[serde(default, deserialize_with = "super::object_only::object_only")]
    settings: Option<JsonSettings>,
    keep_recent_tokens: Option<u64>,
    reserve_tokens: Option<u64>,
    context_window: Option<u64>,
    include_messages: Option<bool>,
    custom_instructions: Option<String>,
    prompt_override: Option<String>,
    #[serde(default)]
    additional_context: Vec<String>,
    short_summary: Option<bool>,
    preserve_data: Option<serde_json::Value>,
    model: Option<String>,
    reason: Option<CompactReason>,
    dry_run: Option<bool>,
    old_leaf_id: Option<String>,
    target_id: Option<String>,
    replace_instructions: Option<bool>,
    protect_tokens: Option<u64>,
    minimum_savings: Option<u64>,
    protected_tools: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonSettings {
    keep_recent_tokens: Option<u64>,
    reserve_tokens: Option<u64>,
}

fn parse_json(text: &str, max_entries: usize) -> Result<SessionInput<'_>, InputError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        // A bare array of entries.
        let entries: Vec<&RawValue> = serde_json::from_str(text).map_err(malformed)?;
        check_entry_count(&entries, max_entries)?;
        return Ok(SessionInput {
            session: Session::from_json_entries(&entries)?,
            options: SessionOptions::default(),
            leaf_pointer: "/leafId",
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
    let body: JsonBody = serde_path_to_error::deserialize(&mut de).map_err(|e| {
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
    let settings = body.settings.unwrap_or(JsonSettings {
        keep_recent_tokens: None,
        reserve_tokens: None,
    });
    Ok(SessionInput {
        session: Session::from_json_entries(&entries)?,
        options: SessionOptions {
            leaf_id: body.leaf_id,
            keep_recent_tokens: settings.keep_recent_tokens.or(body.keep_recent_tokens),
            reserve_tokens: settings.reserve_tokens.or(body.reserve_tokens),
            context_window: body.context_window,
            include_messages: body.include_messages,
            custom_instructions: body.custom_instructions,
            prompt_override: body.prompt_override,
            additional_context: body.additional_context,
            short_summary: body.short_summary,
            preserve_data: body.preserve_data,
            model: body.model,
            reason: body.reason,
            dry_run: body.dry_run,
            old_leaf_id: body.old_leaf_id,
            target_id: body.target_id,
            replace_instructions: body.replace_instructions,
            protect_tokens: body.protect_tokens,
            minimum_savings: body.minimum_savings,
            protected_tools: body.protected_tools,
        },
        leaf_pointer: "/leafId",
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

    #[test]
    fn json_body_errors_have_pointers() {
        let err = SessionInput::parse(
            br#"{"entries":[{"type":"message","id":"a","message":{"role":"user","content":5}}]}"#,
            BodyFormat::Json,
            Default::default(),
        )
        .unwrap_err();
        let InputError::Invalid(v) = err else {
            panic!()
        };
        assert_eq!(v[0].pointer, "/entries/0/message/content");
        let err = SessionInput::parse(br#"{"entries":5}"#, BodyFormat::Json, Default::default())
            .unwrap_err();
        let InputError::Invalid(v) = err else {
            panic!()
        };
        assert_eq!(v[0].pointer, "/entries");
        let err = SessionInput::parse(
            b"{\n\"entries\": [,]}",
            BodyFormat::Json,
            Default::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, InputError::Malformed { line: 2, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let err = SessionInput::parse(
            b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n\n{oops",
            BodyFormat::Jsonl,
            Default::default(),
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
            Default::default(),
        );
        assert!(bom.is_ok());
        let err = SessionInput::parse(b"\xff", BodyFormat::Jsonl, Default::default()).unwrap_err();
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
        assert!(
            SessionInput::parse_limited(jsonl, BodyFormat::Jsonl, Default::default(), 2).is_ok()
        );
        let err = SessionInput::parse_limited(jsonl, BodyFormat::Jsonl, Default::default(), 1)
            .unwrap_err();
        let InputError::TooManyEntries { limit: 1, at } = err else {
            panic!("{err:?}")
        };
        assert_eq!(at.line, Some(3));

        let json =
            br#"{"entries":[{"type":"x","id":"a"},{"type":"x","id":"b"},{"type":"x","id":"c"}]}"#;
        assert!(SessionInput::parse_limited(json, BodyFormat::Json, Default::default(), 3).is_ok());
        for body in [&json[..], &json[11..json.len() - 1]] {
            let err = SessionInput::parse_limited(body, BodyFormat::Json, Default::default(), 2)
                .unwrap_err();
            let InputError::TooManyEntries { limit: 2, at } = err else {
                panic!("{err:?}")
            };
            assert_eq!(at.pointer, "/entries/2");
        }
    }
}

/// One entry as pi writes it (documentation only): the fields every entry shares. The
/// rest depends on `type` and passes through untouched, as do unknown types.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// `session` (the header, first only), `message`, `compaction`, `branch_summary`,
    /// `custom_message`, `custom`, `model_change`, `thinking_level_change`, `label`,
    /// `session_info`, or any other type.
    #[serde(rename = "type")]
    pub entry_type: String,
    /// Unique within the session (absent or null in version 1 files: assigned by
    /// migration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The entry before this one in its branch (null or absent: a root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

/// The JSON form of session input (documentation of [`JsonBody`]).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRequest {
    /// The session's entries as pi writes them, header line allowed.
    #[schema(value_type = Vec<SessionEntry>)]
    pub entries: Vec<serde_json::Value>,
    /// Entry to work up to (default: the last entry).
    pub leaf_id: Option<String>,
    pub settings: Option<SettingsRequest>,
    /// Context window of the agent's model; adds `shouldCompact`.
    pub context_window: Option<u64>,
    /// `false` leaves the message arrays out of a prepare answer.
    pub include_messages: Option<bool>,
    /// Appended to the summary instructions as "Additional focus".
    pub custom_instructions: Option<String>,
    /// Replaces the base instruction template of the history summary.
    pub prompt_override: Option<String>,
    /// Rendered as an `<additional-context>` list in the summary prompt.
    pub additional_context: Option<Vec<String>>,
    /// `/v1/compact`: also write a one-paragraph summary for a UI.
    pub short_summary: Option<bool>,
    /// `/v1/compact`: any JSON, echoed into the answer and the compaction entry.
    #[schema(value_type = Option<serde_json::Value>)]
    pub preserve_data: Option<serde_json::Value>,
    /// `/v1/compact`: a configured model name.
    pub model: Option<String>,
    /// `/v1/compact`: why the client compacts (logs and metrics only).
    pub reason: Option<CompactReason>,
    /// `/v1/compact`, `/v1/branch-summary`: answer without calling a model.
    pub dry_run: Option<bool>,
    /// `/v1/branch-summary`: the leaf being left.
    pub old_leaf_id: Option<String>,
    /// `/v1/branch-summary`: where the session goes back to.
    pub target_id: Option<String>,
    /// `/v1/branch-summary`: `customInstructions` replace the template instead of adding focus.
    pub replace_instructions: Option<bool>,
    /// `/v1/prune`: the newest tool-output tokens that are never pruned [40000].
    pub protect_tokens: Option<u64>,
    /// `/v1/prune`: prune only when the candidates save at least this many tokens [20000].
    pub minimum_savings: Option<u64>,
    /// `/v1/prune`: tools (a toolResult's `toolName`) whose results are never pruned
    /// [`["skill", "read"]`].
    pub protected_tools: Option<Vec<String>>,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsRequest {
    /// Tokens of recent messages kept verbatim [20000].
    pub keep_recent_tokens: Option<u64>,
    /// Tokens reserved for the summary output [16384].
    pub reserve_tokens: Option<u64>,
}
