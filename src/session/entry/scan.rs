//! The fast path of entry parsing: a purpose-built scanner for the fields the core
//! reads, producing exactly what serde_json would for the same text.
//!
//! Session lines are mostly long strings with an escape every few dozen bytes, where
//! serde_json pays a function call per escape and scans eight bytes at a time. This
//! scanner jumps between quotes and backslashes with `memchr` and validates escapes
//! inline. It accepts a conservative subset of what serde_json accepts and gives up
//! (`None`) on anything else: bad or unusual input (surrogate escapes, escaped keys,
//! duplicate fields, deep nesting, syntax errors, ...) goes to the serde_json path,
//! which stays the single source of parse results and error messages for it.

use std::borrow::Cow;

use super::{ContentField, RawBlock, RawBlocks, RawEntry, RawJson, RawMessage, Usage};
use crate::session::text::Text;

/// Deeper nesting is left to serde_json (its limit is 128). Values read here are thus
/// shallow enough to be re-parsed as `serde_json::Value` later without a depth check.
const MAX_DEPTH: u32 = 64;

/// Reads one entry, or `None` when the serde_json path must decide.
pub(super) fn entry(raw: &str) -> Option<RawEntry<'_, RawMessage<'_>, ContentField<'_>>> {
    let mut s = Scanner::new(raw);
    s.ws();
    if s.peek() != Some(b'{') {
        return None;
    }
    let mut r = RawEntry {
        entry_type: None,
        id: None,
        parent_id: None,
        timestamp: None,
        message: None,
        content: None,
        summary: None,
        details: None,
        from_hook: None,
        first_kept_entry_id: None,
        first_kept_entry_index: None,
        tokens_before: None,
        version: None,
    };
    let mut seen = Seen(0);
    s.object(|s, key| {
        match key {
            b"type" => {
                seen.once(0)?;
                r.entry_type = s.plain_str()?;
            }
            b"id" => s.raw_once(&mut seen, 1, &mut r.id)?,
            b"parentId" => s.raw_once(&mut seen, 2, &mut r.parent_id)?,
            b"timestamp" => s.raw_once(&mut seen, 3, &mut r.timestamp)?,
            b"message" => {
                seen.once(4)?;
                r.message = s.message()?;
            }
            b"content" => {
                seen.once(5)?;
                r.content = s.content()?;
            }
            b"summary" => s.raw_once(&mut seen, 6, &mut r.summary)?,
            b"details" => s.raw_once(&mut seen, 7, &mut r.details)?,
            b"fromHook" => s.raw_once(&mut seen, 8, &mut r.from_hook)?,
            b"firstKeptEntryId" => s.raw_once(&mut seen, 9, &mut r.first_kept_entry_id)?,
            b"firstKeptEntryIndex" => s.raw_once(&mut seen, 10, &mut r.first_kept_entry_index)?,
            b"tokensBefore" => s.raw_once(&mut seen, 11, &mut r.tokens_before)?,
            b"version" => s.raw_once(&mut seen, 12, &mut r.version)?,
            _ => s.skip_value()?,
        }
        Some(())
    })?;
    s.ws();
    (s.pos == raw.len()).then_some(r)
}

/// Fields already read in an object: a repeated known field is an error for serde.
struct Seen(u32);

impl Seen {
    fn once(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

/// The value of field `name` of a JSON object given as valid JSON text (`Some(None)`
/// when absent or null), or `None` when serde_json must decide (not an object, a
/// duplicate `name`, anything the scanner does not take).
pub(crate) fn field<'a>(object: &'a str, name: &[u8]) -> Option<Option<RawJson<'a>>> {
    let mut s = Scanner::new(object);
    s.ws();
    if s.peek()? != b'{' {
        return None;
    }
    let mut seen = Seen(0);
    let mut value = None;
    s.object(|s, key| {
        if key == name {
            s.raw_once(&mut seen, 0, &mut value)
        } else {
            s.skip_value()
        }
    })?;
    s.ws();
    (s.pos == object.len()).then_some(value)
}

/// Digits only, at most 15 of them: the value serde_json's `u64` read gives, exactly.
fn small_integer(s: &str) -> Option<f64> {
    if s.is_empty() || s.len() > 15 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().map(|n| n as f64)
}

