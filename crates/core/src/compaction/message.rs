//! The messages an entry contributes, in the three ways pi derives them.

use crate::session::{Content, Entry, EntryBody, Message, Role, Text};

/// An AgentMessage, borrowed from the session.
#[derive(Debug, Clone, Copy)]
pub enum AgentMessage<'s, 'a> {
    /// The message of a `message` entry.
    Stored(&'s Message<'a>),
    /// A `custom_message` entry as a `custom` message.
    Custom(&'s Content<'a>),
    /// A `branch_summary` entry as a `branchSummary` message.
    BranchSummary(&'s Text<'a>),
    /// A compaction as a `compactionSummary` message.
    CompactionSummary(&'s Text<'a>),
}

impl<'s, 'a> AgentMessage<'s, 'a> {
    pub fn stored(&self) -> Option<&'s Message<'a>> {
        match self {
            AgentMessage::Stored(m) => Some(m),
            _ => None,
        }
    }

    pub fn role(&self) -> Role {
        match self {
            AgentMessage::Stored(m) => m.role,
            AgentMessage::Custom(_) => Role::Custom,
            AgentMessage::BranchSummary(_) => Role::BranchSummary,
            AgentMessage::CompactionSummary(_) => Role::CompactionSummary,
        }
    }
}

/// The message an entry contributes to the LLM context (`buildSessionContext`):
/// compactions contribute through their summary only, branch summaries only when
/// non-empty.
pub fn for_context<'s, 'a>(e: &'s Entry<'a>) -> Option<AgentMessage<'s, 'a>> {
    match &e.body {
        EntryBody::Message(m) => Some(AgentMessage::Stored(m)),
        EntryBody::CustomMessage { content } => Some(AgentMessage::Custom(content)),
        EntryBody::BranchSummary { summary, .. } if !summary.is_empty() => {
            Some(AgentMessage::BranchSummary(summary))
        }
        _ => None,
    }
}

/// The message an entry contributes to a compaction's summarization input
/// (`getMessageFromEntryForCompaction`): compactions none, branch summaries always.
pub fn for_compaction<'s, 'a>(e: &'s Entry<'a>) -> Option<AgentMessage<'s, 'a>> {
    match &e.body {
        EntryBody::Message(m) => Some(AgentMessage::Stored(m)),
        EntryBody::CustomMessage { content } => Some(AgentMessage::Custom(content)),
        EntryBody::BranchSummary { summary, .. } => Some(AgentMessage::BranchSummary(summary)),
        _ => None,
    }
}

/// The message an entry contributes to a branch summary: tool results are skipped,
/// compactions become their summary.
pub(crate) fn for_branch<'s, 'a>(e: &'s Entry<'a>) -> Option<AgentMessage<'s, 'a>> {
    match &e.body {
        EntryBody::Message(m) if m.role == Role::ToolResult => None,
        EntryBody::Compaction(c) => Some(AgentMessage::CompactionSummary(&c.summary)),
        _ => for_compaction(e),
    }
}
