//! A ledger being changed: the items in slots, with the indexes that make every change
//! cost the same however long the session is.
//!
//! A [`Ledger`] is a plain list, oldest first, which is what readers want. Extraction pushes
//! one item per statement, and each push looks for what it restates (same text), what it
//! replaces (same subject), what a cancellation withdraws and what it puts back. Over the
//! list each of those is a scan, so a session of n statements cost n² (a 20,000-message
//! session took 40 s). The draft answers each from an index instead.
//!
//! Decisions:
//! * Slots only grow: an item restated moves to a new slot at the end and leaves an empty
//!   one behind, so slot order is age order and no index ever needs renumbering.
//!   [`Draft::finish`] drops the empty slots.
//! * Every index holds only what it is asked about (active objectives, active statements
//!   by subject, active errors by subject, cancellable user items, and so on), and is
//!   updated on every status change through one pair of functions (`index`/`unindex`), so
//!   they cannot drift.
//! * Two scans stay, bounded: the statements of one subject that a new statement may
//!   replace are the newest [`SUBJECT_WINDOW`] of them, and the statements an update may
//!   replace are the newest [`UPDATE_WINDOW`] user statements. Past those, an older
//!   statement stays in force beside the new one: both are shown, nothing is lost.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::Value;

use super::kind::{Kind, Speaker};
use super::model::{dedupe_key, item_id, Ledger, PinnedItem, Status, SupersededBy};
use super::secrets::{looks_like_secret, redact, REDACTED};
use super::subject::subject_of;
use super::supersede::supersedes;

/// Active statements of one subject a new statement is compared with (the newest).
pub(super) const SUBJECT_WINDOW: usize = 512;
/// User statements an update is compared with (the newest).
pub(super) const UPDATE_WINDOW: usize = 512;

/// Slots of items, by a key.
type Slots = HashMap<String, BTreeSet<usize>>;

#[derive(Debug, Default)]
pub(super) struct Draft {
    slots: Vec<Option<PinnedItem>>,
    /// Dedupe key → slot, for every item.
    keys: HashMap<String, usize>,
    /// Id → slot, for every item.
    ids: HashMap<String, usize>,
    /// Active objectives.
    objectives: BTreeSet<usize>,
    /// Active statements with a subject, by subject.
    statements: Slots,
    /// Active errors, by subject.
    errors: Slots,
    /// Active user items a cancellation may withdraw.
    cancellable: BTreeSet<usize>,
    /// The same, by the entry they were last stated in.
    cancellable_by_source: Slots,
    /// Active user statements (what an update may replace).
    user_statements: BTreeSet<usize>,
    /// Superseded items, by the id of the item that replaced them.
    replaced_by: Slots,
    /// What `updates` compares, per slot, computed once.
    words: HashMap<usize, BTreeSet<String>>,
}

impl From<Ledger> for Draft {
    fn from(ledger: Ledger) -> Draft {
        let mut draft = Draft::default();
        for item in ledger.into_items() {
            draft.append(item);
        }
        draft
    }
}

impl Draft {
    /// The ledger, oldest first.
    pub(super) fn finish(self) -> Ledger {
        // `filter_map` is collected in place, in the slots' own buffer; `flatten` is not,
        // and would grow a second vector of every item from empty beside the first.
        #[allow(clippy::filter_map_identity)]
        let items = self.slots.into_iter().filter_map(|slot| slot).collect();
        Ledger::from_items(items)
    }

    /// The ledger [`finish`](Self::finish) would give now, the draft going on.
    pub(super) fn snapshot(&self) -> Ledger {
        let mut items = Vec::with_capacity(self.slots.len());
        items.extend(self.slots.iter().flatten().cloned());
        Ledger::from_items(items)
    }

    pub(super) fn get(&self, slot: usize) -> &PinnedItem {
        self.slots[slot]
            .as_ref()
            .expect("a slot handed out holds its item until it moves")
    }

