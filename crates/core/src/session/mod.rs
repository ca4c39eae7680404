//! Sessions: parsing, migration to the current format, walks over the entry tree, and
//! the new entries compactd writes (`written`).
//! Pure: no I/O, no clocks.

pub mod entry;
pub mod error;
pub(crate) mod id;
pub(crate) mod migrate;
pub mod text;
pub mod tree;
pub mod written;

use std::collections::hash_map::Entry as Slot;
use std::collections::HashMap;

use serde_json::value::RawValue;

pub use entry::{Block, Content, Entry, EntryBody, Header, Message, Role};
pub use error::{InputError, Origin, Violation};
pub use id::Id;
pub use text::Text;
pub use written::{fresh_id, iso_timestamp, BranchSummaryEntry, CompactionEntry};

use entry::{parse_entry_hinted, EntryError, Parsed};

/// The newest session format version (pi's `CURRENT_SESSION_VERSION`).
pub(crate) const CURRENT_VERSION: u32 = 3;

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

/// Bytes per entry the entry vector is sized for at most (the smallest pi entries, a
/// `model_change`, take about 150): a body of blank lines reserves at most about four
/// times its size, and one of tinier entries grows the vector as it goes.
const MIN_ENTRY_BYTES: usize = 64;

impl<'a> Session<'a> {
    /// Parses a JSONL body (a pi session file). Blank lines are skipped, like pi does;
    /// a line that is not JSON is an error (pi would silently drop it).
    pub fn from_jsonl(body: &'a str) -> Result<Self, InputError> {
        let mut builder = Builder::for_lines(body);
        let (b, mut start) = (body.as_bytes(), 0);
        for n in 1.. {
            // The line's end, and whether it holds a control byte: one pass.
            let end = crate::json::lines::line_end(b, start);
            let (controls, end) = (end.controls, end.end);
            let line = &body[start..end];
            let line = line.strip_suffix('\r').unwrap_or(line);
            if !is_blank(line) && !builder.push_hinted(line, Origin::Line(n), Some(controls)) {
                break;
            }
            if end == b.len() {
                break;
            }
            start = end + 1;
        }
        builder.finish()
    }

