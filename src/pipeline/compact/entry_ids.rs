//! What a new entry is stamped with: pi's timestamp format and a fresh id.

/// `Date.prototype.toISOString()`: millisecond precision, UTC, `Z`.
pub fn iso_timestamp(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// A random 8-hex-digit id (pi's format) not used in the session.
pub(crate) fn fresh_id(taken: &std::collections::HashSet<String>) -> String {
    use std::hash::{BuildHasher, Hasher};
    loop {
        // RandomState is seeded from the OS per instance: a random value without a
        // dedicated dependency.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x9E37_79B9_7F4A_7C15);
        let id = format!("{:08x}", h.finish() as u32);
        if !taken.contains(&id) {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps_match_javascript() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_765_233_665_306_000_000).unwrap();
        assert_eq!(iso_timestamp(t), "2025-12-08T22:41:05.306Z");
    }

    #[test]
    fn fresh_ids_avoid_taken_ones() {
        let taken = std::collections::HashSet::new();
        let id = fresh_id(&taken);
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