    /// Appends `item`, giving it a fresh id when its id is missing or taken by a different
    /// item; an identical item already present absorbs its source ids and keeps its place.
    pub(super) fn insert_unique(&mut self, item: PinnedItem) -> usize {
        let mut item = item;
        match self.absorb(&mut item) {
            Some(slot) => slot,
            None => self.append(item),
        }
    }

    /// Adds one item as the newest, applying restatement and replacement (see
    /// `supersede`); returns its slot.
    pub(super) fn push(&mut self, item: PinnedItem) -> usize {
        let by = SupersededBy::quoting(&item.text, item.latest_source());
        let active = item.is_active();
        let status = (item.status, item.superseded_by.clone());
        let mut item = item;
        let mut stored = match self.absorb(&mut item) {
            Some(slot) => self.take(slot),
            None => item,
        };
        // Restated: the newer status holds, and the item becomes the newest.
        (stored.status, stored.superseded_by) = status;
        if active {
            let by = SupersededBy {
                item_id: Some(stored.id.clone()),
                ..by
            };
            for old in self.replaceable(&stored) {
                if supersedes(&stored, self.get(old)) {
                    self.set_status(old, Some(by.clone()));
                }
            }
        }
        self.append(stored)
    }

    /// Withdraws the most recent user statement: the active user items stated in the same
    /// entry as the newest one (just that one when its entry is unknown). Returns their ids.
    pub(super) fn cancel_latest(&mut self, said: &str, entry_id: Option<&str>) -> Vec<String> {
        let Some(&last) = self.cancellable.last() else {
            return Vec::new();
        };
        let slots: Vec<usize> = match self.get(last).latest_source() {
            Some(source) => self.cancellable_by_source[source].iter().copied().collect(),
            None => vec![last],
        };
        let ids: Vec<String> = slots.iter().map(|&s| self.get(s).id.clone()).collect();
        self.cancel(&ids, said, entry_id);
        ids
    }

    /// Withdraws the newest open request or decision of the user: the active objective,
    /// or a user decision stated after it. What it had replaced is in force again, as
    /// after any cancellation.
    pub(super) fn withdraw_open(&mut self, said: &str, entry_id: Option<&str>) {
        let newest = self
            .objectives
            .iter()
            .chain(
                self.user_statements
                    .iter()
                    .filter(|&&s| self.get(s).kind == Kind::Decision),
            )
            .max()
            .copied();
        if let Some(slot) = newest {
            let id = self.get(slot).id.clone();
            self.cancel(&[id], said, entry_id);
        }
    }

    /// Supersedes the given active items by a cancellation, and puts back in force what
    /// they had replaced: "use port 9090" then "never mind" leaves port 8080.
    pub(super) fn cancel(&mut self, ids: &[String], said: &str, entry_id: Option<&str>) {
        let by = SupersededBy::quoting(said.trim(), entry_id);
        let cancelled: Vec<usize> = ids
            .iter()
            .filter_map(|id| self.ids.get(id).copied())
            .filter(|&s| self.get(s).is_active())
            .collect();
        let mut restored = BTreeSet::new();
        for &slot in &cancelled {
            let id = &self.get(slot).id;
            restored.extend(self.replaced_by.get(id).into_iter().flatten().copied());
        }
        for &slot in &cancelled {
            self.set_status(slot, Some(by.clone()));
        }
        for slot in restored {
            if !cancelled.contains(&slot) {
                self.set_status(slot, None);
            }
        }
    }

    /// Marks the open errors with this subject resolved by a later success.
    pub(super) fn resolve_errors(&mut self, subject: &str, said: &str, entry_id: Option<&str>) {
        let open: Vec<usize> = self
            .errors
            .get(subject)
            .into_iter()
            .flatten()
            .copied()
            .collect();
        for slot in open {
            self.set_status(slot, Some(SupersededBy::quoting(said, entry_id)));
        }
    }

