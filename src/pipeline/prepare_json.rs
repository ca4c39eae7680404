//! The `/v1/prepare` answer written in one pass: the same bytes as
//! `serde_json::to_vec` of the [`PrepareResponse`] (tested on every session the tests
//! hold), without serde's per-byte escaping or its re-reading of stored text.
//!
//! Design decisions:
//! * Stored messages are copied as they were sent (the parser validated them).
//! * Long strings are escaped a word at a time (`json::write`).
//! * A conversation text is escaped once ([`SharedText`] keeps its escaped bytes): the
//!   requests' prompts embed it and copy those bytes.
//! * The answer is made in a small buffer that is handed to the writer whenever it grows
//!   past [`SPILL_BYTES`], and the long texts go to the writer directly: the CLI never
//!   holds the whole answer (on a 73 MB session it is 93 MB). Into memory
//!   ([`PrepareResponse::to_json`]) the target is sized up front, so it never grows.
//! * Small and rare values (numbers, built messages, file lists) go through serde_json:
//!   there is nothing to win there and it keeps the formatting of numbers identical.

use std::io::{self, Write};

use crate::summarize::CONVERSATION_OPEN;
use compactd_core::json::write::{
    write_str, write_str_contents, write_value, Object, ESCAPE_HEADROOM,
};

use super::prepare::{Compactable, MessageJson, PrepareResponse, PreparedRequest, SharedText};

/// How much of the answer is gathered before it is handed to the writer.
const SPILL_BYTES: usize = 64 * 1024;

impl PrepareResponse<'_> {
    /// The answer as JSON: byte for byte `serde_json::to_vec(self)`.
    pub fn to_json(&self) -> Vec<u8> {
        match self {
            PrepareResponse::NotCompactable(n) => {
                serde_json::to_vec(n).expect("JSON of a not-compactable answer")
            }
            PrepareResponse::Compactable(c) => {
                let mut out = Vec::with_capacity(size_hint(c));
                write_compactable(c, &mut out).expect("writing into memory cannot fail");
                out
            }
        }
    }

    /// The bytes of [`to_json`](Self::to_json), handed to `w` as they are made.
    pub fn write_json<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        match self {
            PrepareResponse::NotCompactable(n) => {
                serde_json::to_writer(w, n).map_err(io::Error::from)
            }
            PrepareResponse::Compactable(c) => write_compactable(c, w),
        }
    }
}

/// Hands what `buf` holds to `w`.
fn spill<W: Write + ?Sized>(buf: &mut Vec<u8>, w: &mut W) -> io::Result<()> {
    w.write_all(buf)?;
    buf.clear();
    Ok(())
}

/// Hands `buf`, then the long `bytes`, to `w`.
fn spill_with<W: Write + ?Sized>(buf: &mut Vec<u8>, w: &mut W, bytes: &[u8]) -> io::Result<()> {
    spill(buf, w)?;
    w.write_all(bytes)
}

fn write_compactable<W: Write + ?Sized>(c: &Compactable, w: &mut W) -> io::Result<()> {
    let mut buf = Vec::with_capacity(SPILL_BYTES + 4096);
    let mut o = Object::new(&mut buf);
    o.value("compactable", &c.compactable);
    o.str("firstKeptEntryId", &c.first_kept_entry_id);
    o.value("firstKeptEntryIndex", &c.first_kept_entry_index);
    o.value("firstKeptEntryInputIndex", &c.first_kept_entry_input_index);
    o.value("isSplitTurn", &c.is_split_turn);
    o.value("turnStartEntryId", &c.turn_start_entry_id);
    o.value("turnStartIndex", &c.turn_start_index);
    o.value("tokensBefore", &c.tokens_before);
    if let Some(should) = c.should_compact {
        o.value("shouldCompact", &should);
    }
    if let Some(previous) = c.previous_summary.kept() {
        o.value("previousSummary", previous);
    }
    if let Some(ids) = &c.summarized_entry_ids {
        list(o.key("summarizedEntryIds"), w, ids, |out, _, id| {
            write_str(out, id);
            Ok(())
        })?;
    }
    for (key, messages) in [
        ("messagesToSummarize", &c.messages_to_summarize),
        ("turnPrefixMessages", &c.turn_prefix_messages),
    ] {
        if let Some(messages) = messages {
            list(o.key(key), w, messages, |out, _, m| {
                match m {
                    MessageJson::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
                    MessageJson::Built(v) => write_value(out, v),
                }
                Ok(())
            })?;
        }
    }
    if let Some(details) = &c.details {
        o.value("details", details);
    }
    if let Some(conv) = &c.conversation {
        let out = o.key("conversation");
        let mut inner = Object::new(out);
        shared(inner.key("history"), w, &conv.history)?;
        match &conv.turn_prefix {
            Some(text) => shared(inner.key("turnPrefix"), w, text)?,
            None => inner.key("turnPrefix").extend_from_slice(b"null"),
        }
        inner.end();
    }
    if let Some(requests) = &c.requests {
        list(o.key("requests"), w, requests, request)?;
    }
    o.value("settings", &c.settings);
    o.end();
    spill(&mut buf, w)
}

