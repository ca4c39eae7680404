//! Supersession and merging: how the ledger changes when something new is said.
//!
//! Rules (decisions):
//! * **Restating** an item (same kind, same normalized text) does not add a second one:
//!   the item gains the new source ids, becomes active again if it had been superseded,
//!   and moves to the end (it is now the newest).
//! * **Replacing**: a new active statement supersedes every older active statement of the
//!   same subject and topic (see `subject`); a new objective supersedes the previous
//!   objective, except that a stated goal is replaced only by another goal (a plain
//!   request beside it is the next step, see `classify::is_goal`); a new error supersedes an older error of the same tool and command.
//!   An assistant's decision only ever replaces an assistant's decision: what the
//!   assistant says never overrides what the user stated.
//! * **Cancelling** ("never mind", "scratch that", "undo", "stop"): the items of the most
//!   recent user statement that produced any (all active user items sharing its newest
//!   source id, or just the newest item when ids are unknown) are superseded by the
//!   cancellation, and what they had replaced is in force again. Files and errors are
//!   never cancelled: they are what happened.
//! * **Resolving**: a later success of the same tool and command supersedes its open
//!   errors.
//! * **Merging** a newer ledger into an older one is pushing the newer items in order,
//!   so supersession works across rounds exactly as within one.

use super::classify::is_goal;
use super::kind::{Kind, Speaker};
use super::model::PinnedItem;
use super::subject::same_topic;

