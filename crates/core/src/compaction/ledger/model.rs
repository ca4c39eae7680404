//! The ledger's data: what is pinned, and the JSON it travels in (`details.pinned` of a
//! compaction entry).
//!
//! ```json
//! {"version": 1, "items": [
//!   {"id": "constraint-5c1e0a7f", "kind": "constraint", "origin": "user", "status": "active",
//!    "text": "Budget cap is $500 total. Never exceed it.", "values": ["$500"],
//!    "subject": "budget cap", "sourceIds": ["a1b2c3d4"]},
//!   {"id": "preference-0b9d2e11", "kind": "preference", "origin": "user",
//!    "status": "superseded", "text": "use port 8080", "values": ["8080"],
//!    "subject": "port", "sourceIds": ["e5f6a7b8"],
//!    "supersededBy": {"itemId": "preference-77aa0c3d", "text": "use port 9090",
//!                     "entryId": "c9d0e1f2"}}
//! ]}
//! ```
//!
//! Decisions:
//! * Items are in age order (oldest first); "newest" anywhere in the ledger means a later
//!   position. Restating an item moves it to the end.
//! * An item's id is derived from its kind and normalized text (FNV-1a, 32 bits, hex), so
//!   the same statement gets the same id in every round and in every process; ids are
//!   unique within a ledger (a collision is salted).
//! * Reading is lenient, writing is strict: unknown fields are ignored, missing optional
//!   fields get defaults (a missing id or subject is recomputed), a bare array is taken as
//!   the item list, and an item that cannot be read (unknown kind, no text) is skipped
//!   rather than losing the whole ledger. Writing always emits `version` and every field.
//! * Secrets are never pinned, also when a ledger comes from elsewhere: reading redacts
//!   the texts and drops values that look like keys.
//! * Superseded items are kept, with what superseded them, so a reader sees why a value
//!   changed; [`Ledger::prune_superseded`] bounds them when a caller wants to.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::kind::{Kind, Speaker};
use super::subject::subject_of;
use super::words::{clip, collapse_ws};

/// How much of a superseding statement is quoted in `supersededBy.text`.
const QUOTE_CHARS: usize = 160;

/// The JSON layout version written into `details.pinned`.
pub const LEDGER_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    #[default]
    Active,
    Superseded,
}

/// What replaced or withdrew a superseded item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupersededBy {
    /// The newer item, when an item replaced it (none for "never mind" or a later success).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// The superseding statement, short: "use port 9090", "never mind", "`cargo test` succeeded".
    #[serde(default)]
    pub text: String,
    /// The entry it was said in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
}

impl SupersededBy {
    /// Superseded by what was said (quoted short) in `entry_id`, no item named.
    pub(super) fn quoting(said: &str, entry_id: Option<&str>) -> SupersededBy {
        SupersededBy {
            item_id: None,
            text: clip(said, QUOTE_CHARS),
            entry_id: entry_id.map(str::to_string),
        }
    }
}

/// One thing a continuing agent must not lose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinnedItem {
    #[serde(default)]
    pub id: String,
    pub kind: Kind,
    #[serde(default)]
    pub origin: Speaker,
    #[serde(default)]
    pub status: Status,
    /// Verbatim (secrets redacted): the sentence(s) that carry it, with its values.
    pub text: String,
    /// The exact strings a summary must contain for the item to count as present.
    #[serde(default)]
    pub values: Vec<String>,
    /// Normalized subject: what a later statement must be about to supersede this one.
    #[serde(default)]
    pub subject: String,
    /// Entry ids it was stated in, oldest first.
    #[serde(default)]
    pub source_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<SupersededBy>,
}

impl PinnedItem {
    /// A new active item; its id and (when `subject` is `None`) subject are derived.
    pub fn new(
        kind: Kind,
        origin: Speaker,
        text: impl Into<String>,
        values: Vec<String>,
        subject: Option<String>,
        source_id: Option<&str>,
    ) -> Self {
        let text = text.into();
        let subject = subject.unwrap_or_else(|| subject_of(kind, &text, &values));
        PinnedItem {
            id: item_id(kind, &text, 0),
            kind,
            origin,
            status: Status::Active,
            text,
            values,
            subject,
            source_ids: source_id.map(str::to_string).into_iter().collect(),
            superseded_by: None,
        }
    }

    pub(crate) fn is_active(&self) -> bool {
        self.status == Status::Active
    }

    /// The newest entry id it was stated in.
    pub(crate) fn latest_source(&self) -> Option<&str> {
        self.source_ids.last().map(String::as_str)
    }

    pub(super) fn supersede(&mut self, by: SupersededBy) {
        self.status = Status::Superseded;
        self.superseded_by = Some(by);
    }
}

