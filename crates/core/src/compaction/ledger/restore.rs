//! Re-insertion: the pinned items a summary dropped, restored verbatim in a closing
//! section, within a token budget, and the [`Retention`] report for the answer.
//!
//! ```text
//! <the summary>
//!
//! ## Pinned (restored verbatim)
//! Stated earlier and still in force; the summary above did not carry them.
//!
//! ### Constraints
//! - Budget cap is $500 total. Never exceed it.
//!
//! ### Modified files
//! - src/compaction/ledger/mod.rs
//! ```
//!
//! Decisions:
//! * The section is ours: a section with the same heading already in the summary (a
//!   previous round's, carried forward by the summarizer) is removed before checking, so
//!   the summary never holds two and superseded items do not linger in it.
//! * Items are grouped by kind in a fixed order ([`Kind::ALL`]) and, within a kind, listed
//!   oldest first; a multi-line text keeps its lines, indented under its bullet.
//! * The budget is in tokens as the crate estimates them: UTF-16 units / 4, rounded up,
//!   of everything appended (the blank line before the heading included).
//! * Over budget, items are chosen in [`budget_order`]: labelled statements first, then
//!   by kind (rules, constraints, preferences, goal states, facts, …), newest first. An item that does not fit is left out and the next one is tried,
//!   so one long item does not shut out several short ones. What is left out is reported
//!   by id.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::kind::Kind;
use super::model::{Ledger, PinnedItem};
use super::priority::budget_order;
use super::verify::SummaryText;

/// The heading of the closing section.
pub const PINNED_HEADING: &str = "## Pinned (restored verbatim)";
const PINNED_NOTE: &str =
    "Stated earlier and still in force; the summary above did not carry them.";
/// What joins the summary and the section.
const SEPARATOR: &str = "\n\n";

/// What the checked summary kept, for the answer's `retention`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    /// Active items in the ledger.
    pub pinned: usize,
    /// Items the summary carried by itself.
    pub present: usize,
    /// Items restored in the closing section.
    pub reinserted: usize,
    /// Their ids, in the order the section lists them.
    #[serde(default)]
    pub reinserted_ids: Vec<String>,
    /// Ids of the missing items the budget left out.
    pub left_out: Vec<String>,
}

/// A summary after checking: the text to store and what happened to each item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub summary: String,
    pub retention: Retention,
    /// Ids of the restored items, in the order they are listed.
    pub reinserted_ids: Vec<String>,
}

/// Tokens of a text as the crate estimates them: UTF-16 units / 4, rounded up.
pub fn estimate_tokens(s: &str) -> usize {
    s.encode_utf16().count().div_ceil(4)
}

/// Standing statements in force (rules, constraints, preferences, goal states, facts) are
/// restored within at least this many tokens, whatever the summary's own output budget:
/// the user's words stand beside the narrative, they are not part of it. A bound all the
/// same, so a ledger of thousands of statements cannot blow up a summary.
pub const STANDING_TOKENS: usize = 4096;

/// Checks `summary` against the ledger's active items and restores the missing ones
/// within `budget_tokens` (see the module docs).
pub fn check_summary(summary: &str, ledger: &Ledger, budget_tokens: usize) -> Checked {
    check_summary_within(summary, ledger, budget_tokens, budget_tokens)
}

/// [`check_summary`], standing statements restored within `standing_tokens` instead when
/// that is more (see [`STANDING_TOKENS`]).
pub fn check_summary_within(
    summary: &str,
    ledger: &Ledger,
    budget_tokens: usize,
    standing_tokens: usize,
) -> Checked {
    let base = strip_section(summary);
    let text = SummaryText::new(&base);
    let active: Vec<&PinnedItem> = ledger.active().collect();
    let missing: Vec<&PinnedItem> = active
        .iter()
        .copied()
        .filter(|i| !text.carries(i))
        .collect();
    let chosen = select(&missing, budget_tokens, standing_tokens.max(budget_tokens));
    let restored: Vec<&PinnedItem> = missing
        .iter()
        .copied()
        .filter(|i| chosen.contains(&i.id.as_str()))
        .collect();
    let left_out = missing
        .iter()
        .filter(|i| !chosen.contains(&i.id.as_str()))
        .map(|i| i.id.clone())
        .collect();
    let summary = if restored.is_empty() {
        base.into_owned()
    } else {
        format!(
            "{}{SEPARATOR}{}",
            base.trim_end(),
            render_section(&restored)
        )
    };
    let reinserted_ids: Vec<String> = Kind::ALL
        .iter()
        .flat_map(|k| restored.iter().filter(move |i| i.kind == *k))
        .map(|i| i.id.clone())
        .collect();
    Checked {
        summary,
        retention: Retention {
            pinned: active.len(),
            present: active.len() - missing.len(),
            reinserted: restored.len(),
            reinserted_ids: reinserted_ids.clone(),
            left_out,
        },
        reinserted_ids,
    }
}

