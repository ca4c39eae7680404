//! The serialized conversation written straight as the contents of a JSON string (what
//! an answer shows), in one pass from the session's strings as they were sent.
//!
//! Design decisions:
//! * The same serializer as the text (`serialize::write_conversation`), writing into a
//!   [`JsonText`] instead of a `String`: the two cannot disagree on the text.
//! * A session string is copied from its escaped form as sent (`json::transcode`): most
//!   of its escapes (`\n`, `\"`, `\\`) are already what the answer needs, so it is
//!   neither decoded into a string nor escaped again.
//! * A tool call's arguments go from the text as sent to `JSON.stringify`'s output
//!   escaped once more, also in one pass; anything else (the wrappers' words, the rare
//!   values the raw path leaves to `serde_json::Value`) is written as text and escaped.

use crate::json::transcode::{
    write_decoded_contents, write_decoded_prefix, write_js_literal_escaped,
};
use crate::json::write::write_str_contents;
use crate::session::Text;

use super::message::AgentMessage;
use super::serialize::{write_conversation, ConversationOut, Wrappers};
use super::stringify::Sink;

/// The contents (no quotes) of a JSON string holding the conversation text, escaped as
/// `serde_json` escapes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct JsonText(pub Vec<u8>);

impl Sink for JsonText {
    // Called per piece from the service's serializer: inlined across the crate boundary
    // as it was inside one crate.
    #[inline]
    fn push_str(&mut self, s: &str) {
        // Most pieces are a few bytes of punctuation and labels (`{`, `":`, `[User]: `):
        // checked and copied without the block scanner's setup.
        if s.len() <= 24 && s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.0.extend_from_slice(s.as_bytes());
        } else {
            write_str_contents(&mut self.0, s);
        }
    }

    #[inline]
    fn push_escaped_string(&mut self, body: &str) -> bool {
        write_js_literal_escaped(&mut self.0, body);
        true
    }
}

impl ConversationOut for JsonText {
    #[inline]
    fn push_text(&mut self, t: &Text) {
        match t {
            Text::Escaped(body) => write_decoded_contents(&mut self.0, body),
            // Decoded text: any character may be there.
            Text::Plain(s) => write_str_contents(&mut self.0, s),
        }
    }

    fn push_text_prefix(&mut self, t: &Text, max_units: usize) {
        match t {
            Text::Escaped(body) => write_decoded_prefix(&mut self.0, body, max_units),
            Text::Plain(_) => {
                let mut prefix = String::new();
                t.push_prefix_to(&mut prefix, max_units);
                write_str_contents(&mut self.0, &prefix);
            }
        }
    }

    fn mark(&self) -> usize {
        self.0.len()
    }

    fn truncate(&mut self, mark: usize) {
        self.0.truncate(mark);
    }
}