/// A JSON array of `items`, each written by `each` into `buf` (or, when long, straight to
/// `w`); `buf` is handed to `w` whenever it grows past [`SPILL_BYTES`].
fn list<T, W: Write + ?Sized>(
    buf: &mut Vec<u8>,
    w: &mut W,
    items: &[T],
    mut each: impl FnMut(&mut Vec<u8>, &mut W, &T) -> io::Result<()>,
) -> io::Result<()> {
    buf.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        each(buf, w, item)?;
        if buf.len() > SPILL_BYTES {
            spill(buf, w)?;
        }
    }
    buf.push(b']');
    Ok(())
}

/// A conversation text as a JSON string.
fn shared<W: Write + ?Sized>(buf: &mut Vec<u8>, w: &mut W, text: &SharedText) -> io::Result<()> {
    buf.push(b'"');
    spill_with(buf, w, text.json())?;
    buf.push(b'"');
    Ok(())
}

/// A `SummaryRequest`: its prompt is `<conversation>\n`, the shared text, the tail.
fn request<W: Write + ?Sized>(buf: &mut Vec<u8>, w: &mut W, r: &PreparedRequest) -> io::Result<()> {
    let mut o = Object::new(buf);
    o.value("kind", &r.kind);
    o.str("systemPrompt", &r.system_prompt);
    let out = o.key("prompt");
    out.push(b'"');
    write_str_contents(out, CONVERSATION_OPEN);
    spill_with(out, w, r.conversation.json())?;
    write_str_contents(out, &r.tail);
    out.push(b'"');
    o.value("maxTokens", &r.max_tokens);
    o.end();
    Ok(())
}