/// The closing section for these items (in ledger order), grouped by kind.
pub fn render_section(items: &[&PinnedItem]) -> String {
    let mut out = format!("{PINNED_HEADING}\n{PINNED_NOTE}\n");
    for kind in Kind::ALL {
        let mut group = items.iter().filter(|i| i.kind == kind).peekable();
        if group.peek().is_none() {
            continue;
        }
        out.push_str(&group_heading(kind));
        for item in group {
            out.push_str(&item_line(item));
        }
    }
    out
}

fn group_heading(kind: Kind) -> String {
    let name = match kind {
        Kind::Entry => "Pinned entries",
        Kind::Rule => "Rules",
        Kind::Constraint => "Constraints",
        Kind::Preference => "Preferences",
        Kind::Fact => "Facts",
        Kind::Goal => "Goal state",
        Kind::Objective => "Objective",
        Kind::Decision => "Decisions",
        Kind::File => "Modified files",
        Kind::Error => "Unresolved errors",
    };
    format!("\n### {name}\n")
}

fn item_line(item: &PinnedItem) -> String {
    let mut out = String::from("- ");
    for (n, line) in item.text.trim().lines().enumerate() {
        if n > 0 {
            out.push_str("\n  ");
        }
        out.push_str(line.trim_end());
    }
    out.push('\n');
    out
}

fn units(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The ids chosen within the budget. The rendered size is additive (heading, one
/// heading per kind present, one line per item), so it is tracked without re-rendering.
fn select<'a>(
    missing: &[&'a PinnedItem],
    budget_tokens: usize,
    standing_tokens: usize,
) -> Vec<&'a str> {
    let budget_units = budget_tokens.saturating_mul(4);
    let standing_units = standing_tokens.saturating_mul(4);
    let order = budget_order(missing).into_iter().map(|p| (p, missing[p]));
    let fixed = units(SEPARATOR) + units(PINNED_HEADING) + units(PINNED_NOTE) + 2;
    let mut used = fixed;
    let mut kinds: Vec<Kind> = Vec::new();
    let mut chosen = Vec::new();
    for (_, item) in order {
        let heading = if kinds.contains(&item.kind) {
            0
        } else {
            units(&group_heading(item.kind))
        };
        let cost = heading + units(&item_line(item));
        let limit = if item.kind.is_standing() {
            standing_units
        } else {
            budget_units
        };
        if used + cost <= limit {
            used += cost;
            if heading > 0 {
                kinds.push(item.kind);
            }
            chosen.push(item.id.as_str());
        }
    }
    chosen
}

/// The summary without a previous round's pinned section.
pub fn strip_section(summary: &str) -> Cow<'_, str> {
    let Some(start) = find_heading(summary) else {
        return Cow::Borrowed(summary);
    };
    let body_start = start + PINNED_HEADING.len();
    let end = summary[body_start..]
        .match_indices('\n')
        .map(|(i, _)| body_start + i + 1)
        .find(|&i| {
            let line = &summary[i..];
            line.starts_with("## ") || line.starts_with("# ")
        })
        .unwrap_or(summary.len());
    let before = summary[..start].trim_end();
    let after = &summary[end..];
    Cow::Owned(if after.is_empty() {
        before.to_string()
    } else {
        format!("{before}{SEPARATOR}{after}")
    })
}