    /// Supersedes the active item `old_id` by the item in `new` (an update that names no
    /// common subject, see `updates`); nothing when it is no longer active or is `new`.
    pub(super) fn supersede_with(&mut self, old_id: &str, new: usize) {
        let new = self.get(new);
        if old_id == new.id {
            return;
        }
        let by = SupersededBy {
            item_id: Some(new.id.clone()),
            ..SupersededBy::quoting(&new.text, new.latest_source())
        };
        if let Some(&old) = self.ids.get(old_id) {
            if self.get(old).is_active() {
                self.set_status(old, Some(by));
            }
        }
    }

    /// The newest user statements first, at most [`UPDATE_WINDOW`], and the open requests,
    /// each with its words as
    /// `words_of` computes them (computed once per slot).
    pub(super) fn user_statements_newest_first(
        &mut self,
        words_of: impl Fn(&PinnedItem) -> BTreeSet<String>,
    ) -> Vec<(usize, &PinnedItem, &BTreeSet<String>)> {
        // The open requests too: a value stated in a plain sentence ("the release ships on
        // 2027-03-14") is what the ledger took as the request.
        let mut slots: Vec<usize> = self
            .user_statements
            .iter()
            .rev()
            .take(UPDATE_WINDOW)
            .chain(
                self.objectives
                    .iter()
                    .filter(|&&s| self.get(s).origin == Speaker::User),
            )
            .copied()
            .collect();
        slots.sort_unstable_by(|a, b| b.cmp(a));
        slots.dedup();
        for &slot in &slots {
            if !self.words.contains_key(&slot) {
                let w = words_of(self.get(slot));
                self.words.insert(slot, w);
            }
        }
        slots
            .into_iter()
            .map(|s| (s, self.get(s), &self.words[&s]))
            .collect()
    }

    /// The active items `new` may replace (see `supersede::supersedes`): objectives, errors
    /// of its subject, statements of its subject (the newest [`SUBJECT_WINDOW`]).
    fn replaceable(&self, new: &PinnedItem) -> Vec<usize> {
        let of = |slots: &Slots| -> Vec<usize> {
            slots
                .get(&new.subject)
                .into_iter()
                .flat_map(|s| s.iter().rev().take(SUBJECT_WINDOW))
                .copied()
                .collect()
        };
        match new.kind {
            Kind::Objective => self.objectives.iter().copied().collect(),
            Kind::Error => of(&self.errors),
            k if k.is_statement() && !new.subject.is_empty() => of(&self.statements),
            _ => Vec::new(),
        }
    }

    /// The slot of an item identical to `item`, after merging its source ids into it; or
    /// none, with `item` given an id no other item has.
    fn absorb(&mut self, item: &mut PinnedItem) -> Option<usize> {
        if let Some(&slot) = self.keys.get(&dedupe_key(item.kind, &item.text)) {
            // Out and back in: the entry it was last stated in may change.
            let mut existing = self.take(slot);
            for s in item.source_ids.drain(..) {
                if !existing.source_ids.contains(&s) {
                    existing.source_ids.push(s);
                }
            }
            return Some(self.put(slot, existing));
        }
        if item.id.is_empty() {
            item.id = item_id(item.kind, &item.text, 0);
        }
        let mut salt = 0;
        while self.ids.contains_key(&item.id) {
            salt += 1;
            item.id = item_id(item.kind, &item.text, salt);
        }
        None
    }

    fn append(&mut self, item: PinnedItem) -> usize {
        self.slots.push(None);
        self.put(self.slots.len() - 1, item)
    }

    /// Puts `item` into the empty `slot` and indexes it.
    fn put(&mut self, slot: usize, item: PinnedItem) -> usize {
        self.keys.insert(dedupe_key(item.kind, &item.text), slot);
        self.ids.insert(item.id.clone(), slot);
        self.slots[slot] = Some(item);
        self.index(slot);
        slot
    }

