//! Parsing a JSONL body while it arrives.
//!
//! The receiving side (`http::extract::send_lines`) hands over the body in pieces that
//! end at a line break (the last piece: wherever the body ends); [`parse_arriving`]
//! parses each piece's lines into a [`session::Builder`] while the next piece is still
//! on the wire, and finishes the session (migration, id index) when the body is whole.
//! On a 1–20 MB session the upload and the parse then overlap instead of adding up.
//!
//! Design decisions:
//! * The session borrows its text from the pieces, so they must stay where they are
//!   while more arrive: they are kept in a list that grows through shared references
//!   ([`Chain`], each link a `OnceLock` set once), which safe Rust lets us borrow from
//!   and append to at the same time. No copy, no second buffer: the pieces are the
//!   body's own bytes, each a view of the receiving buffer.
//! * Only the happy path is new. Any error (UTF-8, a syntax error, a bad entry, too many
//!   entries, a duplicate id) sends the whole body through [`SessionInput::parse_limited`],
//!   the path every other endpoint takes, so errors keep their exact wording, order,
//!   line and column. A valid body gives the same session either way: the same lines,
//!   numbered the same, through the same [`session::Builder`].
//! * The byte-order mark is stripped at the start of the body only, as the whole-body
//!   path does; lines are validated as UTF-8 one by one, which is the same check since
//!   line breaks are never inside a character (and ASCII lines, known so from the
//!   pass that finds the line's end, need no check).

use std::sync::mpsc::Receiver;
use std::sync::OnceLock;

use bytes::{Bytes, BytesMut};

use compactd_core::session::{self, InputError, Origin};

use super::input::{BodyFormat, SessionInput};
use super::options::Options;

/// What the receiving side sends.
#[derive(Debug)]
pub enum Piece<P> {
    /// Whole lines of the body (the last piece may end without a line break).
    Lines(P),
    /// The body is complete.
    End,
}

/// Cuts the chunks of a body, as they arrive, into pieces that end at a line break.
///
/// The chunks are copied into one buffer (of the declared length, when there is one) and
/// each piece is a view of it (`split_to` + `freeze`: no copy), so the body is held
/// once. Only the new chunk is searched for the last line break, so a long line costs no
/// rescans.
///
/// Why copy rather than pass on views of hyper's chunks: a chunk is a slice of hyper's
/// read buffer, and while a view of it lives hyper cannot reuse that buffer, so it
/// allocates a fresh one (up to ~400 KiB) for every read. Tried: the copy saved was
/// ~2 MB per 2.4 MB body, but the fresh buffers cost ~570 page faults per request
/// (allocator trimming) and 1.4 ms more CPU; with the trimming turned off, no
/// measurable gain.
pub struct LineCutter {
    pending: BytesMut,
}

impl LineCutter {
    pub fn with_capacity(body_len: usize) -> Self {
        LineCutter {
            pending: BytesMut::with_capacity(body_len),
        }
    }

    /// The next piece, once `chunk` brings a line break.
    pub fn push(&mut self, chunk: &[u8]) -> Option<Bytes> {
        self.pending.extend_from_slice(chunk);
        let nl = memchr::memrchr(b'\n', chunk)?;
        let end = self.pending.len() - (chunk.len() - nl - 1);
        Some(self.pending.split_to(end).freeze())
    }

    /// What is left after the last line break, if anything.
    pub fn finish(self) -> Option<Bytes> {
        (!self.pending.is_empty()).then(|| self.pending.freeze())
    }
}

