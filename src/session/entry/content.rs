//! Message content as sent: a string, null, or an array whose objects are blocks
//! (read in the same pass as the array, for the serde path), and the checks that turn
//! it into [`Content`].

use std::borrow::Cow;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::Deserialize as DeriveDeserialize;

use super::parse::{optional_text, required_text};
use super::{Block, Content, RawJson, ToolCall};
use crate::json;
use crate::session::error::{strip_position, Origin, Violation};
use crate::session::text::Text;

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
pub(super) enum ContentField<'a> {
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
pub(super) fn parse_content<'a>(
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

pub(super) fn parse_assistant_content<'a>(
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
    if brackets >= 128 && json::max_depth(raw.get()) > 127 {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(
            &json::string::replace_lone_surrogates(raw.get()),
        ) {
            return Err(origin.violation(&ptr(), strip_position(&e.to_string())));
        }
    }
    Ok(())
}
