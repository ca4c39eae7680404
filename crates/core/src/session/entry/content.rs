//! Message content, checked: the blocks of user, tool result and custom messages
//! (text and images) and of assistant messages (text, thinking, tool calls), with the
//! JSON pointer of any bad block.

use super::fields::{optional_text, required_text};
use super::raw::{ContentField, RawBlock};
use super::{Block, Content, RawJson, ToolCall};
use crate::json;
use crate::session::error::{strip_position, Origin, Violation};

fn block_kind(b: &RawBlock) -> &'static str {
    match b.block_type.map(RawJson::get) {
        Some("\"text\"") => "text",
        Some("\"thinking\"") => "thinking",
        Some("\"toolCall\"") => "toolCall",
        Some("\"image\"") => "image",
        _ => "",
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
        Some(ContentField::Checked(mut blocks)) => {
            for b in &mut blocks {
                if matches!(b, Block::Thinking(_) | Block::ToolCall(_)) {
                    *b = Block::Other;
                }
            }
            return Ok(Content::Blocks(blocks));
        }
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
        // Read by the scanner, which takes no deep nesting: no depth check needed.
        Some(ContentField::Checked(blocks)) => return Ok(Content::Blocks(blocks)),
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
