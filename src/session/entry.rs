//! Session entries: a typed view over the parts of an entry the core interprets, with
//! the entry's original JSON text kept for everything else.
//!
//! Parsing borrows from the input wherever it can: ids, long texts and opaque values
//! point into the request body. Fields the core does not interpret are never decoded,
//! so they survive untouched (the raw text is what gets echoed back).

use std::borrow::Cow;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::error::{pointer_of, strip_position, Origin, Violation};
use super::id::Id;
use super::text::Text;

pub(crate) mod scan;

/// The text of a JSON value as sent, already validated by the parser (a borrowed
/// `RawValue`, which the fast scanner can build without serde).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawJson<'a>(pub(crate) &'a str);

impl<'a> RawJson<'a> {
    pub fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|r| RawJson(r.get()))
    }
}

/// A session entry (any line but the header).
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Position in the input: the index into the JSON `entries` array or among the
    /// non-blank lines of a JSONL body (the header, when present, is position 0).
    pub index: usize,
    pub origin: Origin,
    /// The entry's JSON text as sent.
    pub raw: &'a str,
    pub entry_type: Cow<'a, str>,
    pub id: Option<Id<'a>>,
    pub parent_id: Option<Id<'a>>,
    /// `id`/`parentId` were assigned by the v1 migration and are not in `raw`.
    pub migrated_ids: bool,
    pub timestamp: Option<RawJson<'a>>,
    pub body: EntryBody<'a>,
}

#[derive(Debug, Clone)]
pub enum EntryBody<'a> {
    Message(Message<'a>),
    CustomMessage {
        content: Content<'a>,
    },
    BranchSummary {
        summary: Text<'a>,
        details: Option<RawJson<'a>>,
        from_hook: bool,
    },
    Compaction(CompactionEntry<'a>),
    /// Metadata and unknown entry types: carried, never interpreted.
    Other,
}

#[derive(Debug, Clone)]
pub struct CompactionEntry<'a> {
    pub summary: Text<'a>,
    pub first_kept_entry_id: Option<Id<'a>>,
    /// v1 files: index into the file's entries (header = 0); resolved by migration.
    pub first_kept_entry_index: Option<f64>,
    pub tokens_before: Option<RawJson<'a>>,
    pub details: Option<RawJson<'a>>,
    pub from_hook: bool,
}

/// An AgentMessage as stored in a `message` entry.
#[derive(Debug, Clone)]
pub struct Message<'a> {
    pub role: Role,
    pub content: Content<'a>,
    pub usage: Option<Usage>,
    /// `stopReason` is `aborted` or `error`: the usage is not trustworthy.
    pub stop_failed: bool,
    pub bash: Option<BashExecution<'a>>,
    /// branchSummary / compactionSummary messages.
    pub summary: Option<Text<'a>>,
    /// The v2 → v3 migration renamed the role (`hookMessage` → `custom`).
    pub migrated_role: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Custom,
    BranchSummary,
    CompactionSummary,
    /// v2 `hookMessage` (becomes `custom` in v3).
    HookMessage,
    Other,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: f64,
}

impl Usage {
    /// pi's `calculateContextTokens`.
    pub fn context_tokens(&self) -> f64 {
        if self.total_tokens != 0.0 && !self.total_tokens.is_nan() {
            self.total_tokens
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }
}

#[derive(Debug, Clone)]
pub struct BashExecution<'a> {
    pub command: Text<'a>,
    pub output: Text<'a>,
    pub exit_code: Option<RawJson<'a>>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<Text<'a>>,
    pub exclude_from_context: bool,
}

