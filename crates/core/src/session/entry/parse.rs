//! Entry parsing: the scanner first, the serde path for everything it does not take
//! (and for the wording of every error: a JSON pointer and serde_json's message), then
//! the checks that turn a raw entry into an `Entry`.

use super::content::{parse_assistant_content, parse_content};
use super::fields::{
    number_of, opt_str, parse_tracked, required_text, role_of, truthy, version_of,
};
use super::raw::{ContentField, RawEntry, RawMessage, RawUsage};
use super::{
    scan, BashExecution, CompactionEntry, Content, Entry, EntryBody, EntryError, Header, Message,
    Parsed, RawJson, Role, Usage,
};
use crate::session::error::{strip_position, Origin, Violation};
use crate::session::id::Id;
use crate::session::text::Text;

/// Parses one entry's JSON text.
pub fn parse_entry<'a>(
    raw: &'a str,
    index: usize,
    origin: Origin,
) -> Result<Parsed<'a>, EntryError> {
    parse_entry_hinted(raw, index, origin, None)
}

/// [`parse_entry`], told whether `raw` holds a byte below 0x20 when the caller knows
/// ([`Lexer::strict_hinted`](crate::json::Lexer::strict_hinted)).
pub fn parse_entry_hinted<'a>(
    raw: &'a str,
    index: usize,
    origin: Origin,
    controls: Option<bool>,
) -> Result<Parsed<'a>, EntryError> {
    let mut r = RawEntry::empty();
    if scan::entry(raw, controls, &mut r).is_some() {
        return Ok(build_entry(&mut r, raw, index, origin)?);
    }
    drop(r);
    match serde_json::from_str::<RawEntry<'a, RawMessage<'a>, ContentField<'a>>>(raw) {
        // serde reads a struct from an array too; an entry must be an object.
        Ok(mut r) if raw.trim_start().starts_with('{') => {
            Ok(build_entry(&mut r, raw, index, origin)?)
        }
        Ok(_) => Err(origin
            .violation("", "an entry must be a JSON object")
            .into()),
        Err(e) if e.is_syntax() || e.is_eof() => Err(EntryError::Syntax(
            strip_position(&e.to_string()).to_string(),
            e.column(),
        )),
        Err(_) => {
            if !raw.trim_start().starts_with('{') {
                return Err(origin
                    .violation("", "an entry must be a JSON object")
                    .into());
            }
            // Odd fields on an unknown entry type, or a bad known entry: read the
            // type-specific fields separately to tell which.
            let mut r: RawEntry<'a, RawJson<'a>, RawJson<'a>> =
                parse_tracked(raw).map_err(|(pointer, msg)| origin.violation(&pointer, msg))?;
            Ok(build_entry(&mut r, raw, index, origin)?)
        }
    }
}

/// A `message` field: typed already, or raw JSON still to read. Read through `&mut`
/// (its content is taken out), not moved: a typed one is 256 bytes.
trait MessageField<'a> {
    fn read_message(&mut self, origin: Origin, base: &str) -> Result<Message<'a>, Violation>;
}

impl<'a> MessageField<'a> for RawMessage<'a> {
    fn read_message(&mut self, origin: Origin, base: &str) -> Result<Message<'a>, Violation> {
        finish_message(self, origin, base)
    }
}

impl<'a> MessageField<'a> for RawJson<'a> {
    fn read_message(&mut self, origin: Origin, base: &str) -> Result<Message<'a>, Violation> {
        parse_message(*self, origin, base)
    }
}

/// A `content` field: typed already, or raw JSON still to read.
trait ContentSource<'a> {
    fn into_field(self, origin: Origin, ptr: &str) -> Result<ContentField<'a>, Violation>;
}

impl<'a> ContentSource<'a> for ContentField<'a> {
    fn into_field(self, _: Origin, _: &str) -> Result<ContentField<'a>, Violation> {
        Ok(self)
    }
}

