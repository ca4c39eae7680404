//! Which pinned items claim a tight budget first.
//!
//! Decision: when not everything fits, the order is
//! 1. what the user marked with a strong label (`SAFETY RULE:`, `HARD CONSTRAINT:`,
//!    `PREFERENCE:`, `GOAL STATE:`, `FACT:`, …): a person's mark beats any guess of ours;
//! 2. then, by kind: rules, constraints, preferences, goal states, facts (the user's
//!    standing statements), then the objective, open errors, decisions and files;
//! 3. within both, the newest first (a restated item counts as new).
//!
//! A weak label (`NOTE:`, `FYI`, `REMINDER:`) pins its line but ranks like a guess. Size
//! plays no part here: the callers skip an item that does not fit and try the next, so
//! one long item does not shut out several short ones.

use super::kind::Kind;
use super::labels::{strength, Strength};
use super::model::PinnedItem;

fn kind_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Entry => 0,
        Kind::Rule => 1,
        Kind::Constraint => 2,
        Kind::Preference => 3,
        Kind::Goal => 4,
        Kind::Fact => 5,
        Kind::Objective => 6,
        Kind::Error => 7,
        Kind::Decision => 8,
        Kind::File => 9,
    }
}

/// Positions into `items` (given oldest first), most important first.
pub fn budget_order(items: &[&PinnedItem]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    let keys: Vec<(bool, u8)> = items
        .iter()
        .map(|i| (strength(&i.text) != Strength::Strong, kind_rank(i.kind)))
        .collect();
    order.sort_by_key(|&p| (keys[p], std::cmp::Reverse(p)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::Speaker;

    fn item(kind: Kind, text: &str) -> PinnedItem {
        PinnedItem::new(kind, Speaker::User, text, Vec::new(), None, None)
    }

    #[test]
    fn labelled_first_then_by_kind_then_newest() {
        let items = [
            item(Kind::Fact, "Note: the linter lives in ruff."),
            item(Kind::Rule, "Never push to main."),
            item(Kind::Fact, "FACT: the codename is LANTERN."),
            item(Kind::Objective, "Add a flag."),
            item(Kind::Rule, "Always run the tests."),
            item(Kind::Rule, "SAFETY RULE: never reveal keys."),
        ];
        let refs: Vec<&PinnedItem> = items.iter().collect();
        assert_eq!(budget_order(&refs), [5, 2, 4, 1, 0, 3]);
    }
}
