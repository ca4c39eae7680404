//! What compactd writes into a session: new entries, shaped and stamped as pi writes
//! them.
//!
//! Pure like the rest of the core: the time and the random source are passed in by the
//! caller, so the same inputs give the same entry.
//!
//! Design: the entries are serde structs whose field order is pi's key order (`type`
//! first, as the serde tag), so a client appending one gets the line pi would have
//! written. `details` is generic: the service decides what it holds (the file lists, and
//! for a compaction the pinned ledger) without the core knowing its types.

use std::collections::HashSet;

use serde::Serialize;

/// A `compaction` entry: the summary of everything before `firstKeptEntryId`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename = "compaction", rename_all = "camelCase")]
pub struct CompactionEntry<D> {
    pub id: String,
    /// The leaf the entry is appended to; null when the path is empty.
    pub parent_id: Option<String>,
    pub timestamp: String,
    pub summary: String,
    /// A few sentences for a UI (oh-my-pi's key); absent when none was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_summary: Option<String>,
    pub first_kept_entry_id: String,
    /// Written as JavaScript writes numbers (`48211`, not `48211.0`).
    #[serde(serialize_with = "crate::json::write::js_number")]
    pub tokens_before: f64,
    pub details: D,
    /// What the model calls that wrote the summary used, in pi's usage shape; absent when
    /// no model answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
    /// The client's `preserveData`, echoed; absent when it sent none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preserve_data: Option<serde_json::Value>,
}

/// A `branch_summary` entry: the summary of a branch the session left, a child of the
/// entry it went back to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename = "branch_summary", rename_all = "camelCase")]
pub struct BranchSummaryEntry<D> {
    pub id: String,
    pub parent_id: String,
    pub timestamp: String,
    /// pi records the entry the session branched from (its new position) here.
    pub from_id: String,
    pub summary: String,
    pub details: D,
    /// As on a compaction entry: absent when no model answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
}

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

    #[test]
    fn entries_are_written_in_pis_key_order() {
        let compaction = CompactionEntry {
            id: "a1b2c3d4".into(),
            parent_id: None,
            timestamp: "2025-12-08T22:41:05.306Z".into(),
            summary: "S".into(),
            short_summary: None,
            first_kept_entry_id: "k".into(),
            tokens_before: 48211.0,
            details: serde_json::json!({"readFiles": []}),
            usage: None,
            preserve_data: None,
        };
        assert_eq!(
            serde_json::to_string(&compaction).unwrap(),
            r#"{"type":"compaction","id":"a1b2c3d4","parentId":null,"timestamp":"2025-12-08T22:41:05.306Z","summary":"S","firstKeptEntryId":"k","tokensBefore":48211,"details":{"readFiles":[]}}"#
        );
        let kept = CompactionEntry {
            parent_id: Some("p".into()),
            tokens_before: 0.5,
            short_summary: Some("s".into()),
            usage: Some(serde_json::json!({"input": 1})),
            preserve_data: Some(serde_json::json!({"x": 1})),
            ..compaction
        };
        let text = serde_json::to_string(&kept).unwrap();
        assert!(text.contains(r#""parentId":"p","#), "{text}");
        assert!(
            text.contains(r#""summary":"S","shortSummary":"s","firstKeptEntryId":"k","#),
            "{text}"
        );
        assert!(
            text.ends_with(
                r#""tokensBefore":0.5,"details":{"readFiles":[]},"usage":{"input":1},"preserveData":{"x":1}}"#
            ),
            "{text}"
        );
        let branch = BranchSummaryEntry {
            id: "i".into(),
            parent_id: "t".into(),
            timestamp: "ts".into(),
            from_id: "t".into(),
            summary: "S".into(),
            details: serde_json::json!({}),
            usage: None,
        };
        assert_eq!(
            serde_json::to_string(&branch).unwrap(),
            r#"{"type":"branch_summary","id":"i","parentId":"t","timestamp":"ts","fromId":"t","summary":"S","details":{}}"#
        );
    }
}
