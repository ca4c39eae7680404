//! Migration of older session formats to version 3, as pi's `migrateSessionEntries`
//! does, except that ids are deterministic (D2): the same file always gets the same ids.

use std::collections::HashSet;

/// Ids already handed out (our own hashes, so a fixed fast hasher is fine).
pub(crate) type IdSet = HashSet<u32, foldhash::fast::FixedState>;

use super::entry::{Entry, EntryBody, Header, Role};
use super::id::Id;
use super::CURRENT_VERSION;

/// The version the input was written in. A header without `version` means 1. Without
/// a header (a JSON body may omit it) the entries decide: ids present means current.
pub fn source_version(header: Option<&Header>, entries: &[Entry]) -> u32 {
    match header {
        Some(h) => match h.version {
            None => 1,
            Some(v) if v < 2.0 => 1,
            Some(v) if v < 3.0 => 2,
            Some(_) => CURRENT_VERSION,
        },
        None if entries.iter().any(|e| e.id.is_some()) => CURRENT_VERSION,
        None => 1,
    }
}

/// Brings entries to version 3 in place.
pub fn migrate(entries: &mut [Entry], header: Option<&Header>, version: u32) {
    if version < 2 {
        v1_to_v2(entries, header);
    }
    if version < 3 {
        for e in entries.iter_mut() {
            if let EntryBody::Message(m) = &mut e.body {
                if m.role == Role::HookMessage {
                    m.role = Role::Custom;
                    m.migrated_role = true;
                }
            }
        }
    }
}

/// The deterministic id of the entry at input position `index`:
/// FNV-1a (32 bit) of `"{headerId}:{index}"`, with `":{salt}"` appended on collision.
/// Migration hashes the prefix once per file instead; the tests state the rule with it.
#[cfg(test)]
fn deterministic_id(header_id: &str, index: usize, taken: &IdSet) -> u32 {
    deterministic_id_after(id_prefix(header_id), index, taken)
}

/// The FNV-1a state after `"{headerId}:"`, the part every id of a file shares (hashed
/// once per file, not per entry: a header id is a 36-byte UUID).
fn id_prefix(header_id: &str) -> u32 {
    fnv1a32_continue(fnv1a32(header_id.as_bytes()), b":")
}

/// [`deterministic_id`] from the state [`id_prefix`] gives.
fn deterministic_id_after(prefix: u32, index: usize, taken: &IdSet) -> u32 {
    let mut digits = [0u8; 20];
    let base = fnv1a32_continue(prefix, decimal(index as u64, &mut digits));
    let mut h = base;
    let mut salt = 0u64;
    while taken.contains(&h) {
        salt += 1;
        h = fnv1a32_continue(fnv1a32_continue(base, b":"), decimal(salt, &mut digits));
    }
    h
}

/// The decimal digits of `n`, written into `buf` without allocating.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

pub(crate) fn fnv1a32(bytes: &[u8]) -> u32 {
    fnv1a32_continue(0x811c9dc5, bytes)
}

fn fnv1a32_continue(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    h
}

fn v1_to_v2(entries: &mut [Entry], header: Option<&Header>) {
    let prefix = id_prefix(header.and_then(|h| h.id.as_deref()).unwrap_or(""));
    let offset = usize::from(header.is_some());
    let mut taken = IdSet::with_capacity_and_hasher(entries.len(), Default::default());
    let mut prev: Option<Id> = None;
    for k in 0..entries.len() {
        let hash = deterministic_id_after(prefix, entries[k].index, &taken);
        taken.insert(hash);
        let id = Id::hex(hash);
        // `firstKeptEntryIndex` points into the file's entries (header = 0). pi resolves
        // it while assigning ids in order, so only entries up to this one have ids yet.
        let target = match &entries[k].body {
            EntryBody::Compaction(c) => c.first_kept_entry_index.and_then(|f| {
                let idx = (f >= 0.0 && f.fract() == 0.0).then_some(f as usize)?;
                let pos = idx.checked_sub(offset)?;
                (pos < k).then(|| entries[pos].id.clone()).flatten()
            }),
            _ => None,
        };
        let self_target = matches!(&entries[k].body, EntryBody::Compaction(c)
            if c.first_kept_entry_index == Some((entries[k].index) as f64));
        let e = &mut entries[k];
        e.id = Some(id.clone());
        e.parent_id = prev.take();
        e.migrated_ids = true;
        if let EntryBody::Compaction(c) = &mut e.body {
            if self_target {
                c.first_kept_entry_id = Some(id.clone());
            } else if let Some(t) = target {
                c.first_kept_entry_id = Some(t);
            }
        }
        prev = Some(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_values() {
        // FNV-1a 32 test vectors.
        assert_eq!(fnv1a32(b""), 0x811c9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn decimal_digits() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(1234567890123, &mut buf), b"1234567890123");
    }

    #[test]
    fn collisions_are_salted() {
        let mut taken = IdSet::default();
        let first = deterministic_id("h", 1, &taken);
        assert_eq!(first, fnv1a32(b"h:1"));
        taken.insert(first);
        let again = deterministic_id("h", 1, &taken);
        assert_eq!(again, fnv1a32(b"h:1:1"));
    }
}