/// Message content: a string or a list of blocks.
#[derive(Debug, Clone, Default)]
pub enum Content<'a> {
    #[default]
    Absent,
    Text(Text<'a>),
    Blocks(Vec<Block<'a>>),
}

#[derive(Debug, Clone)]
pub enum Block<'a> {
    Text(Text<'a>),
    Thinking(Text<'a>),
    ToolCall(ToolCall<'a>),
    Image,
    /// Unknown block types count nothing and are not serialized.
    Other,
}

#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    pub name: Text<'a>,
    pub arguments: RawJson<'a>,
}

impl<'a> Entry<'a> {
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn is_message(&self) -> bool {
        matches!(self.body, EntryBody::Message(_))
    }

    pub fn message(&self) -> Option<&Message<'a>> {
        match &self.body {
            EntryBody::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The JSON text of a `message` entry's message as sent. Read on demand: the
    /// single parsing pass does not keep it.
    pub fn message_raw(&self) -> Option<&'a RawValue> {
        #[derive(DeriveDeserialize)]
        struct OnlyMessage<'a> {
            #[serde(borrow)]
            message: Option<&'a RawValue>,
        }
        serde_json::from_str::<OnlyMessage<'a>>(self.raw)
            .ok()?
            .message
    }

    pub fn compaction(&self) -> Option<&CompactionEntry<'a>> {
        match &self.body {
            EntryBody::Compaction(c) => Some(c),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------

/// An entry as read in one pass. `M` and `C` are the types of `message` and
/// `content`: typed on the fast path, raw JSON on the fallback path (taken when the
/// fast path fails), so an unknown entry type with odd fields still parses and a bad
/// known one gets a precise error.
#[derive(DeriveDeserialize)]
#[serde(rename_all = "camelCase")]
struct RawEntry<'a, M, C> {
    #[serde(rename = "type", borrow)]
    entry_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<RawJson<'a>>,
    #[serde(borrow)]
    parent_id: Option<RawJson<'a>>,
    #[serde(borrow)]
    timestamp: Option<RawJson<'a>>,
    message: Option<M>,
    content: Option<C>,
    #[serde(borrow)]
    summary: Option<RawJson<'a>>,
    #[serde(borrow)]
    details: Option<RawJson<'a>>,
    #[serde(borrow)]
    from_hook: Option<RawJson<'a>>,
    #[serde(borrow)]
    first_kept_entry_id: Option<RawJson<'a>>,
    #[serde(borrow)]
    first_kept_entry_index: Option<RawJson<'a>>,
    #[serde(borrow)]
    tokens_before: Option<RawJson<'a>>,
    #[serde(borrow)]
    version: Option<RawJson<'a>>,
}

/// The session header (`type: "session"`).
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub raw: &'a str,
    pub id: Option<Cow<'a, str>>,
    pub version: Option<f64>,
}

/// A parsed input line: the header or an entry.
#[allow(clippy::large_enum_variant)] // one per line, consumed at once
pub enum Parsed<'a> {
    Header(Header<'a>),
    Entry(Entry<'a>),
}

/// Why an entry could not be read.
pub enum EntryError {
    /// Not JSON: (message, column).
    Syntax(String, usize),
    Invalid(Violation),
}

impl From<Violation> for EntryError {
    fn from(v: Violation) -> Self {
        EntryError::Invalid(v)
    }
}

/// Parses one entry's JSON text.
pub fn parse_entry<'a>(
    raw: &'a str,
    index: usize,
    origin: Origin,
) -> Result<Parsed<'a>, EntryError> {
    if let Some(r) = scan::entry(raw) {
        return Ok(build_entry(r, raw, index, origin)?);
    }
    match serde_json::from_str::<RawEntry<'a, RawMessage<'a>, ContentField<'a>>>(raw) {
        // serde reads a struct from an array too; an entry must be an object.
        Ok(r) if raw.trim_start().starts_with('{') => Ok(build_entry(r, raw, index, origin)?),
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
            let r: RawEntry<'a, RawJson<'a>, RawJson<'a>> =
                parse_tracked(raw).map_err(|(pointer, msg)| origin.violation(&pointer, msg))?;
            Ok(build_entry(r, raw, index, origin)?)
        }
    }
}

/// A `message` field: typed already, or raw JSON still to read.
trait MessageField<'a> {
    fn into_message(self, origin: Origin, base: &str) -> Result<Message<'a>, Violation>;
}

impl<'a> MessageField<'a> for RawMessage<'a> {
    fn into_message(self, origin: Origin, base: &str) -> Result<Message<'a>, Violation> {
        finish_message(self, origin, base)
    }
}

impl<'a> MessageField<'a> for RawJson<'a> {
    fn into_message(self, origin: Origin, base: &str) -> Result<Message<'a>, Violation> {
        parse_message(self, origin, base)
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

