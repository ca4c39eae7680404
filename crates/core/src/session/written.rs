//! What compactd writes into a session: new entries stamped as pi stamps them.
//!
//! Pure like the rest of the core: the time and the random source are passed in by the
//! caller, so the same inputs give the same entry.

use std::collections::HashSet;

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
pub fn fresh_id(taken: &HashSet<String>, rng: &mut fastrand::Rng) -> String {
    loop {
        let id = format!("{:08x}", rng.u32(..));
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
        let taken = HashSet::new();
        let id = fresh_id(&taken, &mut fastrand::Rng::new());
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        // A seeded source gives the same id again; a taken one is skipped.
        let first = fresh_id(&taken, &mut fastrand::Rng::with_seed(1));
        let taken: HashSet<String> = [first.clone()].into();
        let next = fresh_id(&taken, &mut fastrand::Rng::with_seed(1));
        assert_ne!(next, first);
    }
}
