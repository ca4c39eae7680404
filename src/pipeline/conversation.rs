//! The serialized conversation of an answer, written straight as the escaped contents
//! of its JSON string (`compaction::conversation_json`).
//!
//! Writing it on two threads (the entries cut into two runs of about the same number
//! of bytes, the second on a scoped thread, the escaped halves joined) was measured
//! and left out: on large-session and before-compaction the tail
//! (`prepare_response` + `to_json`, in-process, 300 runs) went from 1.02–1.05 ms to
//! 0.86–1.04 ms at best, but its median from 1.10 ms to 1.4–4.0 ms on the shared
//! machine, where the helper thread waits for a core and the answer waits for it.

use crate::compaction::conversation_json::{write_conversation_json, JsonText};
use crate::compaction::message::for_compaction;
use crate::compaction::Wrappers;
use crate::session::Entry;

/// The conversation of `entries` (their messages for compaction), escaped.
pub fn write(entries: &[&Entry], w: &Wrappers) -> JsonText {
    let bytes: usize = entries.iter().map(|e| e.raw.len()).sum();
    // About the session text's size: escapes mostly carry over, tool results are cut.
    let mut out = JsonText(Vec::with_capacity(bytes / 2 + 64));
    let messages = entries.iter().filter_map(|e| for_compaction(e));
    write_conversation_json(messages, w, &mut out, &mut true);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::serialize_conversation;
    use crate::json::write::write_str_contents;

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