fn build_entry<'a, M: MessageField<'a>, C: ContentSource<'a>>(
    r: RawEntry<'a, M, C>,
    raw: &'a str,
    index: usize,
    origin: Origin,
) -> Result<Parsed<'a>, Violation> {
    let v = |ptr: &str, msg: &str| origin.violation(ptr, msg);

    let entry_type = r
        .entry_type
        .ok_or_else(|| v("/type", "every entry needs a string `type`"))?;

    if entry_type == "session" {
        return Ok(Parsed::Header(Header {
            raw,
            id: opt_str(r.id).map_err(|m| v("/id", m))?,
            version: match r.version {
                Some(x) => number_of(x),
                None => None,
            },
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
                .ok_or_else(|| v("/message", "a `message` entry needs a `message` object"))?;
            EntryBody::Message(m.into_message(origin, "/message")?)
        }
        "custom_message" => {
            let field = r
                .content
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

/// Deserializes `raw`; on failure, parses again with path tracking (too slow for the
/// happy path) to name the JSON pointer of the problem.
fn parse_tracked<'a, T: Deserialize<'a>>(raw: &'a str) -> Result<T, (String, String)> {
    serde_json::from_str(raw).map_err(|fast_err| {
        let mut de = serde_json::Deserializer::from_str(raw);
        match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(e) => (
                pointer_of(e.path()),
                strip_position(&e.inner().to_string()).to_string(),
            ),
            Ok(_) => (
                String::new(),
                strip_position(&fast_err.to_string()).to_string(),
            ),
        }
    })
}

/// A string field that may be absent or null.
fn opt_str<'a>(raw: Option<RawJson<'a>>) -> Result<Option<Cow<'a, str>>, &'static str> {
    match raw {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => match Text::from_raw(r.get()) {
            Some(t) => Ok(Some(t.decode())),
            None => Err("must be a string"),
        },
    }
}

/// Pointers are built only when something is wrong (`ptr` is called on errors only).
fn required_text<'a>(
    raw: Option<RawJson<'a>>,
    origin: Origin,
    ptr: impl FnOnce() -> String,
) -> Result<Text<'a>, Violation> {
    raw.and_then(|r| Text::from_raw(r.get()))
        .ok_or_else(|| origin.violation(&ptr(), "must be a string"))
}

fn optional_text<'a>(
    raw: Option<RawJson<'a>>,
    origin: Origin,
    ptr: impl FnOnce() -> String,
) -> Result<Option<Text<'a>>, Violation> {
    match raw {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => Text::from_raw(r.get())
            .map(Some)
            .ok_or_else(|| origin.violation(&ptr(), "must be a string")),
    }
}

fn number_of(raw: RawJson) -> Option<f64> {
    let s = raw.get();
    match s.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => s.parse().ok(),
        _ => None,
    }
}

/// JavaScript truthiness of a JSON value (absent counts as `undefined`).
pub fn truthy(raw: Option<RawJson>) -> bool {
    let Some(raw) = raw else { return false };
    match raw.get() {
        "null" | "false" | "\"\"" => false,
        s if s.starts_with('"') || s.starts_with('[') || s.starts_with('{') || s == "true" => true,
        s => s
            .parse::<f64>()
            .map(|f| f != 0.0 && !f.is_nan())
            .unwrap_or(true),
    }
}

#[derive(DeriveDeserialize)]
#[serde(rename_all = "camelCase")]
struct RawMessage<'a> {
    #[serde(borrow)]
    role: Option<RawJson<'a>>,
    #[serde(borrow)]
    content: Option<ContentField<'a>>,
    #[serde(borrow)]
    usage: Option<RawJson<'a>>,
    #[serde(borrow)]
    stop_reason: Option<RawJson<'a>>,
    #[serde(borrow)]
    command: Option<RawJson<'a>>,
    #[serde(borrow)]
    output: Option<RawJson<'a>>,
    #[serde(borrow)]
    exit_code: Option<RawJson<'a>>,
    #[serde(borrow)]
    cancelled: Option<RawJson<'a>>,
    #[serde(borrow)]
    truncated: Option<RawJson<'a>>,
    #[serde(borrow)]
    full_output_path: Option<RawJson<'a>>,
    #[serde(borrow)]
    exclude_from_context: Option<RawJson<'a>>,
    #[serde(borrow)]
    summary: Option<RawJson<'a>>,
    /// `usage` as the scanner read it (it leaves odd ones to serde).
    #[serde(skip)]
    usage_fast: Option<Usage>,
    /// Read by the scanner, which takes no deep nesting: no depth check needed.
    #[serde(skip)]
    shallow: bool,
}

#[derive(DeriveDeserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawUsage {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    total_tokens: Option<f64>,
}