/// Receives the pieces of a JSONL body, parses them as they come, and calls `then` with
/// the session (or what is wrong with the body, exactly as
/// [`SessionInput::parse_limited`] words it). `body_len`: the declared length of
/// the body, 0 when unknown (a size hint). `None` when the sender went away before
/// [`Piece::End`]: the body did not arrive whole, and the receiving side says why.
pub fn parse_arriving<O, P, R>(
    pieces: Receiver<Piece<P>>,
    query: O,
    max_entries: usize,
    body_len: usize,
    then: impl for<'a> FnOnce(Result<SessionInput<'a, O>, InputError>) -> R,
) -> Option<R>
where
    O: Options,
    P: AsRef<[u8]>,
{
    let chain = Chain::default();
    let mut slot = &chain.first;
    let mut lines = Some(Lines::new(max_entries, body_len));
    loop {
        match pieces.recv() {
            Ok(Piece::Lines(piece)) => {
                let link = append(slot, piece);
                slot = &link.next;
                if let Some(l) = &mut lines {
                    if !l.feed(link.piece.as_ref()) {
                        // Invalid: keep receiving; the whole-body parse words the error.
                        lines = None;
                    }
                }
            }
            Ok(Piece::End) => break,
            Err(_) => return None,
        }
    }
    if let Some(session) = lines.and_then(|l| l.builder.finish().ok()) {
        return Some(then(Ok(SessionInput {
            session,
            options: query,
            leaf_pointer: "leafId",
        })));
    }
    let mut whole = Vec::with_capacity(chain.iter().map(|p| p.as_ref().len()).sum());
    for piece in chain.iter() {
        whole.extend_from_slice(piece.as_ref());
    }
    Some(then(SessionInput::parse_limited(
        &whole,
        BodyFormat::Jsonl,
        query,
        max_entries,
    )))
}

/// The lines of the pieces so far, numbered as `Session::from_jsonl` numbers them.
struct Lines<'a> {
    builder: session::Builder<'a>,
    /// Line breaks seen so far.
    line: usize,
    entries: usize,
    max_entries: usize,
    started: bool,
}

impl<'a> Lines<'a> {
    /// `body_len`: the declared length of the body (0 when unknown), to size the
    /// entry vector as the whole-body parse does.
    fn new(max_entries: usize, body_len: usize) -> Self {
        Lines {
            builder: session::Builder::for_body(body_len.min(max_entries.saturating_mul(1024))),
            line: 0,
            entries: 0,
            max_entries,
            started: false,
        }
    }

    /// Parses the lines of the next piece; `false` when the body is known to be invalid.
    fn feed(&mut self, piece: &'a [u8]) -> bool {
        let b = match std::mem::replace(&mut self.started, true) {
            false => piece.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(piece),
            true => piece,
        };
        let mut start = 0;
        while start < b.len() {
            // The line's end, whether it holds a control byte, whether it is ASCII: one
            // pass. Lines are UTF-8 one by one as the piece is (a character never
            // holds a `\n` byte), so only lines with other bytes are validated.
            let line = compactd_core::json::lines::line_end(b, start);
            let bytes = &b[start..line.end];
            let text = if line.ascii {
                // SAFETY: every byte of `bytes` is below 0x80 (`ascii` is exact when
                // true), and ASCII text is UTF-8.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            } else {
                match simdutf8::basic::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(_) => return false,
                }
            };
            // Only the last piece has text after its last line break.
            let number = if line.end < b.len() {
                self.line += 1;
                self.line
            } else {
                self.line + 1
            };
            if !self.push(text, number, line.controls) {
                return false;
            }
            start = line.end + 1;
        }
        true
    }

    fn push(&mut self, line: &'a str, number: usize, controls: bool) -> bool {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if session::is_blank(line) {
            return true;
        }
        self.entries += 1;
        self.entries <= self.max_entries
            && self
                .builder
                .push_hinted(line, Origin::Line(number), Some(controls))
    }
}

/// The pieces received so far, in order: a singly linked list whose links are set once
/// through a shared reference, so the session can borrow earlier pieces while later
/// ones are appended.
struct Chain<P> {
    first: OnceLock<Box<Link<P>>>,
}

struct Link<P> {
    piece: P,
    next: OnceLock<Box<Link<P>>>,
}

impl<P> Default for Chain<P> {
    fn default() -> Self {
        Chain {
            first: OnceLock::new(),
        }
    }
}

/// Sets the empty `slot` to a link holding `piece`.
fn append<P>(slot: &OnceLock<Box<Link<P>>>, piece: P) -> &Link<P> {
    slot.get_or_init(|| {
        Box::new(Link {
            piece,
            next: OnceLock::new(),
        })
    })
}

impl<P> Chain<P> {
    fn iter(&self) -> impl Iterator<Item = &P> {
        std::iter::successors(self.first.get(), |link| link.next.get()).map(|l| &l.piece)
    }
}

