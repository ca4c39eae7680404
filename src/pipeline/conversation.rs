//! The serialized conversation of an answer, written straight as the escaped contents
//! of its JSON string (`compaction::conversation_json`).
//!
//! Writing it on two threads (the entries cut into two runs of about the same number
//! of bytes, the second on a scoped thread, the escaped halves joined) was measured
//! and left out: on large-session and before-compaction the tail
//! (`prepare_response` + `to_json`, in-process, 300 runs) went from 1.02–1.05 ms to
//! 0.86–1.04 ms at best, but its median from 1.10 ms to 1.4–4.0 ms on the shared
//! machine, where the helper thread waits for a core and the answer waits for it.

use compactd_core::compaction::conversation_json::{write_conversation_json, JsonText};
use compactd_core::compaction::message::for_compaction;
use compactd_core::compaction::Wrappers;
use compactd_core::session::Entry;

/// The conversation of `entries` (their messages for compaction), escaped.
pub fn write(entries: &[&Entry], w: &Wrappers) -> JsonText {
    let bytes: usize = entries.iter().map(|e| e.raw.len()).sum();
    // About the session text's size: escapes mostly carry over, tool results are cut.
    let mut out = JsonText(spare_buffer());
    out.0.reserve(bytes / 2 + 64);
    let messages = entries.iter().filter_map(|e| for_compaction(e));
    write_conversation_json(messages, w, &mut out, &mut true);
    out
}

/// A conversation buffer kept by this thread for its next answer, at most this large.
const SPARE_MAX_BYTES: usize = 8 << 20;

thread_local! {
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The buffer the last answer on this thread gave back (empty), or a new one.
///
/// A conversation of a few hundred kB is written into fresh memory otherwise: the
/// allocator maps it for the request and unmaps it after, and the page faults of
/// filling it cost as much as writing it (large-session in-process: ~155 faults and
/// 0.34 ms of system time per answer). Answers are made on the blocking threads, which
/// the runtime reuses, so the buffer's pages stay mapped from one answer to the next.
fn spare_buffer() -> Vec<u8> {
    let mut v = SPARE.try_with(|s| s.take()).unwrap_or_default();
    v.clear();
    v
}

/// Keeps `buf` for the next answer on this thread (the larger of it and the one kept,
/// up to [`SPARE_MAX_BYTES`]).
pub fn give_back(buf: Vec<u8>) {
    if buf.capacity() > SPARE_MAX_BYTES {
        return;
    }
    // During the thread's teardown there is nothing to keep it for.
    let _ = SPARE.try_with(|s| {
        let kept = s.take();
        s.set(if kept.capacity() >= buf.capacity() {
            kept
        } else {
            buf
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use compactd_core::compaction::serialize_conversation;
    use compactd_core::json::write::write_str_contents;

    #[test]
    fn a_buffer_given_back_is_reused_empty_and_large_ones_are_not_kept() {
        let mut big = Vec::with_capacity(1 << 16);
        big.extend_from_slice(b"old");
        let ptr = big.as_ptr();
        give_back(big);
        give_back(Vec::with_capacity(16));
        let v = spare_buffer();
        assert!(v.is_empty() && v.as_ptr() == ptr);
        give_back(Vec::with_capacity(SPARE_MAX_BYTES + 1));
        assert_eq!(spare_buffer().capacity(), 0);
    }

    /// Every session the tests hold, every entry on its path: the escaped text of the
    /// text serializer, whole, and written as two runs cut at three places.
    #[test]
    fn every_corpus_conversation_is_the_escaped_text() {
        use crate::pipeline::{BodyFormat, PrepareOptions, SessionInput};
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
        let w = Wrappers::reference();
        let mut compared = 0;
        for dir in ["fixtures/pi-sessions", "conformance/corpus"] {
            for f in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = f.unwrap().path();
                if p.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let bytes = std::fs::read(&p).unwrap();
                let o = PrepareOptions::default();
                let Ok(input) = SessionInput::parse(&bytes, BodyFormat::Jsonl, o) else {
                    continue;
                };
                let Ok(positions) = input.path(None) else {
                    continue;
                };
                let entries: Vec<&Entry> = positions
                    .iter()
                    .map(|&i| &input.session.entries[i])
                    .collect();
                let text =
                    serialize_conversation(entries.iter().filter_map(|e| for_compaction(e)), &w);
                let mut want = Vec::new();
                write_str_contents(&mut want, &text);
                assert!(write(&entries, &w).0 == want, "{}", p.display());
                for k in [0, entries.len() / 2, entries.len()] {
                    let (a, b) = entries.split_at(k);
                    let mut out = JsonText::default();
                    let mut first = true;
                    for run in [a, b] {
                        let messages = run.iter().filter_map(|e| for_compaction(e));
                        write_conversation_json(messages, &w, &mut out, &mut first);
                    }
                    assert!(out.0 == want, "{} cut at {k}", p.display());
                }
                compared += 1;
            }
        }
        assert!(compared > 300, "{compared} sessions compared");
    }
}