    /// Takes the item out of its slot and out of every index.
    fn take(&mut self, slot: usize) -> PinnedItem {
        self.unindex(slot);
        let item = self.slots[slot].take().expect("taken once");
        self.keys.remove(&dedupe_key(item.kind, &item.text));
        self.ids.remove(&item.id);
        self.words.remove(&slot);
        item
    }

    /// Supersedes the item (`Some(by)`) or puts it back in force (`None`).
    fn set_status(&mut self, slot: usize, by: Option<SupersededBy>) {
        self.unindex(slot);
        let item = self.slots[slot].as_mut().expect("live slot");
        match by {
            Some(by) => item.supersede(by),
            None => {
                item.status = Status::Active;
                item.superseded_by = None;
            }
        }
        self.index(slot);
    }

    fn index(&mut self, slot: usize) {
        self.reindex(slot, true);
    }

    fn unindex(&mut self, slot: usize) {
        self.reindex(slot, false);
    }

    /// Adds the slot to (or removes it from) every status index it belongs in.
    fn reindex(&mut self, slot: usize, add: bool) {
        let item = self.slots[slot].as_ref().expect("live slot");
        // Fields borrowed one by one beside `item`: no key is copied unless it is added.
        let set = |set: &mut BTreeSet<usize>| {
            if add {
                set.insert(slot);
            } else {
                set.remove(&slot);
            }
        };
        let keyed = |map: &mut Slots, key: &str| {
            if add {
                map.entry(key.to_string()).or_default().insert(slot);
            } else if let Some(slots) = map.get_mut(key) {
                slots.remove(&slot);
                if slots.is_empty() {
                    map.remove(key);
                }
            }
        };
        if let (Status::Superseded, Some(by)) = (item.status, &item.superseded_by) {
            if let Some(id) = &by.item_id {
                keyed(&mut self.replaced_by, id);
            }
        }
        if !item.is_active() {
            return;
        }
        match item.kind {
            Kind::Objective => set(&mut self.objectives),
            Kind::Error => keyed(&mut self.errors, &item.subject),
            k if k.is_statement() && !item.subject.is_empty() => {
                keyed(&mut self.statements, &item.subject);
            }
            _ => {}
        }
        let user = item.origin == Speaker::User;
        if user && item.kind.is_statement() {
            set(&mut self.user_statements);
        }
        if user && !matches!(item.kind, Kind::File | Kind::Error) {
            set(&mut self.cancellable);
            if let Some(source) = item.latest_source() {
                keyed(&mut self.cancellable_by_source, source);
            }
        }
    }
}

/// Changes of a whole ledger, through a draft.
impl Ledger {
    /// Adds one item as the newest, applying restatement and replacement. Each call
    /// re-indexes the ledger: to add many, use a draft (as `update` and `merge` do).
    pub fn push(&mut self, item: PinnedItem) {
        self.edit(|d| {
            d.push(item);
        });
    }

    /// Withdraws the most recent user statement (see the module docs); returns the ids
    /// of the items it superseded. (Extraction withdraws through its draft; the tests
    /// state the rule on a whole ledger.)
    #[cfg(test)]
    pub(crate) fn cancel_latest(&mut self, said: &str, entry_id: Option<&str>) -> Vec<String> {
        let mut ids = Vec::new();
        self.edit(|d| ids = d.cancel_latest(said, entry_id));
        ids
    }

    /// The previous compaction's ledger followed by this round's: every newer item is
    /// pushed in order, so restatement, replacement and de-duplication (keeping all
    /// source ids) work across rounds.
    pub fn merge(self, newer: Ledger) -> Ledger {
        let mut draft = Draft::from(self);
        for item in newer.into_items() {
            draft.push(item);
        }
        draft.finish()
    }

    fn edit(&mut self, f: impl FnOnce(&mut Draft)) {
        let mut draft = Draft::from(std::mem::take(self));
        f(&mut draft);
        *self = draft.finish();
    }
}