fn role_of(raw: Option<RawJson>) -> Role {
    match raw.map(RawJson::get) {
        Some("\"user\"") => Role::User,
        Some("\"assistant\"") => Role::Assistant,
        Some("\"toolResult\"") => Role::ToolResult,
        Some("\"bashExecution\"") => Role::BashExecution,
        Some("\"custom\"") => Role::Custom,
        Some("\"branchSummary\"") => Role::BranchSummary,
        Some("\"compactionSummary\"") => Role::CompactionSummary,
        Some("\"hookMessage\"") => Role::HookMessage,
        _ => Role::Other,
    }
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
    let m: RawMessage<'a> = parse_tracked(raw.get()).map_err(|(ptr, msg)| {
        if ptr.is_empty() {
            origin.violation(base, msg)
        } else {
            origin.violation(&format!("{base}{ptr}"), msg)
        }
    })?;
    finish_message(m, origin, base)
}

fn finish_message<'a>(
    m: RawMessage<'a>,
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
    };
    match role {
        Role::User | Role::ToolResult | Role::Custom | Role::HookMessage => {
            msg.content = parse_content(m.content, origin, &|| p("/content"))?;
        }
        Role::Assistant => {
            msg.content = parse_assistant_content(m.content, m.shallow, origin, &|| p("/content"))?;
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

/// One content block as sent; typed after looking at `type`.
#[derive(DeriveDeserialize)]
pub(crate) struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    block_type: Option<RawJson<'a>>,
    #[serde(borrow)]
    text: Option<RawJson<'a>>,
    #[serde(borrow)]
    thinking: Option<RawJson<'a>>,
    #[serde(borrow)]
    name: Option<RawJson<'a>>,
    #[serde(borrow)]
    arguments: Option<RawJson<'a>>,
}

/// Blocks of a content array: objects are parsed, anything else is an unknown block.
pub(crate) struct RawBlocks<'a>(Vec<Option<RawBlock<'a>>>);

/// One element of a content array, read in the same pass as the array.
struct MaybeBlock<'a>(Option<RawBlock<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MaybeBlock<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                RawBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|b| MaybeBlock(Some(b)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(MaybeBlock(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeBlock(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

fn block_kind(b: &RawBlock) -> &'static str {
    match b.block_type.map(RawJson::get) {
        Some("\"text\"") => "text",
        Some("\"thinking\"") => "thinking",
        Some("\"toolCall\"") => "toolCall",
        Some("\"image\"") => "image",
        _ => "",
    }
}

