//! Token estimates: pi's chars/4 heuristic over UTF-16 code units.

use crate::session::entry::value_of_str;
use crate::session::{Block, Content, Role};

use super::message::AgentMessage;
use super::stringify::{stringify_len, stringify_raw, NeedsValue, Utf16Count};

/// Characters an image counts for in tool results and custom messages.
const IMAGE_CHARS: usize = 4800;

/// pi's `estimateTokens`: `ceil(chars / 4)`.
pub fn estimate(msg: AgentMessage) -> u64 {
    chars(msg).div_ceil(4) as u64
}

fn chars(msg: AgentMessage) -> usize {
    match msg {
        AgentMessage::Stored(m) => match m.role {
            Role::User => content_chars(&m.content, false),
            Role::ToolResult | Role::Custom => content_chars(&m.content, true),
            Role::Assistant => match &m.content {
                Content::Blocks(blocks) => blocks
                    .iter()
                    .map(|b| match b {
                        Block::Text(t) | Block::Thinking(t) => t.utf16_len(),
                        Block::ToolCall(c) => c.name.utf16_len() + arguments_len(c.arguments.get()),
                        Block::Image | Block::Other => 0,
                    })
                    .sum(),
                _ => 0,
            },
            Role::BashExecution => m
                .bash
                .as_ref()
                .map_or(0, |b| b.command.utf16_len() + b.output.utf16_len()),
            Role::BranchSummary | Role::CompactionSummary => {
                m.summary.as_ref().map_or(0, |s| s.utf16_len())
            }
            Role::HookMessage | Role::Other => 0,
        },
        AgentMessage::Custom(content) => content_chars(content, true),
        AgentMessage::BranchSummary(s) | AgentMessage::CompactionSummary(s) => s.utf16_len(),
    }
}

/// `JSON.stringify(arguments).length`, from the raw text when JavaScript would keep
/// its key order.
fn arguments_len(raw: &str) -> usize {
    let mut n = Utf16Count::default();
    match stringify_raw(raw, &mut n) {
        Ok(()) => n.0,
        Err(NeedsValue) => stringify_len(&value_of_str(raw)),
    }
}

fn content_chars(content: &Content, count_images: bool) -> usize {
    match content {
        Content::Absent => 0,
        Content::Text(t) => t.utf16_len(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => t.utf16_len(),
                Block::Image if count_images => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
    }
}