/// Reading a ledger: every item goes through a draft, so a long one reads in linear time.
impl Ledger {
    /// Reads the ledger a previous compaction left in its `details` (`details.pinned`);
    /// empty when there is none. Never fails: see [`Ledger::from_pinned`].
    pub fn from_details(details: &Value) -> Ledger {
        details
            .get("pinned")
            .map(Ledger::from_pinned)
            .unwrap_or_default()
    }

    /// Reads `{"version", "items": [...]}` or a bare item array, skipping items that
    /// cannot be read and repairing missing ids and subjects.
    pub(crate) fn from_pinned(pinned: &Value) -> Ledger {
        let list = match pinned {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("items") {
                Some(Value::Array(a)) => a,
                _ => return Ledger::default(),
            },
            _ => return Ledger::default(),
        };
        let mut ledger = Draft::default();
        for v in list {
            let Ok(mut item) = PinnedItem::deserialize(v) else {
                continue;
            };
            if item.text.trim().is_empty() {
                continue;
            }
            // A ledger written by someone else is held to the same rule: no secrets.
            if let Cow::Owned(clean) = redact(&item.text) {
                item.text = clean;
            }
            item.values
                .retain(|v| !v.contains(REDACTED) && !looks_like_secret(v));
            if item.subject.is_empty() {
                item.subject = subject_of(item.kind, &item.text, &item.values);
            }
            if item.status == Status::Active {
                item.superseded_by = None;
            }
            ledger.insert_unique(item);
        }
        ledger.finish()
    }

    /// Appends `item`, giving it a fresh id when its id is missing or taken by a
    /// different item; an identical item already present absorbs its source ids. Returns
    /// its position.
    #[cfg(test)]
    pub(super) fn insert_unique(&mut self, item: PinnedItem) -> usize {
        let mut draft = Draft::from(std::mem::take(self));
        // A draft made from a ledger has no empty slots, and this adds none.
        let at = draft.insert_unique(item);
        *self = draft.finish();
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str, src: &str) -> PinnedItem {
        PinnedItem::new(Kind::Rule, Speaker::User, text, Vec::new(), None, Some(src))
    }

    #[test]
    fn a_restated_item_moves_and_the_indexes_follow() {
        let mut d = Draft::default();
        d.push(rule("Never push to main.", "e1"));
        d.push(rule("Always run tests.", "e2"));
        let at = d.push(rule("never push to main", "e3"));
        assert_eq!(at, 2);
        assert_eq!(d.get(at).source_ids, ["e1", "e3"]);
        // The latest statement is the restated one: a cancellation withdraws it.
        let ids = d.cancel_latest("never mind", Some("e4"));
        assert_eq!(ids, [d.get(at).id.clone()]);
        let l = d.finish();
        assert_eq!(l.len(), 2);
        assert!(l.items()[0].is_active() && !l.items()[1].is_active());
    }

    #[test]
    fn many_statements_stay_cheap_and_correct() {
        // Thousands of distinct rules and a port changed thousands of times: one port in
        // force, every rule in force.
        let name = |mut n: usize| {
            let mut s = String::new();
            for _ in 0..4 {
                s.push((b'a' + (n % 26) as u8) as char);
                n /= 26;
            }
            s
        };
        let mut d = Draft::default();
        for n in 0..5000 {
            d.push(rule(&format!("Never touch the {} module.", name(n)), "r"));
            d.push(PinnedItem::new(
                Kind::Preference,
                Speaker::User,
                format!("use port {}", 1000 + n),
                vec![(1000 + n).to_string()],
                None,
                Some("p"),
            ));
        }
        let l = d.finish();
        let active_ports = l.active().filter(|i| i.kind == Kind::Preference).count();
        assert_eq!(active_ports, 1);
        assert_eq!(l.active().filter(|i| i.kind == Kind::Rule).count(), 5000);
    }
}
