//! The `text/event-stream` format as model servers send it: an incremental decoder.
//!
//! The rules are the WHATWG HTML ones (§9.2.6): a line ends in LF, CR LF or CR; `data:`
//! lines join with LF; `event:` names the event (`message` when unnamed); a blank line
//! dispatches it; a line starting with `:` is a comment (keep-alives); one space after
//! the colon is dropped; `id` and `retry` are ignored (nothing is reconnected).
//!
//! Design decisions:
//! * Hand-written rather than a crate (`eventsource-stream`, …): the format is these few
//!   rules, and the reader (`streaming.rs`) must see every chunk of bytes as it arrives
//!   (the stall timer) and count them against the answer's size limit, which a crate
//!   wrapping the byte stream would hide; it would also need reqwest's `stream` feature.
//! * Bytes are kept per line and decoded at its end, so a character split across two
//!   chunks is whole again; invalid UTF-8 is replaced, never an error.
//! * At the end of the stream a pending event without its blank line is dispatched (the
//!   standard drops it): some servers close right after `data: [DONE]\n`.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Event {
    pub(super) name: String,
    pub(super) data: String,
}

/// Decodes events from chunks of bytes; see the module documentation.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF belongs to that line end.
    after_cr: bool,
    name: String,
    data: String,
    has_data: bool,
}

impl Decoder {
    /// Feeds a chunk; complete events are appended to `out`.
    pub(super) fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            self.line.extend_from_slice(&rest[..end]);
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out);
        }
        self.line.extend_from_slice(rest);
    }

    /// The end of the stream: a last line and event not yet ended are dispatched.
    pub(super) fn finish(&mut self, out: &mut Vec<Event>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out);
        }
        self.line_done(b"", out);
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if line.is_empty() {
            if self.has_data {
                let name = std::mem::take(&mut self.name);
                out.push(Event {
                    name: if name.is_empty() {
                        "message".into()
                    } else {
                        name
                    },
                    data: std::mem::take(&mut self.data),
                });
            }
            self.name.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.name = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<Event> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out);
        }
        d.finish(&mut out);
        out
    }

    fn ev(name: &str, data: &str) -> Event {
        Event {
            name: name.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_lines_and_comments() {
        assert_eq!(
            decode(&[
                b": keep-alive\n\ndata: {\"a\":1}\n\nevent: ping\ndata: {}\n\ndata:x\ndata:  y\n\n"
            ]),
            vec![
                ev("message", "{\"a\":1}"),
                ev("ping", "{}"),
                ev("message", "x\n y")
            ]
        );
        // No data: nothing dispatched; the name does not carry over.
        assert_eq!(
            decode(&[b"event: a\n\ndata: 1\n\n"]),
            vec![ev("message", "1")]
        );
    }

    #[test]
    fn any_split_and_line_ending_gives_the_same_events() {
        let text = "event: message_start\r\ndata: {\"é\":\"ü\"}\r\n\r\ndata: [DONE]\r\r";
        let whole = decode(&[text.as_bytes()]);
        assert_eq!(
            whole,
            vec![
                ev("message_start", "{\"é\":\"ü\"}"),
                ev("message", "[DONE]")
            ]
        );
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            assert_eq!(decode(&[&bytes[..i], &bytes[i..]]), whole, "split at {i}");
        }
        let lf = text.replace("\r\n", "\n").replace('\r', "\n");
        assert_eq!(decode(&[lf.as_bytes()]), whole);
    }

    #[test]
    fn the_last_event_without_its_blank_line_is_kept() {
        assert_eq!(decode(&[b"data: [DONE]"]), vec![ev("message", "[DONE]")]);
        assert_eq!(decode(&[b"data: [DONE]\n"]), vec![ev("message", "[DONE]")]);
        assert_eq!(decode(&[b""]), vec![]);
    }
}
