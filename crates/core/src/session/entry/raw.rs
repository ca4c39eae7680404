//! Entries as read in one pass, before any field is checked: the shapes serde derives
//! a reader for, and which the scanner (`scan`) fills in directly. Fields the core
//! interprets are kept as raw JSON text; `message` and `content` are typed when they can
//! be read so, raw otherwise.

use std::borrow::Cow;

use serde::de::{self, Deserialize, Deserializer};
use serde::Deserialize as DeriveDeserialize;
use serde_json::value::RawValue;

use super::{Block, RawJson, Usage};
use crate::session::text::Text;

/// An entry as read in one pass. `M` and `C` are the types of `message` and
/// `content`: typed on the fast path, raw JSON on the fallback path (taken when the
/// fast path fails), so an unknown entry type with odd fields still parses and a bad
/// known one gets a precise error.
#[derive(DeriveDeserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEntry<'a, M, C> {
    #[serde(rename = "type", borrow, default, deserialize_with = "entry_type")]
    pub(super) entry_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(super) id: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) parent_id: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) timestamp: Option<RawJson<'a>>,
    pub(super) message: Option<M>,
    pub(super) content: Option<C>,
    #[serde(borrow)]
    pub(super) summary: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) details: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) from_hook: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) first_kept_entry_id: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) first_kept_entry_index: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) tokens_before: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) version: Option<RawJson<'a>>,
}

impl<M, C> RawEntry<'_, M, C> {
    /// No field read yet: what the scanner fills in, in place.
    pub(super) fn empty() -> Self {
        RawEntry {
            entry_type: None,
            id: None,
            parent_id: None,
            timestamp: None,
            message: None,
            content: None,
            summary: None,
            details: None,
            from_hook: None,
            first_kept_entry_id: None,
            first_kept_entry_index: None,
            tokens_before: None,
            version: None,
        }
    }
}

/// An entry's `type`, read raw so that a lone surrogate escape in it is not a syntax
/// error (serde_json refuses to decode one): it decodes to U+FFFD, an unknown type.
fn entry_type<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    let Some(raw) = Option::<&'de RawValue>::deserialize(d)? else {
        return Ok(None);
    };
    match Text::from_raw(raw.get()) {
        Some(text) => Ok(Some(text.decode())),
        None => Err(de::Error::invalid_type(
            crate::session::text::unexpected_of(raw.get()),
            &"a string",
        )),
    }
}

#[derive(DeriveDeserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawMessage<'a> {
    #[serde(borrow)]
    pub(super) role: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) content: Option<ContentField<'a>>,
    #[serde(borrow)]
    pub(super) usage: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) stop_reason: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) command: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) output: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) exit_code: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) cancelled: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) truncated: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) full_output_path: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) exclude_from_context: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) summary: Option<RawJson<'a>>,
    /// `usage` as the scanner read it (it leaves odd ones to serde).
    #[serde(skip)]
    pub(super) usage_fast: Option<Usage>,
    /// Read by the scanner, which takes no deep nesting: no depth check needed.
    #[serde(skip)]
    pub(super) shallow: bool,
    /// The message's JSON text, where the scanner walked it (`Message::text`).
    #[serde(skip)]
    pub(super) text: Option<RawJson<'a>>,
}

impl RawMessage<'_> {
    /// No field read yet, as the scanner starts it (`shallow`: it takes no deep nesting).
    pub(super) fn empty() -> Self {
        RawMessage {
            role: None,
            content: None,
            usage: None,
            stop_reason: None,
            command: None,
            output: None,
            exit_code: None,
            cancelled: None,
            truncated: None,
            full_output_path: None,
            exclude_from_context: None,
            summary: None,
            usage_fast: None,
            shallow: true,
            text: None,
        }
    }
}

#[derive(DeriveDeserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawUsage {
    pub(super) input: Option<f64>,
    pub(super) output: Option<f64>,
    pub(super) cache_read: Option<f64>,
    pub(super) cache_write: Option<f64>,
    pub(super) total_tokens: Option<f64>,
}

/// One content block as sent; typed after looking at `type`.
#[derive(DeriveDeserialize)]
pub(super) struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) block_type: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) text: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) thinking: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) name: Option<RawJson<'a>>,
    #[serde(borrow)]
    pub(super) arguments: Option<RawJson<'a>>,
}

/// Blocks of a content array: objects are parsed, anything else is an unknown block.
pub(super) struct RawBlocks<'a>(pub(super) Vec<Option<RawBlock<'a>>>);

/// One element of a content array, read in the same pass as the array.
struct MaybeBlock<'a>(Option<RawBlock<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Taken raw, not with `deserialize_any`: serde_json decodes a string it hands a
        // visitor, and refuses a lone surrogate escape (`"\ud800"`), which is valid JSON.
        let raw = <&'de RawValue>::deserialize(d)?.get();
        if !raw.starts_with('{') {
            return Ok(MaybeBlock(None));
        }
        serde_json::from_str::<RawBlock<'a>>(raw)
            .map(|b| MaybeBlock(Some(b)))
            .map_err(|e| de::Error::custom(crate::session::error::strip_position(&e.to_string())))
    }
}

/// `content` as read: a string, an array of blocks, or null.
pub(super) enum ContentField<'a> {
    Text(Text<'a>),
    /// Blocks as serde reads them, checked later for the message's role.
    Blocks(RawBlocks<'a>),
    /// Blocks the scanner read and checked as an assistant message's (`scan::block`);
    /// other roles see its thinking and tool call blocks as unknown ones.
    Checked(Vec<Block<'a>>),
    Null,
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Raw first, as `MaybeBlock`: a string is kept escaped (`Text`), so a lone
        // surrogate escape is one UTF-16 unit, as in JavaScript, not a decoding error.
        let raw = <&'de RawValue>::deserialize(d)?.get();
        match raw.as_bytes().first() {
            Some(b'"') => Ok(ContentField::Text(
                Text::from_raw(raw).ok_or_else(|| de::Error::custom("not a string"))?,
            )),
            Some(b'n') => Ok(ContentField::Null),
            Some(b'[') => serde_json::from_str::<Vec<MaybeBlock<'a>>>(raw)
                .map(|blocks| {
                    ContentField::Blocks(RawBlocks(blocks.into_iter().map(|b| b.0).collect()))
                })
                .map_err(|e| {
                    de::Error::custom(crate::session::error::strip_position(&e.to_string()))
                }),
            _ => Err(de::Error::invalid_type(
                crate::session::text::unexpected_of(raw),
                &"a string or an array of content blocks",
            )),
        }
    }
}