impl<'a> ContentSource<'a> for RawJson<'a> {
    fn into_field(self, origin: Origin, ptr: &str) -> Result<ContentField<'a>, Violation> {
        if let Some(t) = Text::from_raw(self.get()) {
            return Ok(ContentField::Text(t));
        }
        parse_tracked(self.get()).map_err(|(p, msg)| origin.violation(&format!("{ptr}{p}"), msg))
    }
}

/// The entry `r` describes (its `entry_type`, `message` and `content` are taken out).
fn build_entry<'a, M: MessageField<'a>, C: ContentSource<'a>>(
    r: &mut RawEntry<'a, M, C>,
    raw: &'a str,
    index: usize,
    origin: Origin,
) -> Result<Parsed<'a>, Violation> {
    let v = |ptr: &str, msg: &str| origin.violation(ptr, msg);

    let entry_type = r
        .entry_type
        .take()
        .ok_or_else(|| v("/type", "every entry needs a string `type`"))?;

    if entry_type == "session" {
        return Ok(Parsed::Header(Header {
            raw,
            id: opt_str(r.id).map_err(|m| v("/id", m))?,
            version: version_of(r.version).map_err(|m| v("/version", m))?,
        }));
    }

    let id = opt_str(r.id).map_err(|m| v("/id", m))?.map(Id::from);
    let parent_id = opt_str(r.parent_id)
        .map_err(|m| v("/parentId", m))?
        .map(Id::from);

    let body = match entry_type.as_ref() {
        "message" => {
            let m = r
                .message
                .as_mut()
                .ok_or_else(|| v("/message", "a `message` entry needs a `message` object"))?;
            EntryBody::Message(m.read_message(origin, "/message")?)
        }
        "custom_message" => {
            let field = r
                .content
                .take()
                .map(|c| c.into_field(origin, "/content"))
                .transpose()?;
            EntryBody::CustomMessage {
                content: parse_content(field, origin, &|| "/content".into())?,
            }
        }
        "branch_summary" => EntryBody::BranchSummary {
            summary: required_text(r.summary, origin, || "/summary".into())?,
            details: r.details,
            from_hook: truthy(r.from_hook),
        },
        "compaction" => EntryBody::Compaction(CompactionEntry {
            summary: required_text(r.summary, origin, || "/summary".into())?,
            first_kept_entry_id: opt_str(r.first_kept_entry_id)
                .map_err(|m| v("/firstKeptEntryId", m))?
                .map(Id::from),
            first_kept_entry_index: r.first_kept_entry_index.and_then(number_of),
            tokens_before: r.tokens_before,
            details: r.details,
            from_hook: truthy(r.from_hook),
        }),
        _ => EntryBody::Other,
    };

    Ok(Parsed::Entry(Entry {
        index,
        origin,
        raw,
        entry_type,
        id,
        parent_id,
        migrated_ids: false,
        timestamp: r.timestamp,
        body,
    }))
}

/// Parses an AgentMessage from its JSON. `base` is the pointer of the message inside
/// its entry.
pub fn parse_message<'a>(
    raw: RawJson<'a>,
    origin: Origin,
    base: &str,
) -> Result<Message<'a>, Violation> {
    if !raw.get().starts_with('{') {
        return Err(origin.violation(base, "must be a JSON object"));
    }
    let mut m: RawMessage<'a> = parse_tracked(raw.get()).map_err(|(ptr, msg)| {
        if ptr.is_empty() {
            origin.violation(base, msg)
        } else {
            origin.violation(&format!("{base}{ptr}"), msg)
        }
    })?;
    finish_message(&mut m, origin, base)
}

