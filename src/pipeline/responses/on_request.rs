//! A compaction on request always compacts: OpenAI's compaction endpoint never refuses,
//! so when the whole conversation fits the kept part, the newest user message and what
//! follows it are kept and the rest is summarized (the provider's output likewise keeps
//! the user's messages beside one compaction item).

use compactd_core::compaction::message::for_context;
use compactd_core::compaction::tokens::estimate;
use compactd_core::session::{Entry, InputError, Role};

use super::super::input::SessionInput;
use super::super::options::CompactOptions;

/// What the answer says when it compacted more than the settings asked.
pub const KEPT_FROM_NEWEST: &str = "The whole conversation fit the kept part; as a compaction on request, everything before the newest user message was summarized.";
/// What the answer says when there was nothing before the newest user message.
pub const AS_IT_CAME: &str = "Nothing comes before the newest user message: the conversation is returned as it came, with an empty summary.";

/// The `keepRecentTokens` whose cut keeps exactly the newest user message and what follows
/// it (pi's walk reaches that budget at the message, a valid cut point); `None` when no
/// message comes before the newest user message (nothing to summarize).
pub fn keep_from_newest_user(
    input: &SessionInput<CompactOptions>,
) -> Result<Option<u64>, InputError> {
    let positions = input.path(input.options.prepare.leaf_id.as_deref())?;
    let path: Vec<&Entry> = positions
        .iter()
        .map(|&i| &input.session.entries[i])
        .collect();
    let is_user = |e: &Entry| for_context(e).is_some_and(|m| m.role() == Role::User);
    let Some(newest) = path.iter().rposition(|e| is_user(e)) else {
        return Ok(None);
    };
    if !path[..newest].iter().any(|e| for_context(e).is_some()) {
        return Ok(None);
    }
    let kept: u64 = path[newest..]
        .iter()
        .filter_map(|e| for_context(e))
        .map(estimate)
        .sum();
    Ok(Some(kept.max(1)))
}