    /// Builds a session from the `entries` array of a JSON body.
    pub fn from_json_entries(entries: &[&'a RawValue]) -> Result<Self, InputError> {
        let mut builder = Builder::with_capacity(entries.len());
        for (i, r) in entries.iter().enumerate() {
            if !builder.push(r.get(), Origin::JsonEntry { index: i }) {
                break;
            }
        }
        builder.finish()
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

/// A session built entry by entry, as the entries arrive (`Session::from_jsonl` feeds it
/// a whole body; `/v1/prepare` feeds it the lines of a body still being received).
///
/// Entries are parsed as they are pushed; migration and the id index need them all and
/// run in [`Builder::finish`]. A syntax error, or [`MAX_VIOLATIONS`] violations, end
/// the build: `push` answers `false` and `finish` reports what a whole-body parse would.
#[derive(Default)]
pub struct Builder<'a> {
    header: Option<Header<'a>>,
    entries: Vec<Entry<'a>>,
    violations: Vec<Violation>,
    /// Entries pushed so far (the header is entry 0).
    pushed: usize,
    syntax: Option<InputError>,
}

impl<'a> Builder<'a> {
    pub fn with_capacity(entries: usize) -> Self {
        Builder {
            entries: Vec::with_capacity(entries),
            ..Builder::default()
        }
    }

    /// For a JSONL body of `len` bytes: room for one entry per kB, a guess (entries
    /// are rarely under 1 kB) that spares the entry vector its doublings (each one a
    /// copy of all entries so far); it grows past the guess when it must.
    pub fn for_body(len: usize) -> Self {
        Self::with_capacity(len / 1024 + 1)
    }

    /// For a whole JSONL body: room for one entry per line (a count that costs a
    /// fraction of the parse), so the entry vector is allocated once at its size instead
    /// of doubling (the doubling held the old and the new vector at once: 107 MB at the
    /// peak for 200,000 entries); at most one per [`MIN_ENTRY_BYTES`].
    pub fn for_lines(body: &str) -> Self {
        let lines = memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1;
        Self::with_capacity(lines.min(body.len() / MIN_ENTRY_BYTES + 1))
    }

    /// Parses the next entry's JSON text. `false`: the session is known to be invalid
    /// and further entries would change nothing.
    pub fn push(&mut self, raw: &'a str, origin: Origin) -> bool {
        self.push_hinted(raw, origin, None)
    }

    /// [`Builder::push`], told whether `raw` holds a byte below 0x20 when the caller
    /// knows (`json::lines::line_end` finds that with the line's end).
    pub fn push_hinted(&mut self, raw: &'a str, origin: Origin, controls: Option<bool>) -> bool {
        crate::cancel::checkpoint();
        if !self.accepts() {
            return false;
        }
        let index = self.pushed;
        self.pushed += 1;
        match parse_entry_hinted(raw, index, origin, controls) {
            Ok(Parsed::Header(h)) if index == 0 => self.header = Some(h),
            Ok(Parsed::Header(_)) => self
                .violations
                .push(origin.violation("/type", "a `session` header may only be the first entry")),
            Ok(Parsed::Entry(e)) => self.entries.push(e),
            Err(EntryError::Invalid(v)) => self.violations.push(v),
            Err(EntryError::Syntax(message, column)) => {
                let line = match origin {
                    Origin::Line(l) => l,
                    Origin::JsonEntry { .. } => 1,
                };
                self.syntax = Some(InputError::Malformed {
                    message,
                    line,
                    column,
                });
            }
        }
        self.accepts()
    }

    /// No syntax error and fewer than [`MAX_VIOLATIONS`] violations so far.
    pub fn accepts(&self) -> bool {
        self.syntax.is_none() && self.violations.len() < MAX_VIOLATIONS
    }

    /// Migrates and indexes the entries pushed: the session, or what is wrong with it.
    pub fn finish(self) -> Result<Session<'a>, InputError> {
        let Builder {
            header,
            mut entries,
            mut violations,
            syntax,
            ..
        } = self;
        if let Some(e) = syntax {
            return Err(e);
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
        // Past MAX_VIOLATIONS the rest are only counted: a 50k-entry v2 file without ids
        // must not answer a 50k-item problem document.
        let mut unlisted = 0usize;
        for (i, e) in entries.iter().enumerate() {
            // Cloning a borrowed or migrated id is free; only decoded ids are owned.
            let Some(id) = e.id.clone() else {
                if violations.len() < MAX_VIOLATIONS {
                    violations.push(e.origin.violation("/id", "every entry needs a string `id`"));
                } else {
                    unlisted += 1;
                }
                continue;
            };
            match by_id.entry(id) {
                Slot::Occupied(_) if violations.len() >= MAX_VIOLATIONS => unlisted += 1,
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
        }
        if unlisted > 0 {
            // The count, at the document's root: the list holds the first MAX_VIOLATIONS.
            violations.push(Violation {
                pointer: String::new(),
                message: format!(
                    "{unlisted} more entries without an id or with a duplicate id are not listed (the first {MAX_VIOLATIONS} are)"
                ),
                line: None,
            });
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
}

/// A line pi skips: empty or only whitespace. Entry lines start with `{`, so that is
/// looked at first (`str::trim` walks Unicode whitespace from both ends).
pub fn is_blank(line: &str) -> bool {
    line.as_bytes().first() != Some(&b'{') && line.trim().is_empty()
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
    fn id_errors_list_the_first_few_and_count_the_rest() {
        let mut body = String::from("{\"type\":\"session\",\"version\":2}\n");
        for _ in 0..5000 {
            body.push_str("{\"type\":\"x\"}\n");
        }
        let Err(InputError::Invalid(v)) = Session::from_jsonl(&body) else {
            panic!("expected violations");
        };
        assert_eq!(v.len(), MAX_VIOLATIONS + 1);
        assert_eq!(v[MAX_VIOLATIONS - 1].line, Some(MAX_VIOLATIONS + 1));
        let last = v.last().unwrap();
        assert_eq!(last.pointer, "");
        assert!(
            last.message.starts_with("4980 more entries"),
            "{}",
            last.message
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
