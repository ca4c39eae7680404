//! The LLM context of a path, and how many tokens it holds (`tokensBefore`).

use crate::session::{Entry, EntryBody};

use super::message::{for_context, AgentMessage};
use super::tokens::estimate;

/// pi's `buildSessionContext` messages for a path (root first).
pub fn context_messages<'s, 'a>(path: &[&'s Entry<'a>]) -> Vec<AgentMessage<'s, 'a>> {
    let latest = path
        .iter()
        .rposition(|e| matches!(e.body, EntryBody::Compaction(_)));
    let Some(ci) = latest else {
        return path.iter().filter_map(|e| for_context(e)).collect();
    };
    let EntryBody::Compaction(c) = &path[ci].body else {
        unreachable!("rposition matched a compaction")
    };
    let mut out = Vec::with_capacity(path.len() - ci + 1);
    out.push(AgentMessage::CompactionSummary(&c.summary));
    let kept_from = c
        .first_kept_entry_id
        .as_deref()
        .and_then(|id| path[..ci].iter().position(|e| e.id() == Some(id)));
    if let Some(k) = kept_from {
        out.extend(path[k..ci].iter().filter_map(|e| for_context(e)));
    }
    out.extend(path[ci + 1..].iter().filter_map(|e| for_context(e)));
    out
}

/// pi's `estimateContextTokens`: the usage of the last successful assistant message
/// plus estimates of every message after it; all estimates when there is none.
pub fn context_tokens(messages: &[AgentMessage]) -> f64 {
    let last_usage = messages.iter().enumerate().rev().find_map(|(i, m)| {
        let s = m.stored()?;
        (s.role == crate::session::Role::Assistant && !s.stop_failed)
            .then_some(())
            .and(s.usage)
            .map(|u| (i, u))
    });
    match last_usage {
        Some((i, u)) => {
            u.context_tokens()
                + messages[i + 1..]
                    .iter()
                    .map(|m| estimate(*m) as f64)
                    .sum::<f64>()
        }
        None => messages.iter().map(|m| estimate(*m) as f64).sum(),
    }
}
