//! Sessions: parsing, migration to the current format, and walks over the entry tree.
//! Pure: no I/O, no clocks.

pub mod entry;
pub mod error;
pub mod id;
pub mod migrate;
pub mod text;
pub mod tree;

use std::collections::hash_map::Entry as Slot;
use std::collections::HashMap;

use serde_json::value::RawValue;

pub use entry::{Block, Content, Entry, EntryBody, Header, Message, Role};
pub use error::{InputError, Origin, Violation};
pub use id::Id;
pub use text::Text;

use entry::{parse_entry, EntryError, Parsed};

/// The newest session format version (pi's `CURRENT_SESSION_VERSION`).
pub const CURRENT_VERSION: u32 = 3;

/// At most this many violations are collected before giving up on a body.
const MAX_VIOLATIONS: usize = 20;

/// A parsed, migrated session: every entry has an id and entries are indexed by it.
#[derive(Debug)]
pub struct Session<'a> {
    pub header: Option<Header<'a>>,
    /// The format version the input was written in (before migration).
    pub source_version: u32,
    /// Every non-header entry, in input order.
    pub entries: Vec<Entry<'a>>,
    /// Seeded fast hashing: ids are client-chosen, so the seed keeps collisions
    /// unpredictable while hashing stays cheap.
    by_id: HashMap<Id<'a>, usize, foldhash::fast::RandomState>,
}

impl<'a> Session<'a> {
    /// Parses a JSONL body (a pi session file). Blank lines are skipped, like pi does;
    /// a line that is not JSON is an error (pi would silently drop it).
    pub fn from_jsonl(body: &'a str) -> Result<Self, InputError> {
        let mut raws = Vec::new();
        let mut start = 0;
        let ends = memchr::memchr_iter(b'\n', body.as_bytes()).chain(std::iter::once(body.len()));
        for (n, end) in ends.enumerate() {
            let line = &body[start..end];
            start = end + 1;
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() {
                continue;
            }
            raws.push((line, Origin::Line(n + 1)));
        }
        Self::from_raw_entries(raws)
    }

    /// Builds a session from the `entries` array of a JSON body.
    pub fn from_json_entries(entries: &[&'a RawValue]) -> Result<Self, InputError> {
        Self::from_raw_entries(
            entries
                .iter()
                .enumerate()
                .map(|(i, r)| (r.get(), Origin::JsonEntry { index: i }))
                .collect(),
        )
    }

    fn from_raw_entries(raws: Vec<(&'a str, Origin)>) -> Result<Self, InputError> {
        let mut header = None;
        let mut entries = Vec::with_capacity(raws.len());
        let mut violations = Vec::new();
        for (index, (raw, origin)) in raws.into_iter().enumerate() {
            match parse_entry(raw, index, origin) {
                Ok(Parsed::Header(h)) if index == 0 => header = Some(h),
                Ok(Parsed::Header(_)) => violations.push(
                    origin.violation("/type", "a `session` header may only be the first entry"),
                ),
                Ok(Parsed::Entry(e)) => entries.push(e),
                Err(EntryError::Invalid(v)) => violations.push(v),
                Err(EntryError::Syntax(message, column)) => {
                    let line = match origin {
                        Origin::Line(l) => l,
                        Origin::JsonEntry { .. } => 1,
                    };
                    return Err(InputError::Malformed {
                        message,
                        line,
                        column,
                    });
                }
            }
            if violations.len() >= MAX_VIOLATIONS {
                break;
            }
        }
        if !violations.is_empty() {
            return Err(InputError::Invalid(violations));
        }

        let source_version = migrate::source_version(header.as_ref(), &entries);
        migrate::migrate(&mut entries, header.as_ref(), source_version);

        let mut by_id: HashMap<Id<'a>, usize, _> = HashMap::with_capacity_and_hasher(
            entries.len(),
            foldhash::fast::RandomState::default(),
        );
        for (i, e) in entries.iter().enumerate() {
            // Cloning a borrowed or migrated id is free; only decoded ids are owned.
            let Some(id) = e.id.clone() else {
                violations.push(e.origin.violation("/id", "every entry needs a string `id`"));
                continue;
            };
            match by_id.entry(id) {
                Slot::Occupied(first) => violations.push(e.origin.violation(
                    "/id",
                    format!(
                        "duplicate id {:?} (also entry {})",
                        truncate_for_message(first.key()),
                        entries[*first.get()].index
                    ),
                )),
                Slot::Vacant(slot) => {
                    slot.insert(i);
                }
            }
            if violations.len() >= MAX_VIOLATIONS {
                break;
            }
        }
        if !violations.is_empty() {
            return Err(InputError::Invalid(violations));
        }
        Ok(Session {
            header,
            source_version,
            entries,
            by_id,
        })
    }

    /// Index into `entries` of the entry with this id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Option<&Entry<'a>> {
        self.position(id).map(|i| &self.entries[i])
    }

    /// Every entry id, owned: what a new entry's id must differ from once the body the
    /// session borrows from is gone (the summarizer stage runs after it).
    pub fn owned_ids(&self) -> std::collections::HashSet<String> {
        self.entries
            .iter()
            .filter_map(|e| e.id().map(str::to_string))
            .collect()
    }
}

/// Shortens user-supplied text quoted in an error, so errors never echo big inputs.
pub fn truncate_for_message(s: &str) -> String {
    const MAX: usize = 64;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_and_missing_ids_are_reported() {
        let body = "{\"type\":\"session\",\"version\":3}\n{\"type\":\"x\",\"id\":\"a\"}\n{\"type\":\"x\"}\n{\"type\":\"x\",\"id\":\"a\"}\n";
        let Err(InputError::Invalid(v)) = Session::from_jsonl(body) else {
            panic!("expected violations");
        };
        let got: Vec<_> = v.iter().map(|v| (v.line, v.message.as_str())).collect();
        assert_eq!(
            got,
            [
                (Some(3), "every entry needs a string `id`"),
                (Some(4), "duplicate id \"a\" (also entry 1)"),
            ]
        );
    }

    #[test]
    fn migrated_ids_index_the_session() {
        let body = "{\"type\":\"session\",\"id\":\"h\"}\n{\"type\":\"x\"}\n{\"type\":\"y\"}\n";
        let s = Session::from_jsonl(body).unwrap();
        let id = format!("{:08x}", migrate::fnv1a32(b"h:2"));
        assert_eq!(s.get(&id).map(|e| e.index), Some(2));
        assert_eq!(s.entries[1].parent_id.as_deref(), s.entries[0].id());
    }
}
