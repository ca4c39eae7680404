//! Branch summaries: what an abandoned branch holds, and the budgeted selection of it a
//! summarizer reads (pi's `collectEntriesForBranchSummary` and `prepareBranchEntries`).

use crate::session::{Entry, EntryBody, InputError, Session};

use super::file_ops::FileOps;
use super::message::{for_branch, AgentMessage};
use super::tokens::estimate;

/// The entries between the old leaf and the common ancestor with the target.
#[derive(Debug)]
pub struct Collected<'s, 'a> {
    /// Oldest first.
    pub entries: Vec<&'s Entry<'a>>,
    /// Position (into `session.entries`) of the deepest entry on both paths.
    pub common_ancestor: Option<usize>,
}

/// Walks from `old_leaf` up to (excluding) the deepest entry that is also on the
/// target's path. A target below the old leaf gives nothing.
pub fn collect_branch<'s, 'a>(
    session: &'s Session<'a>,
    old_leaf: usize,
    target: usize,
) -> Result<Collected<'s, 'a>, InputError> {
    let old_path = session.walk_to_root(old_leaf)?;
    let target_path = session.walk_to_root(target)?;
    let on_old: std::collections::HashSet<usize> = old_path.iter().copied().collect();
    let common_ancestor = target_path
        .iter()
        .rev()
        .copied()
        .find(|p| on_old.contains(p));
    // The old path is root-first; everything after the common ancestor is the branch.
    let start = match common_ancestor {
        Some(c) => old_path.iter().position(|&p| p == c).map_or(0, |i| i + 1),
        None => 0,
    };
    Ok(Collected {
        entries: old_path[start..]
            .iter()
            .map(|&p| &session.entries[p])
            .collect(),
        common_ancestor,
    })
}

/// The selection a branch summary is written from.
#[derive(Debug)]
pub struct BranchSelection<'s, 'a> {
    /// Selected messages, oldest first, with the entry each came from.
    pub messages: Vec<(AgentMessage<'s, 'a>, &'s Entry<'a>)>,
    pub file_ops: FileOps,
    pub total_tokens: u64,
}

/// pi's `prepareBranchEntries`: file lists of earlier pi-generated branch summaries,
/// then newest to oldest until `token_budget` (≤ 0: no limit) — a summary entry that
/// does not fit is still taken while the total is below 90 % of the budget.
pub fn prepare_branch<'s, 'a>(
    entries: &[&'s Entry<'a>],
    token_budget: i64,
) -> BranchSelection<'s, 'a> {
    let mut file_ops = FileOps::default();
    for e in entries {
        if let EntryBody::BranchSummary {
            details, from_hook, ..
        } = &e.body
        {
            file_ops.add_details(*details, *from_hook);
        }
    }
    let mut selected = Vec::new();
    let mut total: u64 = 0;
    for e in entries.iter().rev() {
        let Some(msg) = for_branch(e) else { continue };
        file_ops.add_message(msg);
        let tokens = estimate(msg);
        if token_budget > 0 && (total + tokens) as i64 > token_budget {
            let is_summary = matches!(
                e.body,
                EntryBody::Compaction(_) | EntryBody::BranchSummary { .. }
            );
            if is_summary && (total as f64) < token_budget as f64 * 0.9 {
                selected.push((msg, *e));
                total += tokens;
            }
            break;
        }
        selected.push((msg, *e));
        total += tokens;
    }
    selected.reverse();
    BranchSelection {
        messages: selected,
        file_ops,
        total_tokens: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> String {
        [
            r#"{"type":"session","version":3,"id":"s"}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"start"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"edit","arguments":{"path":"x.rs"}}]}}"#,
            r#"{"type":"message","id":"c","parentId":"b","message":{"role":"toolResult","toolName":"edit","content":"ok"}}"#,
            r#"{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":"more"}}"#,
            r#"{"type":"message","id":"e","parentId":"a","message":{"role":"user","content":"other way"}}"#,
        ]
        .join("\n")
    }

    #[test]
    fn collects_the_abandoned_branch_and_skips_tool_results() {
        let body = session();
        let s = Session::from_jsonl(&body).unwrap();
        let old = s.position("d").unwrap();
        let target = s.position("e").unwrap();
        let c = collect_branch(&s, old, target).unwrap();
        assert_eq!(s.entries[c.common_ancestor.unwrap()].id(), Some("a"));
        let ids: Vec<_> = c.entries.iter().map(|e| e.id().unwrap()).collect();
        assert_eq!(ids, ["b", "c", "d"]);
        let sel = prepare_branch(&c.entries, 0);
        assert_eq!(sel.messages.len(), 2, "the tool result is skipped");
        assert_eq!(sel.file_ops.lists().modified_files, ["x.rs"]);
        // Going down from an ancestor leaves nothing behind.
        let down = collect_branch(&s, s.position("a").unwrap(), old).unwrap();
        assert!(down.entries.is_empty());
    }

    #[test]
    fn the_budget_keeps_the_newest_messages() {
        let body = session();
        let s = Session::from_jsonl(&body).unwrap();
        let c = collect_branch(&s, s.position("d").unwrap(), s.position("e").unwrap()).unwrap();
        let sel = prepare_branch(&c.entries, 1);
        assert_eq!(sel.messages.len(), 1);
        assert_eq!(sel.messages[0].1.id(), Some("d"));
    }

    #[test]
    fn earlier_branch_summaries_pass_on_their_lists_by_whose_they_are() {
        let modified = |summary_fields: &str| {
            let body = [
                r#"{"type":"session","version":3,"id":"s"}"#,
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"start"}}"#,
                &format!(
                    r#"{{"type":"branch_summary","id":"b","parentId":"a","fromId":"a","summary":"s",{summary_fields}}}"#
                ),
                r#"{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"more"}}"#,
                r#"{"type":"message","id":"d","parentId":"a","message":{"role":"user","content":"other way"}}"#,
            ]
            .join("\n");
            let s = Session::from_jsonl(&body).unwrap();
            let c = collect_branch(&s, s.position("c").unwrap(), s.position("d").unwrap()).unwrap();
            prepare_branch(&c.entries, 0)
                .file_ops
                .lists()
                .modified_files
        };
        let lists = r#""details":{"readFiles":[],"modifiedFiles":["m.rs"]"#;
        assert_eq!(modified(&format!("{lists}}}")), ["m.rs"]);
        assert!(modified(&format!(r#"{lists}}},"fromHook":true"#)).is_empty());
        assert_eq!(
            modified(&format!(
                r#"{lists},"producer":"compactd"}},"fromHook":true"#
            )),
            ["m.rs"]
        );
    }
}