/// Any byte below 0x20. Outside strings JSON allows only tab, CR and LF (whitespace);
/// inside strings none. Lines without any (the norm) skip the per-string check.
fn has_control_bytes(b: &[u8]) -> bool {
    // Lane-wise minimums over 32-byte chunks: the compiler turns this into a few
    // vector instructions per chunk. Control bytes are rare, so no early exit.
    let mut chunks = b.chunks_exact(32);
    let mut min = [u8::MAX; 32];
    for c in &mut chunks {
        for (m, &x) in min.iter_mut().zip(c) {
            *m = (*m).min(x);
        }
    }
    let low = |s: &[u8]| s.iter().fold(u8::MAX, |m, &x| m.min(x));
    low(&min).min(low(chunks.remainder())) < 0x20
}

/// Finds the next quote or backslash. memchr's AVX2 searcher, built once per line, saves the
/// runtime dispatch of `memchr2` on every call (there is a call per escape).
struct QuoteOrBackslash {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
}

impl QuoteOrBackslash {
    fn new() -> Self {
        QuoteOrBackslash {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'"', b'\\'),
        }
    }

    // Not inlined: the scanning loop then keeps its state in registers across the call.
    #[inline(never)]
    fn find(&self, haystack: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(two) = &self.avx2 {
            return two.find(haystack);
        }
        memchr::memchr2(b'"', b'\\', haystack)
    }
}

/// Bytes of `w` (little-endian) that are a quote, a backslash or a control character:
/// the lowest flagged byte is exact (false positives only occur above a true match).
fn specials(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    let below = |x: u64, n: u8| x.wrapping_sub(LO * u64::from(n)) & !x;
    let quote = w ^ (LO * u64::from(b'"'));
    let backslash = w ^ (LO * u64::from(b'\\'));
    (below(quote, 1) | below(backslash, 1) | below(w, 0x20)) & (LO << 7)
}

/// Bit k set when byte `i + k` is a quote or a backslash; `None` when fewer than 16
/// bytes are left.
#[cfg(target_arch = "x86_64")]
fn mask16(b: &[u8], i: usize) -> Option<u32> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let chunk: &[u8; 16] = b.get(i..i + 16)?.try_into().ok()?;
    // SAFETY: SSE2 is part of the x86_64 baseline, and the unaligned load reads the 16
    // bytes of `chunk`, which is borrowed for the duration of the call.
    let m = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(quote, backslash))
    };
    Some(m as u32)
}

#[cfg(not(target_arch = "x86_64"))]
fn mask16(_: &[u8], _: usize) -> Option<u32> {
    None
}

struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    check_controls: bool,
    depth: u32,
    finder: QuoteOrBackslash,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            pos: 0,
            check_controls: has_control_bytes(text.as_bytes()),
            depth: 0,
            finder: QuoteOrBackslash::new(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    /// JSON whitespace, exactly serde_json's set.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// A string (at its opening quote). Returns the text between the quotes and
    /// whether it contains escapes.
    fn string(&mut self) -> Option<(&'a str, bool)> {
        let b = self.bytes();
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            // Escapes often come in runs (`\n\t\t`) or a few dozen bytes apart: look at
            // the next byte, then the next 16 inline, and call memchr only for a longer run.
            if b.get(i) != Some(&b'\\') {
                i += match mask16(b, i) {
                    Some(0) => 16 + self.finder.find(b.get(i + 16..)?)?,
                    Some(m) => m.trailing_zeros() as usize,
                    None => self.finder.find(b.get(i..)?)?,
                };
            }
            if b[i] == b'"' {
                break;
            }
            escaped = true;
            match *b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let h = b.get(i + 2..i + 6)?;
                    if !h.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    // Surrogates: serde_json validates pairs only when it decodes the
                    // string; leave every case to it.
                    if matches!(h[0], b'd' | b'D') && !matches!(h[1], b'0'..=b'7') {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            }
        }
        let inner = &self.text[start..i];
        if self.check_controls && inner.bytes().any(|c| c < 0x20) {
            return None;
        }
        self.pos = i + 1;
        Some((inner, escaped))
    }

    /// An object key (at its opening quote). Keys with escapes are left to serde.
    fn key(&mut self) -> Option<&'a [u8]> {
        let b = self.bytes();
        let start = self.pos + 1;
        let mut end = start;
        // Eight bytes at a time: keys are short.
        while let Some(w) = b.get(end..end + 8) {
            let m = specials(u64::from_le_bytes(w.try_into().ok()?));
            if m != 0 {
                end += m.trailing_zeros() as usize / 8;
                break;
            }
            end += 8;
        }
        while !matches!(*b.get(end)?, b'"' | b'\\' | ..0x20) {
            end += 1;
        }
        if b[end] != b'"' {
            return None;
        }
        self.pos = end + 1;
        Some(&b[start..end])
    }

    /// Walks an object (at its `{`), calling `field` with each key once the scanner
    /// stands at the value; `field` must consume the value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.enter()?;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.key()?;
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            self.ws();
            field(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Walks an array (at its `[`), calling `element` at each element.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.enter()?;
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            element(self)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b']' => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        self.pos += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Any JSON value, validated and skipped.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|s, _| s.skip_value()),
            b'[' => self.array(Self::skip_value),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.bytes().get(self.pos..self.pos + word.len())? != word {
            return None;
        }
        self.pos += word.len();
        Some(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, as serde_json checks it.
    fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        let mut i = self.pos;
        let digits = |i: &mut usize| {
            let start = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > start
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                digits(&mut i);
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if !digits(&mut i) {
                return None;
            }
        }
        self.pos = i;
        Some(())
    }

    /// A value kept as raw text: `Some(None)` for `null` (serde's `Option` reads it
    /// as absent), `None` to give up.
    fn raw(&mut self) -> Option<Option<RawJson<'a>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        let start = self.pos;
        self.skip_value()?;
        Some(Some(RawJson(&self.text[start..self.pos])))
    }

    fn raw_once(
        &mut self,
        seen: &mut Seen,
        bit: u32,
        slot: &mut Option<RawJson<'a>>,
    ) -> Option<()> {
        seen.once(bit)?;
        *slot = self.raw()?;
        Some(())
    }

    /// A string serde would borrow (no escapes), or null.
    fn plain_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => match self.string()? {
                (s, false) => Some(Some(Cow::Borrowed(s))),
                (_, true) => None,
            },
            _ => None,
        }
    }

    fn text(&mut self) -> Option<Text<'a>> {
        Some(match self.string()? {
            (s, false) => Text::Plain(Cow::Borrowed(s)),
            // The same characters serde would decode (surrogates were excluded).
            (s, true) => Text::Escaped(s),
        })
    }

    /// `message`: an object or null.
    fn message(&mut self) -> Option<Option<RawMessage<'a>>> {
        match self.peek()? {
            b'n' => return self.literal(b"null").map(|()| None),
            b'{' => {}
            // serde would read a struct from an array, or fail: its call.
            _ => return None,
        }
        let mut m = RawMessage {
            role: None,
            content: None,
            usage: None,
            stop_reason: None,
            command: None,
            output: None,
            exit_code: None,
            cancelled: None,
            truncated: None,
            full_output_path: None,
            exclude_from_context: None,
            summary: None,
            usage_fast: None,
            shallow: true,
        };
        let mut seen = Seen(0);
        self.object(|s, key| {
            match key {
                b"role" => s.raw_once(&mut seen, 0, &mut m.role)?,
                b"content" => {
                    seen.once(1)?;
                    m.content = s.content()?;
                }
                b"usage" => {
                    seen.once(2)?;
                    (m.usage, m.usage_fast) = s.usage()?;
                }
                b"stopReason" => s.raw_once(&mut seen, 3, &mut m.stop_reason)?,
                b"command" => s.raw_once(&mut seen, 4, &mut m.command)?,
                b"output" => s.raw_once(&mut seen, 5, &mut m.output)?,
                b"exitCode" => s.raw_once(&mut seen, 6, &mut m.exit_code)?,
                b"cancelled" => s.raw_once(&mut seen, 7, &mut m.cancelled)?,
                b"truncated" => s.raw_once(&mut seen, 8, &mut m.truncated)?,
                b"fullOutputPath" => s.raw_once(&mut seen, 9, &mut m.full_output_path)?,
                b"excludeFromContext" => s.raw_once(&mut seen, 10, &mut m.exclude_from_context)?,
                b"summary" => s.raw_once(&mut seen, 11, &mut m.summary)?,
                _ => s.skip_value()?,
            }
            Some(())
        })?;
        Some(Some(m))
    }

    /// `usage`, kept raw, and read here when it is an object whose token counts are
    /// all null, absent or plain integers (exact in an f64). Anything else is left to
    /// the serde_json read of the raw text (errors included).
    fn usage(&mut self) -> Option<(Option<RawJson<'a>>, Option<Usage>)> {
        let start = self.pos;
        if self.peek()? != b'{' {
            return Some((self.raw()?, None));
        }
        let mut u = Usage::default();
        let mut exact = true;
        let mut seen = Seen(0);
        self.object(|s, key| {
            let (bit, slot) = match key {
                b"input" => (0, &mut u.input),
                b"output" => (1, &mut u.output),
                b"cacheRead" => (2, &mut u.cache_read),
                b"cacheWrite" => (3, &mut u.cache_write),
                b"totalTokens" => (4, &mut u.total_tokens),
                _ => return s.skip_value(),
            };
            exact &= seen.once(bit).is_some();
            match s.raw()? {
                Some(n) => match small_integer(n.get()) {
                    Some(v) => *slot = v,
                    None => exact = false,
                },
                None => *slot = 0.0,
            }
            Some(())
        })?;
        let raw = RawJson(&self.text[start..self.pos]);
        Some((Some(raw), exact.then_some(u)))
    }

    /// `content`: a string, an array of blocks, or null.
    fn content(&mut self) -> Option<Option<ContentField<'a>>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => self.text().map(|t| Some(ContentField::Text(t))),
            b'[' => {
                let mut blocks = Vec::with_capacity(2);
                self.array(|s| {
                    blocks.push(s.block()?);
                    Some(())
                })?;
                Some(Some(ContentField::Blocks(RawBlocks(blocks))))
            }
            _ => None,
        }
    }

    /// One element of a content array: objects are blocks, the rest is skipped.
    fn block(&mut self) -> Option<Option<RawBlock<'a>>> {
        match self.peek()? {
            b'{' => {}
            b'"' | b'[' | b't' | b'f' | b'n' => return self.skip_value().map(|()| None),
            // serde would decode a number here (and fail on one out of range).
            _ => return None,
        }
        let mut b = RawBlock {
            block_type: None,
            text: None,
            thinking: None,
            name: None,
            arguments: None,
        };
        let mut seen = Seen(0);
        self.object(|s, key| {
            match key {
                b"type" => s.raw_once(&mut seen, 0, &mut b.block_type)?,
                b"text" => s.raw_once(&mut seen, 1, &mut b.text)?,
                b"thinking" => s.raw_once(&mut seen, 2, &mut b.thinking)?,
                b"name" => s.raw_once(&mut seen, 3, &mut b.name)?,
                b"arguments" => s.raw_once(&mut seen, 4, &mut b.arguments)?,
                _ => s.skip_value()?,
            }
            Some(())
        })?;
        Some(Some(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path either gives up or agrees with serde_json.
    fn agrees(json: &str) -> bool {
        let fast = entry(json);
        let slow = serde_json::from_str::<RawEntry<RawMessage, ContentField>>(json);
        match (fast, slow) {
            (None, _) => false,
            (Some(_), Err(e)) => panic!("fast path accepted what serde rejects ({e}): {json}"),
            (Some(f), Ok(s)) => {
                assert_eq!(format!("{:?}", Dbg(&f)), format!("{:?}", Dbg(&s)), "{json}");
                true
            }
        }
    }

    struct Dbg<'r, 'a>(&'r RawEntry<'a, RawMessage<'a>, ContentField<'a>>);

    impl std::fmt::Debug for Dbg<'_, '_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let r = self.0;
            let content = |c: &Option<ContentField>| match c {
                None => "-".to_string(),
                Some(ContentField::Null) => "null".to_string(),
                Some(ContentField::Text(t)) => format!("text {:?}", t.decode()),
                Some(ContentField::Blocks(b)) => {
                    b.0.iter()
                        .map(|b| match b {
                            None => "other".to_string(),
                            Some(b) => format!(
                                "{:?} {:?} {:?} {:?} {:?}",
                                b.block_type, b.text, b.thinking, b.name, b.arguments
                            ),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            };
            write!(
                f,
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} content {}",
                r.entry_type,
                r.id,
                r.parent_id,
                r.timestamp,
                r.summary,
                r.details,
                r.from_hook,
                r.first_kept_entry_id,
                r.first_kept_entry_index,
                r.tokens_before,
                r.version,
                r.message.is_some(),
                content(&r.content),
            )?;
            if let Some(m) = &r.message {
                write!(
                    f,
                    " message {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} content {}",
                    m.role,
                    m.usage,
                    m.stop_reason,
                    m.command,
                    m.output,
                    m.exit_code,
                    m.cancelled,
                    m.truncated,
                    m.full_output_path,
                    m.exclude_from_context,
                    m.summary,
                    content(&m.content),
                )?;
            }
            Ok(())
        }
    }

    #[test]
    fn accepts_what_serde_accepts_with_the_same_fields() {
        for json in [
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"text","text":"hi\n\"there\"\\ \u00e9 \/"},{"type":"toolCall","id":"t","name":"read","arguments":{"path":"x","n":[1,-2.5e+3,0,true,false,null,{}]}},"junk",[1,[2]],{"type":"future"},true,null],"usage":{"input":1,"output":2},"stopReason":"stop"}}"#,
            " {\"type\" : \"x\" , \"content\" : \"a\\tb\" , \"odd\" : [ ] }\t\r\n",
            "{\"type\":\"x\",\n  \"summary\": \"two\",\n  \"details\": {\"a\": \"b\"}}",
            r#"{"type":null,"message":null,"content":null,"version":3,"fromHook":false}"#,
            r#"{}"#,
            r#"{"type":"message","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":0,"cancelled":false}}"#,
        ] {
            assert!(agrees(json), "fast path gave up on {json}");
        }
    }

    /// Lines of the conformance corpus, mutated at random: whatever the scanner accepts,
    /// serde_json accepts with the same fields.
    #[test]
    fn mutated_corpus_lines_agree_with_serde() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/corpus");
        let mut lines = Vec::new();
        for f in std::fs::read_dir(dir).unwrap().take(40) {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            lines.extend(text.lines().filter(|l| l.len() < 4000).map(str::to_string));
        }
        assert!(lines.len() > 100);
        const ALPHABET: &[u8] =
            b"{}[]\",:\\/ \t\n0123456789-+.eEnulltruefalsu\x01\x1f\x7fabcdefABCDEF";
        let mut rng = fastrand::Rng::with_seed(7);
        let (mut accepted, mut total) = (0, 0);
        for line in &lines {
            assert!(agrees(line) || entry(line).is_none());
            for _ in 0..8 {
                let mut b = line.as_bytes().to_vec();
                for _ in 0..rng.usize(1..4) {
                    let at = rng.usize(..b.len().max(1));
                    let c = ALPHABET[rng.usize(..ALPHABET.len())];
                    match rng.u8(..3) {
                        0 if at < b.len() => b[at] = c,
                        1 if at < b.len() => drop(b.remove(at)),
                        _ => b.insert(at.min(b.len()), c),
                    }
                }
                let Ok(m) = String::from_utf8(b) else {
                    continue;
                };
                total += 1;
                accepted += usize::from(agrees(&m));
            }
        }
        assert!(accepted > total / 20, "{accepted} of {total}");
    }

    #[test]
    fn gives_up_on_anything_unusual() {
        for json in [
            r#"[1]"#,
            r#"{"type":"a","type":"b"}"#,
            r#"{"id":null,"id":"x"}"#,
            r#"{"type":"a\u0062"}"#,
            r#"{"t\u0079pe":"a"}"#,
            r#"{"content":"\ud83d\ude00"}"#,
            r#"{"x":"\ud800"}"#,
            "{\"content\":\"a\tb\"}",
            "{\"x\":\"a\u{1}b\"}",
            r#"{"x":01}"#,
            r#"{"x":1.}"#,
            r#"{"x":-}"#,
            r#"{"x":1e}"#,
            r#"{"x":"\x"}"#,
            r#"{"x":"\u12"}"#,
            r#"{"x":"unterminated}"#,
            r#"{"x":1,}"#,
            r#"{"x":[1,]}"#,
            r#"{"x":tru}"#,
            r#"{"x":1} x"#,
            r#"{"x":1"#,
            r#"{"content":5}"#,
            r#"{"content":[1]}"#,
            r#"{"message":[]}"#,
            r#"{"message":{"role":"a","role":"b"}}"#,
            r#"{"message":{"content":[{"text":"a","text":"b"}]}}"#,
        ] {
            assert!(entry(json).is_none(), "fast path accepted {json}");
        }
        let deep = format!("{{\"x\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert!(entry(&deep).is_none());
    }
}