/// `serialize_conversation` of `messages`, as the contents of a JSON string, appended
/// to `out`; `first` as in `write_conversation`.
pub fn write_conversation_json<'s, 'a: 's>(
    messages: impl IntoIterator<Item = AgentMessage<'s, 'a>>,
    wrappers: &Wrappers,
    out: &mut JsonText,
    first: &mut bool,
) {
    write_conversation(messages, wrappers, out, first);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::serialize::serialize_conversation;
    use crate::compaction::stringify::stringify_raw;
    use crate::compaction::test_session::{messages, parse, SessionText};
    use crate::json::transcode::tests::PIECES;
    use serde_json::{json, Value};

    fn escaped(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_str_contents(&mut out, text);
        out
    }

    /// The JSON path and the text path, escaped, agree on `s`.
    fn same(s: SessionText) {
        let jsonl = s.jsonl();
        let session = parse(&jsonl);
        let w = Wrappers::reference();
        let text = serialize_conversation(messages(&session), &w);
        let mut out = JsonText::default();
        write_conversation_json(messages(&session), &w, &mut out, &mut true);
        assert!(
            out.0 == escaped(&text),
            "{jsonl}\n{}\n{}",
            String::from_utf8_lossy(&out.0),
            String::from_utf8_lossy(&escaped(&text))
        );
    }

    #[test]
    fn every_kind_of_part_writes_the_escaped_text() {
        for p in PIECES {
            for pad in [0, 5, 15, 16, 17] {
                let t = format!("{}{p}x", "a".repeat(pad));
                // serde_json cannot hold lone surrogates: those go through raw lines.
                let Ok(v) = serde_json::from_str::<Value>(&format!("\"{t}\"")) else {
                    continue;
                };
                let s = v.as_str().unwrap();
                same(
                    SessionText::new()
                        .user(s)
                        .assistant(s)
                        .tool_result(s)
                        .custom_message(s)
                        .branch_summary(s)
                        .assistant_blocks(json!([
                            { "type": "thinking", "thinking": s },
                            { "type": "text", "text": s },
                            { "type": "toolCall", "id": "1", "name": "f",
                              "arguments": { "a": s, "b": [s, 1.50, null], "c": { "d": s } } },
                            { "type": "toolCall", "id": "2", "name": s, "arguments": { "1": s } }
                        ])),
                );
            }
        }
    }

    #[test]
    fn cut_tool_results_and_surrogates_at_the_cut_write_the_escaped_text() {
        for n in [1990, 1999, 2000, 2001, 2500] {
            same(SessionText::new().tool_result(&"\"".repeat(n)));
            same(SessionText::new().tool_result(&format!("a{}", "😀".repeat(n / 2))));
            same(SessionText::new().tool_result(&"\n".repeat(n)));
        }
    }

    #[test]
    fn arguments_as_sent_write_javascripts_text_escaped() {
        // Straight from raw text (lone surrogates included), against JSON.stringify of
        // the same text, then escaped.
        for p in PIECES {
            for pad in [0, 3, 16] {
                let body = format!("{}{p}\\n", "a".repeat(pad));
                let raw = format!("{{\"k\":\"{body}\",\"l\":[\"{body}\",2]}}");
                let mut js = String::new();
                crate::compaction::stringify::tool_arguments_raw(&raw, &mut js).unwrap();
                let mut out = JsonText::default();
                crate::compaction::stringify::tool_arguments_raw(&raw, &mut out).unwrap();
                assert_eq!(out.0, escaped(&js), "{raw}");
                literal_is_javascripts_text_escaped(&body);
            }
        }
    }

    #[test]
    fn long_random_literals_write_javascripts_text_escaped() {
        // Long enough for the 64-byte block path, escapes dense and sparse.
        let mut rng = fastrand::Rng::with_seed(130);
        for round in 0..1500 {
            let body =
                crate::json::escaped::tests::random_body_with(&mut rng, round % 60, round % 2 == 0);
            literal_is_javascripts_text_escaped(&body);
        }
    }

    /// `write_js_literal_escaped` of the string body `body` is `JSON.stringify`'s text of
    /// it, escaped.
    fn literal_is_javascripts_text_escaped(body: &str) {
        let mut js = String::new();
        stringify_raw(&format!("\"{body}\""), &mut js).unwrap();
        let mut out = Vec::new();
        write_js_literal_escaped(&mut out, body);
        assert_eq!(out, escaped(&js), "{body}");
    }

    #[test]
    fn pieces_written_apart_join_as_the_whole() {
        let s = SessionText::new()
            .user("a\nb")
            .assistant("")
            .tool_result("")
            .assistant("c\"")
            .tool_result("d");
        let jsonl = s.jsonl();
        let session = parse(&jsonl);
        let w = Wrappers::reference();
        let all: Vec<_> = messages(&session).into_iter().collect();
        let mut whole = JsonText::default();
        write_conversation_json(all.iter().copied(), &w, &mut whole, &mut true);
        for k in 0..=all.len() {
            let mut out = JsonText::default();
            let mut first = true;
            write_conversation_json(all[..k].iter().copied(), &w, &mut out, &mut first);
            write_conversation_json(all[k..].iter().copied(), &w, &mut out, &mut first);
            assert_eq!(out, whole, "split at {k}");
        }
    }
}