/// A little more than the answer's length (escapes add a few percent), so the buffer
/// is allocated once.
fn size_hint(c: &Compactable) -> usize {
    let messages: usize = [&c.messages_to_summarize, &c.turn_prefix_messages]
        .into_iter()
        .flatten()
        .flatten()
        .map(|m| match m {
            MessageJson::Raw(raw) => raw.get().len(),
            MessageJson::Built(_) => 256,
        })
        .sum();
    let conversation = c.conversation.as_ref().map_or(0, |conv| {
        conv.history.json().len() + conv.turn_prefix.as_ref().map_or(0, |t| t.json().len())
    });
    let requests: usize = c
        .requests
        .iter()
        .flatten()
        .map(|r| r.system_prompt.len() + r.conversation.json().len() + r.tail.len() + 64)
        .sum();
    let ids = c
        .summarized_entry_ids
        .as_ref()
        .map_or(0, |ids| ids.iter().map(|id| id.len() + 3).sum());
    let files = c.details.as_ref().map_or(0, |d| {
        let paths = d.read_files.iter().chain(&d.modified_files);
        paths.map(|p| p.len() + p.len() / 16 + 3).sum::<usize>() + 64
    });
    let previous = c
        .previous_summary
        .kept()
        .map_or(0, |p| p.as_ref().map_or(0, |p| p.len() + p.len() / 8 + 32));
    // Conversation texts are escaped already; prompts and tails escape a little. The
    // escaper reserves room a window ahead: without that headroom the last strings of
    // a buffer sized to the answer would double it (the whole answer held twice).
    messages
        + conversation
        + requests
        + requests / 64
        + ids
        + files
        + previous
        + 4096
        + ESCAPE_HEADROOM
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::pipeline::include::Include;
    use crate::pipeline::{prepare_response, BodyFormat, PrepareOptions, SessionInput};
    use crate::summarize::Prompts;
    use compactd_core::compaction::Settings;

    /// Every session the tests hold: the real ones and the conformance corpus.
    fn sessions() -> Vec<(String, Vec<u8>)> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
        let mut files = Vec::new();
        for dir in ["fixtures/pi-sessions", "conformance/corpus"] {
            for f in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = f.unwrap().path();
                if p.extension().is_some_and(|e| e == "jsonl") {
                    files.push((p.display().to_string(), std::fs::read(&p).unwrap()));
                }
            }
        }
        assert!(files.len() > 300, "the corpus is there");
        files
    }

    fn options(include: Option<&str>, keep: Option<u64>) -> PrepareOptions {
        PrepareOptions {
            include: include.map(|i| serde_json::from_value(i.into()).unwrap()),
            keep_recent_tokens: keep,
            custom_instructions: keep.map(|_| "Say \"why\"\n\tand \u{1} how".into()),
            additional_context: vec!["a \\ b".into()],
            ..PrepareOptions::default()
        }
    }

    /// What a writer was handed, and the largest piece.
    #[derive(Default)]
    struct Pieces {
        bytes: Vec<u8>,
        largest: usize,
    }

    impl std::io::Write for Pieces {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            self.largest = self.largest.max(buf.len());
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Pieces {
        /// The longest escaped conversation text in `answer` (handed over whole).
        fn largest_text(&self, answer: &super::PrepareResponse<'_>) -> usize {
            let super::PrepareResponse::Compactable(c) = answer else {
                return 0;
            };
            let conv = c
                .conversation
                .iter()
                .flat_map(|c| std::iter::once(&c.history).chain(c.turn_prefix.as_ref()));
            let prompts = c.requests.iter().flatten().map(|r| &r.conversation);
            conv.chain(prompts)
                .map(|t| t.json().len())
                .max()
                .unwrap_or(0)
        }
    }

    #[test]
    fn the_one_pass_answer_is_serde_jsons_answer_byte_for_byte() {
        let prompts = Prompts::builtin();
        let includes = [
            None,
            Some("cut"),
            Some("cut,files,conversation"),
            Some("requests"),
            Some("messages,requests,files"),
        ];
        let mut compactable = 0;
        for (name, bytes) in sessions() {
            for include in includes {
                for keep in [None, Some(300)] {
                    let o = options(include, keep);
                    let Ok(input) = SessionInput::parse(&bytes, BodyFormat::Jsonl, o) else {
                        continue;
                    };
                    let Ok(answer) = prepare_response(&input, &prompts, Settings::default(), None)
                    else {
                        continue;
                    };
                    compactable +=
                        matches!(answer, super::PrepareResponse::Compactable(_)) as usize;
                    let ours = answer.to_json();
                    let serde = serde_json::to_vec(&answer).unwrap();
                    assert!(ours == serde, "{name} include={include:?} keep={keep:?}");
                    let mut streamed = Pieces::default();
                    answer.write_json(&mut streamed).unwrap();
                    assert!(
                        streamed.bytes == serde,
                        "{name} include={include:?} keep={keep:?}: streamed"
                    );
                    // Only the texts the answer already holds come larger than a spill.
                    assert!(
                        streamed.largest <= super::SPILL_BYTES + 16 * 1024
                            || streamed.largest == streamed.largest_text(&answer),
                        "{name}: a piece of {} bytes",
                        streamed.largest
                    );
                    if let super::PrepareResponse::Compactable(c) = &answer {
                        // Sized up front: a buffer that grew held the answer twice.
                        assert_eq!(
                            ours.capacity(),
                            super::size_hint(c),
                            "{name} include={include:?} keep={keep:?}: the buffer grew"
                        );
                    }
                }
            }
        }
        assert!(
            compactable > 1000,
            "{compactable} compactable answers compared"
        );
    }

    #[test]
    fn a_cut_only_answer_is_small_and_has_only_the_cut() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pi-sessions/before-compaction.jsonl");
        let bytes = std::fs::read(path).unwrap();
        let o = PrepareOptions {
            include: Some(Include::CUT),
            ..PrepareOptions::default()
        };
        let input = SessionInput::parse(&bytes, BodyFormat::Jsonl, o).unwrap();
        let answer = prepare_response(&input, &Prompts::builtin(), Settings::default(), None)
            .unwrap()
            .to_json();
        assert!(answer.len() < 400, "{} bytes", answer.len());
        let v: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "compactable",
                "firstKeptEntryId",
                "firstKeptEntryIndex",
                "firstKeptEntryInputIndex",
                "isSplitTurn",
                "turnStartEntryId",
                "turnStartIndex",
                "tokensBefore",
                "settings"
            ]
        );
    }
}