impl<P> Drop for Chain<P> {
    /// Link by link: a recursive drop of a long chain could overflow the stack.
    fn drop(&mut self) {
        let mut next = self.first.take();
        while let Some(mut link) = next {
            next = link.next.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::PrepareOptions;

    /// The receiving side's pieces for a body arriving in chunks of `chunk` bytes.
    fn pieces_of(body: &[u8], chunk: usize) -> Vec<Bytes> {
        let mut cutter = LineCutter::with_capacity(body.len());
        let mut out: Vec<Bytes> = body.chunks(chunk).filter_map(|c| cutter.push(c)).collect();
        out.extend(cutter.finish());
        assert_eq!(out.concat(), body, "the pieces are the body");
        for p in &out[..out.len().saturating_sub(1)] {
            assert_eq!(p.last(), Some(&b'\n'), "pieces end at a line break");
        }
        out
    }

    /// A summary of a parse that differs when anything the session holds differs.
    fn outcome(r: Result<SessionInput<'_, PrepareOptions>, InputError>) -> String {
        match r {
            Ok(input) => {
                let s = &input.session;
                let entries: Vec<String> = s
                    .entries
                    .iter()
                    .map(|e| format!("{}|{:?}|{:?}|{:?}", e.index, e.origin, e.id(), e.raw))
                    .collect();
                format!(
                    "ok v{} header {:?} {}",
                    s.source_version,
                    s.header.as_ref().map(|h| h.raw),
                    entries.join("\n")
                )
            }
            Err(e) => format!("err {e:?}"),
        }
    }

    fn arriving(pieces: Vec<Bytes>, max_entries: usize) -> String {
        // The declared length: sometimes absent, sometimes right, sometimes off.
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        let declared = [0, len, len / 3, len * 3][len % 4];
        let (tx, rx) = std::sync::mpsc::channel();
        for p in pieces {
            tx.send(Piece::Lines(p)).unwrap();
        }
        tx.send(Piece::End).unwrap();
        parse_arriving(
            rx,
            PrepareOptions::default(),
            max_entries,
            declared,
            outcome,
        )
        .unwrap()
    }

    fn whole(body: &[u8], max_entries: usize) -> String {
        outcome(SessionInput::parse_limited(
            body,
            BodyFormat::Jsonl,
            PrepareOptions::default(),
            max_entries,
        ))
    }

    const V3: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n\
        {\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"h\u{e9}llo\"}}\r\n\
        \n   \n\
        {\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n";

    #[test]
    fn pieces_of_any_size_give_the_whole_body_parse() {
        let v1 = "\u{feff}{\"type\":\"session\",\"id\":\"h\"}\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n{\"type\":\"message\",\"message\":{\"role\":\"hookMessage\",\"content\":\"b\"}}";
        let no_final_break = V3.trim_end();
        let bodies: Vec<Vec<u8>> = vec![
            V3.into(),
            v1.into(),
            no_final_break.into(),
            // errors: syntax, UTF-8, a bad entry, a duplicate id, a late header, empty
            format!("{V3}{{\"type\":\"message\",\"id\":\n").into(),
            [V3.as_bytes(), b"{\"type\":\"x\",\"id\":\"\xff\"}\n"].concat(),
            // more UTF-8: a surrogate, an overlong form after a tab, a character cut off
            // at the end of the body, a bad byte after 100 ASCII bytes
            [V3.as_bytes(), b"{\"type\":\"x\",\"id\":\"\xed\xa0\x80\"}\n"].concat(),
            [
                V3.as_bytes(),
                b"{\"type\":\"x\",\t\"id\":\"caf\xc3\xa9\xc0\xaf\"}\n",
            ]
            .concat(),
            [V3.as_bytes(), b"{\"type\":\"x\",\"id\":\"\xc3"].concat(),
            [
                V3.as_bytes(),
                b"{\"type\":\"x\",\"id\":\"",
                &[b'a'; 100],
                b"\x80\"}\n",
            ]
            .concat(),
            format!("{V3}{{\"type\":\"message\",\"id\":5}}\n").into(),
            format!("{V3}{{\"type\":\"x\",\"id\":\"a\"}}\n").into(),
            format!("{V3}{{\"type\":\"session\"}}\n").into(),
            b"".to_vec(),
            b"\n\n".to_vec(),
        ];
        for body in &bodies {
            for max in [usize::MAX, 3, 2] {
                let expected = whole(body, max);
                for chunk in [1, 2, 3, 7, 40, 64, 1000] {
                    let got = arriving(pieces_of(body, chunk), max);
                    assert_eq!(got, expected, "chunk {chunk}, max {max}, body {body:?}");
                }
            }
        }
    }

    /// The receiving side's pieces for a body arriving in chunks that end at `cuts` (and
    /// at its end).
    fn pieces_at(body: &[u8], cuts: &[usize]) -> Vec<Bytes> {
        let mut cutter = LineCutter::with_capacity(body.len());
        let mut out = Vec::new();
        let mut start = 0;
        for &end in cuts.iter().chain([&body.len()]) {
            out.extend(cutter.push(&body[start..end]));
            start = end;
        }
        out.extend(cutter.finish());
        assert_eq!(out.concat(), body, "the pieces are the body");
        out
    }

    #[test]
    fn a_line_spanning_chunks_goes_whole_into_one_piece() {
        let body = V3.as_bytes();
        let second = V3.find('\n').unwrap() + 1;
        let third = second + V3[second..].find('\n').unwrap() + 1;
        // The second line cut into two chunks, then into four.
        for cuts in [
            vec![second + 10],
            vec![second + 5, second + 20, second + 30],
        ] {
            let pieces = pieces_at(body, &cuts);
            assert_eq!(pieces.len(), 2, "{pieces:?}");
            assert_eq!(&pieces[0][..], &body[..second]);
            assert_eq!(&pieces[1][..], &body[second..], "ends with the third line");
        }
        // A chunk ending right after a line break sends that line at once.
        let pieces = pieces_at(body, &[second, third]);
        assert_eq!(pieces.len(), 3, "{pieces:?}");
        assert_eq!(&pieces[1][..], &body[second..third]);
    }

    #[test]
    fn every_cut_into_two_or_three_chunks_gives_the_whole_body_parse() {
        // A byte-order mark, CRLF line ends, characters of 2, 3 and 4 bytes, a blank line:
        // chunks end inside each of them.
        let text = "\u{feff}{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\r\n\
            {\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"h\u{e9} \u{20ac} \u{1f600}\"}}\r\n\
            \r\n\
            {\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"\u{1f600}\"}}";
        let bad = format!("{text}\r\n{{\"type\":\"message\",\"id\":\"\u{e9}\",oops}}");
        for (body, outcome) in [(text.to_string(), "ok"), (bad, "err")] {
            let body = body.as_bytes();
            let expected = whole(body, usize::MAX);
            assert!(expected.starts_with(outcome), "{expected}");
            for i in 0..=body.len() {
                let got = arriving(pieces_at(body, &[i]), usize::MAX);
                assert_eq!(got, expected, "cut at {i}");
                for j in (i..=body.len()).step_by(7) {
                    let got = arriving(pieces_at(body, &[i, j]), usize::MAX);
                    assert_eq!(got, expected, "cuts at {i}, {j}");
                }
            }
        }
    }

    #[test]
    fn the_real_sessions_parse_alike_in_pieces() {
        for name in ["large-session.jsonl", "before-compaction.jsonl"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/pi-sessions")
                .join(name);
            let body = std::fs::read(path).unwrap();
            let expected = whole(&body, usize::MAX);
            assert!(expected.starts_with("ok"), "{name}");
            for chunk in [8192, 65_536, 400_000] {
                assert_eq!(arriving(pieces_of(&body, chunk), usize::MAX), expected);
            }
        }
    }

    #[test]
    fn a_body_that_stops_early_gives_nothing() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(Piece::Lines(Bytes::from_static(V3.as_bytes())))
            .unwrap();
        drop(tx);
        assert!(parse_arriving(rx, PrepareOptions::default(), usize::MAX, 0, outcome).is_none());
    }

    #[test]
    fn a_long_chain_drops_without_recursion() {
        let (tx, rx) = std::sync::mpsc::channel();
        let header = b"{\"type\":\"session\",\"version\":3}\n";
        tx.send(Piece::Lines(Bytes::from_static(header))).unwrap();
        for _ in 0..200_000 {
            tx.send(Piece::Lines(Bytes::from_static(b"\n"))).unwrap();
        }
        tx.send(Piece::End).unwrap();
        let got = parse_arriving(rx, PrepareOptions::default(), usize::MAX, 0, outcome).unwrap();
        assert!(got.starts_with("ok"), "{got}");
    }
}