/// Whether `new` (active) replaces `old`.
pub(super) fn supersedes(new: &PinnedItem, old: &PinnedItem) -> bool {
    if !old.is_active() || new.id == old.id {
        return false;
    }
    match (new.kind, old.kind) {
        // A plain request is a step: it replaces the previous step, never a stated goal.
        (Kind::Objective, Kind::Objective) => !is_goal(&old.text) || is_goal(&new.text),
        (Kind::Error, Kind::Error) => new.subject == old.subject,
        (a, b) if a.is_statement() && b.is_statement() => {
            if new.origin == Speaker::Assistant
                && !(old.origin == Speaker::Assistant && old.kind == Kind::Decision)
            {
                return false;
            }
            !new.subject.is_empty()
                && new.subject == old.subject
                && same_topic((&new.text, &new.values), (&old.text, &old.values))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::Ledger;

    fn item(kind: Kind, text: &str, values: &[&str], src: &str) -> PinnedItem {
        let values = values.iter().map(|v| v.to_string()).collect();
        PinnedItem::new(kind, Speaker::User, text, values, None, Some(src))
    }

    fn texts(l: &Ledger) -> Vec<(&str, bool)> {
        l.items()
            .iter()
            .map(|i| (i.text.as_str(), i.is_active()))
            .collect()
    }

    #[test]
    fn port_9090_supersedes_port_8080() {
        let mut l = Ledger::default();
        l.push(item(Kind::Preference, "use port 8080", &["8080"], "e1"));
        l.push(item(Kind::Preference, "use port 9090", &["9090"], "e2"));
        assert_eq!(
            texts(&l),
            [("use port 8080", false), ("use port 9090", true)]
        );
        let by = l.items()[0].superseded_by.as_ref().unwrap();
        assert_eq!(by.item_id.as_deref(), Some(l.items()[1].id.as_str()));
        assert_eq!(by.text, "use port 9090");
        assert_eq!(by.entry_id.as_deref(), Some("e2"));
    }

    #[test]
    fn different_topics_with_one_label_both_stay() {
        let mut l = Ledger::default();
        l.push(item(Kind::Fact, "Port 8080 is the API.", &["8080"], "e1"));
        l.push(item(
            Kind::Fact,
            "Port 5432 is the database.",
            &["5432"],
            "e2",
        ));
        assert!(l.items().iter().all(PinnedItem::is_active));
    }

    #[test]
    fn a_restated_item_keeps_every_source_id_and_becomes_newest() {
        let mut l = Ledger::default();
        l.push(item(Kind::Rule, "Never push to main.", &[], "e1"));
        l.push(item(Kind::Rule, "Always run tests.", &[], "e2"));
        l.push(item(Kind::Rule, "never push to main", &[], "e3"));
        assert_eq!(l.len(), 2);
        assert_eq!(l.items()[1].text, "Never push to main.");
        assert_eq!(l.items()[1].source_ids, ["e1", "e3"]);
    }

    #[test]
    fn never_mind_cancels_the_latest_user_statement() {
        let mut l = Ledger::default();
        l.push(item(Kind::Rule, "Never push to main.", &[], "e1"));
        l.push(item(Kind::Preference, "use port 8080", &["8080"], "e2"));
        l.push(item(Kind::Objective, "Serve the API on it.", &[], "e2"));
        let cancelled = l.cancel_latest("never mind", Some("e3"));
        assert_eq!(cancelled.len(), 2);
        assert_eq!(
            texts(&l),
            [
                ("Never push to main.", true),
                ("use port 8080", false),
                ("Serve the API on it.", false)
            ]
        );
        assert_eq!(
            l.items()[1].superseded_by.as_ref().unwrap().text,
            "never mind"
        );
    }

    #[test]
    fn never_mind_after_a_change_restores_what_it_replaced() {
        let mut l = Ledger::default();
        l.push(item(Kind::Preference, "use port 8080", &["8080"], "e1"));
        l.push(item(Kind::Preference, "use port 9090", &["9090"], "e2"));
        l.cancel_latest("never mind", Some("e3"));
        assert_eq!(
            texts(&l),
            [("use port 8080", true), ("use port 9090", false)]
        );
        assert!(l.items()[0].superseded_by.is_none());
    }

    #[test]
    fn a_restated_cancelled_item_is_active_again() {
        let mut l = Ledger::default();
        l.push(item(Kind::Preference, "use port 8080", &["8080"], "e1"));
        l.cancel_latest("scratch that", Some("e2"));
        l.push(item(Kind::Preference, "use port 8080", &["8080"], "e3"));
        assert_eq!(texts(&l), [("use port 8080", true)]);
        assert!(l.items()[0].superseded_by.is_none());
    }

    #[test]
    fn the_assistant_never_overrides_the_user() {
        let mut l = Ledger::default();
        l.push(item(Kind::Preference, "use port 8080", &["8080"], "e1"));
        let mut a = item(
            Kind::Decision,
            "We'll use port 9090 instead of port 8080",
            &["9090", "8080"],
            "e2",
        );
        a.origin = Speaker::Assistant;
        l.push(a);
        assert!(l.items()[0].is_active());
    }

    #[test]
    fn a_newer_objective_replaces_the_older_one() {
        let mut l = Ledger::default();
        l.push(item(Kind::Objective, "Add a login page.", &[], "e1"));
        l.push(item(Kind::Objective, "Now add a logout button.", &[], "e2"));
        assert_eq!(l.active().count(), 1);
        assert_eq!(l.active().next().unwrap().text, "Now add a logout button.");
    }

    #[test]
    fn merging_supersedes_across_rounds_and_dedupes() {
        let mut old = Ledger::default();
        old.push(item(Kind::Preference, "use port 8080", &["8080"], "e1"));
        old.push(item(Kind::Rule, "Never push to main.", &[], "e2"));
        let mut new = Ledger::default();
        new.push(item(Kind::Rule, "Never push to main.", &[], "e7"));
        new.push(item(Kind::Preference, "use port 9090", &["9090"], "e8"));
        let merged = old.merge(new);
        assert_eq!(
            texts(&merged),
            [
                ("use port 8080", false),
                ("Never push to main.", true),
                ("use port 9090", true)
            ]
        );
        assert_eq!(merged.items()[1].source_ids, ["e2", "e7"]);
    }

    #[test]
    fn an_item_survives_any_number_of_rounds() {
        let mut l = Ledger::default();
        l.push(item(
            Kind::Constraint,
            "Budget cap is $500 total. Never exceed it.",
            &["$500"],
            "e1",
        ));
        for round in 0..20 {
            let mut next = Ledger::default();
            next.push(item(
                Kind::Fact,
                &format!("Build {round} is green."),
                &[],
                "x",
            ));
            l = Ledger::from_pinned(&l.merge(next).to_value());
        }
        assert!(l.get(&l.items()[0].id).unwrap().is_active());
        assert_eq!(l.items()[0].values, ["$500"]);
    }
}
