//! Deterministic generator of a large, realistic pi v3 session file for the benchmarks.
//!
//! The session looks like what pi writes after a long day of agent work: a v3 header,
//! then many turns of user message → assistant steps (thinking + text + `read`/`write`/
//! `edit`/`bash` tool calls, usage, stopReason) → tool results (text of 100 B–20 KB with
//! newlines, quotes, backslashes, tabs, non-ASCII and astral emoji), interleaved with
//! `thinking_level_change` / `model_change` entries and the odd user `bashExecution`.
//! It contains two `compaction` entries (firstKeptEntryId on the path, details with
//! readFiles/modifiedFiles) so a prepare has a previous summary, and one abandoned branch
//! followed by a `branch_summary`, so the path from the last entry is not the whole file.
//!
//! Seeded `fastrand`, no other dependencies beyond serde_json: the same generator version
//! (and fastrand version, pinned by the lockfile) always produces the same bytes.

#![allow(dead_code)]

mod text;
mod writer;

pub use writer::generate;

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Bump when the output changes, so stale cached files are regenerated.
pub const GENERATOR_VERSION: u32 = 3;
pub const SEED: u64 = 0x00c0_ffee_5e55_10f5;
/// "About 50 MB": 51.2 MB (48.8 MiB) is within 5 % of both 50 MB and 50 MiB.
pub const TARGET_BYTES: usize = 51_200_000;

/// Where the generated session is cached: `$CARGO_TARGET_DIR/bench-data`, or the crate's
/// `target/bench-data`.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d.join("bench-data")
            } else {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(d)
                    .join("bench-data")
            }
        }
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"),
    }
}

/// Returns the path of `generated-50mb.jsonl`, generating it first when it is missing or
/// was written by another generator version / seed / size.
pub fn ensure_generated_50mb() -> io::Result<PathBuf> {
    ensure(&data_dir().join("generated-50mb.jsonl"), SEED, TARGET_BYTES)
}

pub fn ensure(path: &Path, seed: u64, target_bytes: usize) -> io::Result<PathBuf> {
    let stamp = format!("generator={GENERATOR_VERSION} seed={seed:#x} target={target_bytes}\n");
    let stamp_path = path.with_extension("jsonl.stamp");
    let fresh = path.exists()
        && fs::read_to_string(&stamp_path)
            .map(|s| s == stamp)
            .unwrap_or(false);
    if fresh {
        return Ok(path.to_path_buf());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    // Write to a temporary file and rename, so an interrupted run leaves no partial file.
    let tmp = path.with_extension(format!("jsonl.tmp{}", std::process::id()));
    {
        let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp)?);
        generate(&mut w, seed, target_bytes)?;
        w.flush()?;
    }
    fs::rename(&tmp, path)?;
    fs::write(&stamp_path, stamp)?;
    Ok(path.to_path_buf())
}
