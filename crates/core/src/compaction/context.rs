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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_session::{parse, path, tokens, SessionText};
    use crate::session::Role;
    use serde_json::{json, Value};

    /// The roles of a path's context, with `compactionSummary` for the summary.
    fn roles(s: SessionText) -> Vec<Role> {
        let text = s.jsonl();
        let session = parse(&text);
        context_messages(&path(&session))
            .iter()
            .map(|m| m.role())
            .collect()
    }

    fn tokens_of(s: SessionText) -> f64 {
        let text = s.jsonl();
        let session = parse(&text);
        context_tokens(&context_messages(&path(&session)))
    }

    fn assistant_with_usage(s: SessionText, usage: Value, stop_reason: &str) -> SessionText {
        s.message(json!({
            "role": "assistant", "content": [{ "type": "text", "text": tokens(10) }],
            "usage": usage, "stopReason": stop_reason
        }))
    }

    fn usage(total: u64) -> Value {
        json!({ "input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": total })
    }

    #[test]
    fn without_a_compaction_the_context_is_every_entrys_message() {
        let got = roles(
            SessionText::new()
                .user("u")
                .model_change()
                .assistant("a")
                .custom_message("c")
                .branch_summary("b"),
        );
        use Role::*;
        assert_eq!(got, [User, Assistant, Custom, BranchSummary]);
    }

    #[test]
    fn an_empty_branch_summary_is_not_in_the_context() {
        assert_eq!(
            roles(SessionText::new().user("u").branch_summary("")),
            [Role::User]
        );
    }

    #[test]
    fn a_compaction_becomes_its_summary_then_the_kept_entries_then_the_newer_ones() {
        let got = roles(
            SessionText::new()
                .user("dropped")
                .assistant("kept")
                .compaction("s", "e1")
                .user("newer"),
        );
        use Role::*;
        assert_eq!(got, [CompactionSummary, Assistant, User]);
    }

    #[test]
    fn a_kept_entry_not_before_the_compaction_keeps_nothing_before_it() {
        let got = roles(
            SessionText::new()
                .user("dropped")
                .compaction("s", "nowhere")
                .user("newer"),
        );
        assert_eq!(got, [Role::CompactionSummary, Role::User]);
    }

    #[test]
    fn only_the_latest_compaction_shapes_the_context() {
        let text = SessionText::new()
            .user("a")
            .compaction("first", "e0")
            .user("b")
            .compaction("second", "e2")
            .jsonl();
        let session = parse(&text);
        let messages = context_messages(&path(&session));
        assert_eq!(messages.len(), 2);
        let AgentMessage::CompactionSummary(s) = messages[0] else {
            panic!("the summary comes first")
        };
        assert_eq!(s.decode(), "second");
    }

    #[test]
    fn context_tokens_are_the_last_assistant_usage_plus_estimates_after_it() {
        let s = SessionText::new().user(&tokens(1000));
        let s = assistant_with_usage(s, usage(500), "stop").user(&tokens(7));
        assert_eq!(tokens_of(s), 507.0);
    }

    #[test]
    fn a_zero_total_counts_input_output_and_cache_tokens() {
        let s = assistant_with_usage(SessionText::new(), usage(0), "stop");
        assert_eq!(tokens_of(s), 10.0);
    }

    #[test]
    fn aborted_and_failed_assistant_messages_give_no_usage() {
        let s = assistant_with_usage(SessionText::new(), usage(500), "stop");
        let s = assistant_with_usage(s, usage(900), "aborted");
        let s = assistant_with_usage(s, usage(900), "error");
        // 500, then the two failed messages' own estimates of 10 tokens each.
        assert_eq!(tokens_of(s), 520.0);
    }

    #[test]
    fn without_usage_context_tokens_are_the_sum_of_the_estimates() {
        let s = SessionText::new()
            .user(&tokens(3))
            .assistant(&tokens(4))
            .tool_result(&tokens(5));
        assert_eq!(tokens_of(s), 12.0);
    }
}