pub(super) fn dedupe_key(kind: Kind, text: &str) -> String {
    let t = collapse_ws(text).to_lowercase();
    format!(
        "{}:{}",
        kind.as_str(),
        t.trim_end_matches(['.', '!', '?', ' '])
    )
}

/// `kind-xxxxxxxx`: FNV-1a (32 bit) of the dedupe key, with the salt appended when two
/// different items would collide.
pub(super) fn item_id(kind: Kind, text: &str, salt: u32) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let key = dedupe_key(kind, text);
    let salted = if salt == 0 {
        key
    } else {
        format!("{key}\u{0}{salt}")
    };
    for b in salted.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{}-{h:08x}", kind.as_str())
}

/// The pinned items of a session, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    items: Vec<PinnedItem>,
}

impl Ledger {
    pub fn items(&self) -> &[PinnedItem] {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items still in force, oldest first.
    pub fn active(&self) -> impl Iterator<Item = &PinnedItem> {
        self.items.iter().filter(|i| i.is_active())
    }

    pub fn get(&self, id: &str) -> Option<&PinnedItem> {
        self.items.iter().find(|i| i.id == id)
    }

    /// This ledger with what `later` (this ledger carried on through later messages) holds
    /// withdrawn marked so here too, with what withdrew it; nothing `later` added comes
    /// along. So a summary of the older part does not state as current what the part kept
    /// verbatim after it replaced.
    pub fn resolved_by(mut self, later: &Ledger) -> Ledger {
        let gone: std::collections::HashMap<&str, &PinnedItem> =
            later.withdrawn().map(|i| (i.id.as_str(), i)).collect();
        for item in &mut self.items {
            if let Some(by) = gone.get(item.id.as_str()).filter(|_| item.is_active()) {
                item.status = by.status;
                item.superseded_by = by.superseded_by.clone();
            }
        }
        self
    }

    /// What the user said that is no longer in force, oldest first: statements a later
    /// one replaced or withdrew, and requests withdrawn ("scratch that") or whose value an
    /// update replaced. A request that a newer request followed is not among them: it is
    /// older, not withdrawn.
    pub fn withdrawn(&self) -> impl Iterator<Item = &PinnedItem> {
        let requests: std::collections::HashSet<&str> = self
            .items
            .iter()
            .filter(|i| i.kind == Kind::Objective)
            .map(|i| i.id.as_str())
            .collect();
        self.items.iter().filter(move |i| {
            !i.is_active()
                && i.origin == Speaker::User
                && (i.kind.is_statement()
                    || (i.kind == Kind::Objective
                        // Taken back, or replaced by a statement (an update), not by the
                        // next request.
                        && i.superseded_by.as_ref().is_none_or(|b| {
                            b.item_id.as_deref().is_none_or(|id| !requests.contains(id))
                        })))
        })
    }

    /// Pins the text of entry `entry_id` (the user's `pinEntries`), secrets redacted: an
    /// active item that no later statement replaces, carried verbatim. Pinning the same
    /// entry again changes nothing.
    pub fn pin_entry(&mut self, entry_id: &str, origin: Speaker, text: &str) {
        let pinned =
            |i: &PinnedItem| i.kind == Kind::Entry && i.source_ids.iter().any(|s| s == entry_id);
        if self.items.iter().any(pinned) {
            return;
        }
        let text = super::secrets::redact(text.trim()).into_owned();
        let mut item = PinnedItem::new(
            Kind::Entry,
            origin,
            text,
            Vec::new(),
            Some(format!("entry:{entry_id}")),
            Some(entry_id),
        );
        let mut salt = 0;
        while self.items.iter().any(|i| i.id == item.id) {
            salt += 1;
            item.id = item_id(Kind::Entry, &item.text, salt);
        }
        self.items.push(item);
    }

    pub(super) fn items_mut(&mut self) -> &mut Vec<PinnedItem> {
        &mut self.items
    }

    pub(super) fn from_items(items: Vec<PinnedItem>) -> Ledger {
        Ledger { items }
    }

    pub(super) fn into_items(self) -> Vec<PinnedItem> {
        self.items
    }

    /// The JSON for `details.pinned`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a ledger always serializes")
    }

    /// Drops the oldest superseded items beyond the newest `keep` of them.
    pub(crate) fn prune_superseded(&mut self, keep: usize) {
        let superseded = self.items.iter().filter(|i| !i.is_active()).count();
        let mut drop = superseded.saturating_sub(keep);
        self.items.retain(|i| {
            if drop > 0 && !i.is_active() {
                drop -= 1;
                return false;
            }
            true
        });
    }
}

