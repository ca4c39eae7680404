//! The real pi sessions kept in `tests/fixtures/pi-sessions/`: the one place that knows
//! where they live. Test binaries, benchmarks and unit tests include this file with
//! `#[path = ".../tests/support/fixtures.rs"] mod fixtures;`.
#![allow(dead_code)]

use std::path::PathBuf;

/// Format v1, two earlier compactions addressed by `firstKeptEntryIndex`, 2.4 MB.
pub const BEFORE_COMPACTION: &str = "before-compaction.jsonl";
/// Format v1, many thinking-level changes, 0.97 MB.
pub const LARGE_SESSION: &str = "large-session.jsonl";
/// Both real sessions.
pub const ALL: [&str; 2] = [BEFORE_COMPACTION, LARGE_SESSION];

/// The folder holding the real sessions.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi-sessions")
}

/// The path of one real session.
pub fn path(name: &str) -> PathBuf {
    dir().join(name)
}

/// The text of one real session.
pub fn read(name: &str) -> String {
    let p = path(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