fn find_heading(summary: &str) -> Option<usize> {
    summary
        .match_indices(PINNED_HEADING)
        .map(|(i, _)| i)
        .find(|&i| {
            let rest = &summary[i + PINNED_HEADING.len()..];
            (i == 0 || summary[..i].ends_with('\n'))
                && (rest.is_empty() || rest.starts_with(['\n', '\r']))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::{PinnedItem, Speaker};

    fn ledger(items: &[(Kind, &str, &[&str])]) -> Ledger {
        let mut l = Ledger::default();
        for (n, (kind, text, values)) in items.iter().enumerate() {
            let values = values.iter().map(|v| v.to_string()).collect();
            let id = format!("e{n}");
            l.push(PinnedItem::new(
                *kind,
                Speaker::User,
                *text,
                values,
                None,
                Some(&id),
            ));
        }
        l
    }

    #[test]
    fn a_summary_that_carries_everything_is_left_unchanged() {
        let l = ledger(&[(Kind::Constraint, "Budget cap is $500 total.", &["$500"])]);
        let c = check_summary("Keep spend under $500.", &l, 1000);
        assert_eq!(c.summary, "Keep spend under $500.");
        assert_eq!(
            c.retention,
            Retention {
                pinned: 1,
                present: 1,
                reinserted: 0,
                reinserted_ids: vec![],
                left_out: vec![]
            }
        );
    }

    #[test]
    fn missing_items_are_restored_verbatim_grouped_by_kind() {
        let l = ledger(&[
            (Kind::File, "src/a.rs", &["src/a.rs"]),
            (Kind::Rule, "Never push to main.", &[]),
            (
                Kind::Constraint,
                "Budget cap is $500 total. Never exceed it.",
                &["$500"],
            ),
        ]);
        let c = check_summary("We worked on things.\n", &l, 1000);
        assert_eq!(
            c.summary,
            "We worked on things.\n\n## Pinned (restored verbatim)\n\
             Stated earlier and still in force; the summary above did not carry them.\n\
             \n### Rules\n- Never push to main.\n\
             \n### Constraints\n- Budget cap is $500 total. Never exceed it.\n\
             \n### Modified files\n- src/a.rs\n"
        );
        assert_eq!(c.retention.reinserted, 3);
        assert_eq!(c.reinserted_ids[0], l.items()[1].id);
    }

    #[test]
    fn the_section_fits_the_budget_and_the_rest_is_reported() {
        let l = ledger(&[
            (
                Kind::Fact,
                "The database is pg.example.com.",
                &["pg.example.com"],
            ),
            (Kind::Rule, "Never push to main.", &[]),
            (
                Kind::Fact,
                "New fact: the host is omega.example.com.",
                &["omega.example.com"],
            ),
        ]);
        let base = "Summary.";
        // Room for the heading, the rule and one fact.
        let fixed = units(SEPARATOR) + units(PINNED_HEADING) + units(PINNED_NOTE) + 2;
        let rule = units("\n### Rules\n") + units("- Never push to main.\n");
        let fact = units("\n### Facts\n") + units("- New fact: the host is omega.example.com.\n");
        let budget = (fixed + rule + fact).div_ceil(4);
        let c = check_summary(base, &l, budget);
        assert_eq!(c.retention.reinserted, 2);
        assert_eq!(c.retention.left_out, [l.items()[0].id.clone()]);
        assert!(c.summary.contains("omega.example.com") && !c.summary.contains("pg.example.com"));
        assert!(estimate_tokens(&c.summary[base.len()..]) <= budget);
    }

    #[test]
    fn over_budget_rules_and_constraints_come_first_then_newest_first() {
        let l = ledger(&[
            (Kind::Rule, "Never push to main.", &[]),
            (
                Kind::Fact,
                "The host is omega.example.com.",
                &["omega.example.com"],
            ),
            (Kind::Objective, "Add a logout button.", &[]),
        ]);
        let fixed = units(SEPARATOR) + units(PINNED_HEADING) + units(PINNED_NOTE) + 2;
        let rule = units("\n### Rules\n") + units("- Never push to main.\n");
        let c = check_summary("Nothing.", &l, (fixed + rule + 20).div_ceil(4));
        assert_eq!(c.reinserted_ids, [l.items()[0].id.clone()]);
        // The newest (objective) would come next; the fact is the last choice.
        let objective = units("\n### Objective\n") + units("- Add a logout button.\n");
        let c = check_summary("Nothing.", &l, (fixed + rule + objective).div_ceil(4));
        assert_eq!(
            c.reinserted_ids,
            [l.items()[0].id.clone(), l.items()[2].id.clone()]
        );
        assert_eq!(c.retention.left_out, [l.items()[1].id.clone()]);
    }

    #[test]
    fn a_zero_budget_restores_nothing_and_reports_everything() {
        let l = ledger(&[(Kind::Rule, "Never push to main.", &[])]);
        let c = check_summary("Nothing.", &l, 0);
        assert_eq!(c.summary, "Nothing.");
        assert_eq!(c.retention.left_out.len(), 1);
    }

    #[test]
    fn a_previous_section_is_replaced_not_repeated() {
        let l = ledger(&[(Kind::Preference, "use port 9090", &["9090"])]);
        let old = "Summary.\n\n## Pinned (restored verbatim)\n- use port 8080\n\n## Next\nmore";
        let c = check_summary(old, &l, 1000);
        assert_eq!(c.summary.matches(PINNED_HEADING).count(), 1);
        assert!(!c.summary.contains("8080"));
        assert!(c
            .summary
            .starts_with("Summary.\n\n## Next\nmore\n\n## Pinned"));
    }

    #[test]
    fn multi_line_items_keep_their_lines_under_the_bullet() {
        let l = ledger(&[(Kind::Objective, "Do these:\n1. add a\n2. add b", &[])]);
        let c = check_summary("x", &l, 1000);
        assert!(c.summary.ends_with("- Do these:\n  1. add a\n  2. add b\n"));
    }

    #[test]
    fn retention_serializes_in_camel_case() {
        let r = Retention {
            pinned: 3,
            present: 1,
            reinserted: 1,
            reinserted_ids: vec!["error-2".into()],
            left_out: vec!["rule-1".into()],
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"pinned": 3, "present": 1, "reinserted": 1,
                "reinsertedIds": ["error-2"], "leftOut": ["rule-1"]})
        );
    }

    #[test]
    fn tokens_are_utf16_units_over_four_rounded_up() {
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("😀😀"), 1);
        assert_eq!(estimate_tokens(""), 0);
    }
}