/// The message `m` describes (its `content` is taken out).
fn finish_message<'a>(
    m: &mut RawMessage<'a>,
    origin: Origin,
    base: &str,
) -> Result<Message<'a>, Violation> {
    let role = role_of(m.role);
    let p = |f: &str| format!("{base}{f}");

    let usage = match m.usage {
        _ if m.usage_fast.is_some() => m.usage_fast,
        None => None,
        Some(r) if r.get() == "null" => None,
        Some(r) if !r.get().starts_with('{') => {
            return Err(origin.violation(&p("/usage"), "must be an object"));
        }
        Some(r) => {
            let u: RawUsage = parse_tracked(r.get()).map_err(|(ptr, msg)| {
                origin.violation(
                    &format!("{}{ptr}", p("/usage")),
                    if ptr.is_empty() {
                        "must be an object".to_string()
                    } else {
                        msg
                    },
                )
            })?;
            Some(Usage {
                input: u.input.unwrap_or(0.0),
                output: u.output.unwrap_or(0.0),
                cache_read: u.cache_read.unwrap_or(0.0),
                cache_write: u.cache_write.unwrap_or(0.0),
                total_tokens: u.total_tokens.unwrap_or(0.0),
            })
        }
    };
    let stop_failed = matches!(
        m.stop_reason.map(RawJson::get),
        Some("\"aborted\"" | "\"error\"")
    );

    let mut msg = Message {
        role,
        content: Content::Absent,
        usage,
        stop_failed,
        bash: None,
        summary: None,
        migrated_role: false,
        text: m.text,
    };
    match role {
        Role::User | Role::ToolResult | Role::Custom | Role::HookMessage => {
            msg.content = parse_content(m.content.take(), origin, &|| p("/content"))?;
        }
        Role::Assistant => {
            msg.content =
                parse_assistant_content(m.content.take(), m.shallow, origin, &|| p("/content"))?;
        }
        Role::BashExecution => {
            msg.bash = Some(BashExecution {
                command: required_text(m.command, origin, || p("/command"))?,
                output: required_text(m.output, origin, || p("/output"))?,
                exit_code: match m.exit_code {
                    Some(r) if r.get().starts_with(['{', '[']) => {
                        return Err(origin.violation(&p("/exitCode"), "must be a number or null"))
                    }
                    other => other,
                },
                cancelled: truthy(m.cancelled),
                truncated: truthy(m.truncated),
                full_output_path: match m.full_output_path {
                    Some(r) if truthy(Some(r)) => {
                        Some(Text::from_raw(r.get()).ok_or_else(|| {
                            origin.violation(&p("/fullOutputPath"), "must be a string")
                        })?)
                    }
                    _ => None,
                },
                exclude_from_context: truthy(m.exclude_from_context),
            });
        }
        Role::BranchSummary | Role::CompactionSummary => {
            msg.summary = Some(required_text(m.summary, origin, || p("/summary"))?);
        }
        Role::Other => {}
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(json: &str) -> Result<Entry<'_>, Violation> {
        match parse_entry(json, 1, Origin::Line(1)) {
            Ok(Parsed::Entry(e)) => Ok(e),
            Ok(Parsed::Header(_)) => panic!("header"),
            Err(EntryError::Invalid(v)) => Err(v),
            Err(EntryError::Syntax(m, _)) => panic!("syntax: {m}"),
        }
    }

    #[test]
    fn parses_messages_and_keeps_unknown_types() {
        let e = entry(r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"toolCall","name":"read","arguments":{"path":"x"}},"junk",{"type":"future"}],"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3},"stopReason":"stop"}}"#).unwrap();
        let m = e.message().unwrap();
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.usage.unwrap().context_tokens(), 3.0);
        let Content::Blocks(b) = &m.content else {
            panic!()
        };
        assert_eq!(b.len(), 4);
        let e =
            entry(r#"{"type":"x_future","id":"b","message":5,"content":{"odd":true}}"#).unwrap();
        assert!(matches!(e.body, EntryBody::Other));
    }

    #[test]
    fn reports_pointers_for_bad_fields() {
        let err = entry(r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":5}]}}"#).unwrap_err();
        assert_eq!(err.pointer, "/message/content/0/text");
        let err = entry(r#"{"id":"a"}"#).unwrap_err();
        assert_eq!(err.pointer, "/type");
        let err = entry(r#"{"type":"message","id":7}"#).unwrap_err();
        assert_eq!(err.pointer, "/id");
        let err = entry(r#"[1]"#).unwrap_err();
        assert_eq!(err.pointer, "");
        let err =
            entry(r#"{"type":"message","id":"a","message":{"role":"user","usage":{"input":"x"}}}"#)
                .unwrap_err();
        assert_eq!(err.pointer, "/message/usage/input");
    }
}