impl Serialize for Ledger {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Repr<'a> {
            version: u32,
            items: &'a [PinnedItem],
        }
        Repr {
            version: LEDGER_VERSION,
            items: &self.items,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Ledger {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Ledger::from_pinned(&Value::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn port(text: &str) -> PinnedItem {
        PinnedItem::new(
            Kind::Preference,
            Speaker::User,
            text,
            vec!["8080".into()],
            None,
            Some("e1"),
        )
    }

    #[test]
    fn items_serialize_in_camel_case_with_stable_fields() {
        let mut l = Ledger::default();
        l.insert_unique(port("use port 8080"));
        let v = l.to_value();
        assert_eq!(v["version"], 1);
        let item = &v["items"][0];
        assert_eq!(item["kind"], "preference");
        assert_eq!(item["origin"], "user");
        assert_eq!(item["status"], "active");
        assert_eq!(item["sourceIds"], json!(["e1"]));
        assert_eq!(item["values"], json!(["8080"]));
        assert!(item.get("supersededBy").is_none());
        assert!(item["id"].as_str().unwrap().starts_with("preference-"));
    }

    #[test]
    fn a_ledger_round_trips_through_details_pinned() {
        let mut l = Ledger::default();
        l.insert_unique(port("use port 8080"));
        l.items_mut()[0].supersede(SupersededBy {
            item_id: Some("preference-1".into()),
            text: "use port 9090".into(),
            entry_id: Some("e2".into()),
        });
        let details = json!({"readFiles": [], "modifiedFiles": [], "pinned": l.to_value()});
        assert_eq!(Ledger::from_details(&details), l);
        let text = serde_json::to_string(&l).unwrap();
        assert_eq!(serde_json::from_str::<Ledger>(&text).unwrap(), l);
    }

    #[test]
    fn reading_tolerates_unknown_fields_and_missing_optional_ones() {
        let pinned = json!({"version": 7, "future": true, "items": [
            {"kind": "rule", "text": "Never push to main.", "confidence": 0.9},
            {"kind": "telepathy", "text": "skipped: unknown kind"},
            {"kind": "fact", "text": "  "},
            "not an item",
        ]});
        let l = Ledger::from_pinned(&pinned);
        assert_eq!(l.len(), 1);
        let item = &l.items()[0];
        assert_eq!(item.id, item_id(Kind::Rule, "Never push to main.", 0));
        assert!(item.is_active());
        assert!(item.values.is_empty() && item.source_ids.is_empty());
        assert_eq!(item.subject, "push main");
    }

    #[test]
    fn secrets_in_a_ledger_read_back_are_redacted() {
        let pinned = json!([{"kind": "fact", "text": "token=ghp_abcdefghijklmnopqrstuvwxyz0123",
                             "values": ["ghp_abcdefghijklmnopqrstuvwxyz0123", "token"]}]);
        let l = Ledger::from_pinned(&pinned);
        assert_eq!(l.items()[0].text, "token=[REDACTED]");
        assert_eq!(l.items()[0].values, ["token"]);
    }

    #[test]
    fn a_bare_array_is_read_as_the_item_list() {
        let l = Ledger::from_pinned(&json!([{"kind": "file", "text": "src/a.rs"}]));
        assert_eq!(l.items()[0].kind, Kind::File);
        assert!(Ledger::from_details(&json!({"readFiles": []})).is_empty());
    }

    #[test]
    fn ids_are_stable_and_ignore_case_spacing_and_final_stop() {
        assert_eq!(
            item_id(Kind::Rule, "Never push to main.", 0),
            item_id(Kind::Rule, "never  push to main", 0)
        );
        assert_ne!(item_id(Kind::Rule, "x", 0), item_id(Kind::Fact, "x", 0));
        assert!(item_id(Kind::Rule, "x", 0).starts_with("rule-"));
    }

    #[test]
    fn identical_items_merge_their_source_ids() {
        let mut l = Ledger::default();
        l.insert_unique(port("use port 8080"));
        let mut again = port("Use port 8080.");
        again.source_ids = vec!["e7".into()];
        l.insert_unique(again);
        assert_eq!(l.len(), 1);
        assert_eq!(l.items()[0].source_ids, ["e1", "e7"]);
    }

    #[test]
    fn colliding_ids_of_different_items_are_salted() {
        let mut l = Ledger::default();
        let mut a = port("use port 8080");
        let mut b = port("use port 9090");
        a.id = "same".into();
        b.id = "same".into();
        l.insert_unique(a);
        l.insert_unique(b);
        assert_ne!(l.items()[0].id, l.items()[1].id);
    }

    #[test]
    fn pruning_drops_the_oldest_superseded_items_only() {
        let mut l = Ledger::default();
        for n in ["a1", "b2", "c3"] {
            let i = l.insert_unique(port(&format!("use port {n}")));
            l.items_mut()[i].supersede(SupersededBy::default());
        }
        l.insert_unique(port("use port 1234"));
        l.prune_superseded(1);
        let texts: Vec<&str> = l.items().iter().map(|i| i.text.as_str()).collect();
        assert_eq!(texts, ["use port c3", "use port 1234"]);
    }
}