/// `content` as read: a string, an array of blocks, or null.
pub(crate) enum ContentField<'a> {
    Text(Text<'a>),
    Blocks(RawBlocks<'a>),
    Null,
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ContentField<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(ContentField::Text(Text::Plain(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(ContentField::Text(Text::Plain(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(ContentField::Text(Text::Plain(Cow::Owned(s))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentField::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(MaybeBlock(b)) = seq.next_element()? {
                    out.push(b);
                }
                Ok(ContentField::Blocks(RawBlocks(out)))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Content of user, toolResult and custom messages: a string or blocks of text/images.
fn parse_content<'a>(
    field: Option<ContentField<'a>>,
    origin: Origin,
    ptr: &dyn Fn() -> String,
) -> Result<Content<'a>, Violation> {
    let blocks = match field {
        None | Some(ContentField::Null) => return Ok(Content::Absent),
        Some(ContentField::Text(t)) => return Ok(Content::Text(t)),
        Some(ContentField::Blocks(b)) => b,
    };
    let mut out = Vec::with_capacity(blocks.0.len());
    for (i, b) in blocks.0.into_iter().enumerate() {
        let Some(b) = b else {
            out.push(Block::Other);
            continue;
        };
        out.push(match block_kind(&b) {
            "text" => Block::Text(
                optional_text(b.text, origin, || format!("{}/{i}/text", ptr()))?
                    .unwrap_or_default(),
            ),
            "image" => Block::Image,
            _ => Block::Other,
        });
    }
    Ok(Content::Blocks(out))
}

fn parse_assistant_content<'a>(
    field: Option<ContentField<'a>>,
    shallow: bool,
    origin: Origin,
    ptr: &dyn Fn() -> String,
) -> Result<Content<'a>, Violation> {
    let blocks = match field {
        None | Some(ContentField::Null) => {
            return Err(origin.violation(&ptr(), "an assistant message needs a `content` array"))
        }
        // pi iterates a string's characters and finds no blocks in it.
        Some(ContentField::Text(_)) => return Ok(Content::Blocks(Vec::new())),
        Some(ContentField::Blocks(b)) => b,
    };
    let mut out = Vec::with_capacity(blocks.0.len());
    for (i, b) in blocks.0.into_iter().enumerate() {
        let Some(b) = b else {
            out.push(Block::Other);
            continue;
        };
        let bp = |f: &str| format!("{}/{i}{f}", ptr());
        out.push(match block_kind(&b) {
            "text" => Block::Text(required_text(b.text, origin, || bp("/text"))?),
            "thinking" => Block::Thinking(required_text(b.thinking, origin, || bp("/thinking"))?),
            "toolCall" => {
                let name = required_text(b.name, origin, || bp("/name"))?;
                let arguments = match b.arguments {
                    Some(a) if a.get() != "null" => a,
                    _ => {
                        return Err(origin.violation(
                            &bp("/arguments"),
                            "a toolCall needs `arguments` (an object)",
                        ))
                    }
                };
                if !shallow {
                    check_depth(arguments, origin, || bp("/arguments"))?;
                }
                Block::ToolCall(ToolCall { name, arguments })
            }
            "image" => Block::Image,
            _ => Block::Other,
        });
    }
    Ok(Content::Blocks(out))
}

/// Arguments are re-parsed as values later; reject now what that parser cannot read
/// (more than 128 levels of nesting) instead of silently estimating it wrong.
fn check_depth(
    raw: RawJson,
    origin: Origin,
    ptr: impl FnOnce() -> String,
) -> Result<(), Violation> {
    // Counting brackets is a SIMD scan; the exact depth is measured only when it could matter.
    let brackets = memchr::memchr2_iter(b'{', b'[', raw.get().as_bytes())
        .take(128)
        .count();
    if brackets >= 128 && max_depth(raw.get()) > 127 {
        if let Err(e) =
            serde_json::from_str::<serde_json::Value>(&replace_lone_surrogates(raw.get()))
        {
            return Err(origin.violation(&ptr(), strip_position(&e.to_string())));
        }
    }
    Ok(())
}

/// Deepest nesting of arrays and objects in valid JSON text.
fn max_depth(json: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for &b in json.as_bytes() {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Re-reads raw JSON that may contain lone surrogate escapes (valid JSON, but not
/// representable in a Rust string): they become U+FFFD.
pub fn value_of(raw: RawJson) -> serde_json::Value {
    value_of_str(raw.get())
}

/// [`value_of`] for JSON text known to be valid.
pub fn value_of_str(raw: &str) -> serde_json::Value {
    match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(_) => {
            serde_json::from_str(&replace_lone_surrogates(raw)).unwrap_or(serde_json::Value::Null)
        }
    }
}

fn replace_lone_surrogates(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    let hex = |at: usize| -> Option<u32> {
        let h = s.get(at..at + 4)?;
        u32::from_str_radix(h, 16).ok()
    };
    while i < b.len() {
        if b[i] == b'\\' {
            if b.get(i + 1) == Some(&b'u') {
                if let Some(u) = hex(i + 2) {
                    let paired_lo = |at: usize| {
                        b.get(at) == Some(&b'\\')
                            && b.get(at + 1) == Some(&b'u')
                            && hex(at + 2).is_some_and(|l| (0xDC00..0xE000).contains(&l))
                    };
                    if (0xD800..0xDC00).contains(&u) && paired_lo(i + 6) {
                        i += 12;
                        continue;
                    }
                    if (0xD800..0xE000).contains(&u) {
                        out.push_str(&s[last..i]);
                        out.push_str("\\ufffd");
                        i += 6;
                        last = i;
                        continue;
                    }
                }
                i += 6;
            } else {
                i += 2;
            }
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
    out
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

    #[test]
    fn javascript_truthiness() {
        let t = |s: &str| truthy(Some(RawJson(s)));
        assert!(!t("0") && !t("-0") && !t("\"\"") && !t("null") && !t("false") && !t("0.0"));
        assert!(t("1") && t("\"0\"") && t("[]") && t("{}") && t("true"));
        assert!(!truthy(None));
    }

    #[test]
    fn nesting_depth_ignores_brackets_in_strings() {
        assert_eq!(max_depth(r#"{"a":"[[[[\\\"{{","b":[[1],{"c":[]}]}"#), 4);
        assert_eq!(max_depth("[]"), 1);
        assert_eq!(max_depth("5"), 0);
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let v = value_of(RawJson(r#"{"a":"x\ud800y","b":"\ud83d\ude00"}"#));
        assert_eq!(v["a"], "x\u{FFFD}y");
        assert_eq!(v["b"], "😀");
    }
}
