//! One cursor over JSON text, in two modes.
//!
//! * [`Lexer::strict`] reads text nobody has validated yet (a session line). It accepts
//!   a conservative subset of what serde_json accepts and answers `None` for anything
//!   else: syntax errors, but also valid input it does not vouch for (surrogate
//!   escapes, which serde_json checks only when it decodes a string; nesting deeper
//!   than [`STRICT_MAX_DEPTH`]; control characters). The caller then asks serde_json,
//!   which stays the single source of parse results and error messages.
//! * [`Lexer::trusted`] walks text a JSON parser already accepted (a tool call's
//!   arguments): no depth limit, surrogate escapes allowed, no control-character pass.
//!   `None` still means "not what I expected", never a wrong answer.
//!
//! Session lines are mostly long strings with an escape every few dozen bytes, where
//! serde_json pays a function call per escape and scans eight bytes at a time. Strings
//! here are read 64 bytes at a time with their escapes found from bit masks (`blocks`);
//! short ones take one 16-byte look, and the last bytes of a text jump between quotes
//! and backslashes (16 bytes inline with SSE2, then memchr). Keys, which are short,
//! are scanned eight bytes at a time in a register.

mod control;

use control::has_control_bytes;
#[cfg(test)]
use control::has_control_bytes_portable;

/// Deeper nesting is left to serde_json (its limit is 128). Values read in strict mode
/// are thus shallow enough to be re-parsed as `serde_json::Value` without a depth check.
pub(crate) const STRICT_MAX_DEPTH: u32 = 64;

/// A cursor over JSON text. Methods that read a token expect the cursor at its first
/// byte (callers skip whitespace with [`Lexer::ws`]) and leave it just after it.
pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    /// The text holds bytes below 0x20, so each string must be checked for them.
    check_controls: bool,
    /// `\uD800`..`\uDFFF` escapes are accepted (trusted mode).
    surrogates: bool,
    depth: u32,
    max_depth: u32,
    /// Built when first needed: most lexers never reach a string's last 64 bytes.
    finder: Option<QuoteOrBackslash>,
}

impl<'a> Lexer<'a> {
    /// For text nobody has validated: `None` from any method means "ask serde_json".
    pub fn strict(text: &'a str) -> Self {
        Self::strict_hinted(text, None)
    }

    /// [`Lexer::strict`], told whether `text` holds a byte below 0x20 when the caller
    /// knows (`json::lines` finds that with the line's end): saves a pass over it.
    /// `Some(false)` must be exact; `None` looks.
    pub(crate) fn strict_hinted(text: &'a str, controls: Option<bool>) -> Self {
        Lexer {
            text,
            pos: 0,
            check_controls: controls.unwrap_or_else(|| has_control_bytes(text.as_bytes())),
            surrogates: false,
            depth: 0,
            max_depth: STRICT_MAX_DEPTH,
            finder: None,
        }
    }

    /// For text a JSON parser has already accepted.
    pub(crate) fn trusted(text: &'a str) -> Self {
        Lexer {
            text,
            pos: 0,
            check_controls: false,
            surrogates: true,
            depth: 0,
            max_depth: u32::MAX,
            finder: None,
        }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The byte offset of the cursor.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Whitespace, then the end of the text: nothing may follow a top-level value.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.text.len()
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    pub fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    /// JSON whitespace, exactly serde_json's set.
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// A string (at its opening quote). Returns the text between the quotes and
    /// whether it contains escapes.
    #[inline]
    pub fn string(&mut self) -> Option<(&'a str, bool)> {
        let b = self.bytes();
        // The slices below rely on it (callers have just looked: this check folds away).
        if b.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        // Short strings (ids, types, names) end within 16 bytes: one look, inline.
        if let Some(m) = mask16(b, start).filter(|&m| m != 0) {
            let at = start + m.trailing_zeros() as usize;
            if b[at] == b'"' {
                return self.string_end(start, at, false);
            }
        }
        self.long_string(start)
    }

    /// [`Lexer::string`] past its first look: 64 bytes at a time (`blocks`), the last
    /// bytes of the text byte-wise. Out of line, so that the short case inlines small.
    #[inline(never)]
    fn long_string(&mut self, start: usize) -> Option<(&'a str, bool)> {
        let b = self.bytes();
        let (mut i, mut escaped) = match super::blocks::scan(b, start, self.surrogates) {
            super::blocks::Scan::End { quote, escaped } => {
                return self.string_end(start, quote, escaped)
            }
            super::blocks::Scan::Invalid => return None,
            super::blocks::Scan::Tail { at, escaped } => (at, escaped),
        };
        loop {
            // Escapes often come in runs (`\n\t\t`) or a few dozen bytes apart: look at
            // the next byte, then the next 16 inline, and call memchr only for a longer run.
            if b.get(i) != Some(&b'\\') {
                i += match mask16(b, i) {
                    Some(0) => 16 + self.finder().find(b.get(i + 16..)?)?,
                    Some(m) => m.trailing_zeros() as usize,
                    None => self.finder().find(b.get(i..)?)?,
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
                    // string; in strict mode leave every case to it.
                    if !self.surrogates
                        && matches!(h[0], b'd' | b'D')
                        && !matches!(h[1], b'0'..=b'7')
                    {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            }
        }
        self.string_end(start, i, escaped)
    }

    fn finder(&mut self) -> &QuoteOrBackslash {
        self.finder.get_or_insert_with(QuoteOrBackslash::new)
    }

    /// The body `start..quote` of a string whose closing quote is at `quote`.
    #[inline]
    fn string_end(&mut self, start: usize, quote: usize, escaped: bool) -> Option<(&'a str, bool)> {
        debug_assert!(self.bytes()[start - 1] == b'"' && self.bytes()[quote] == b'"');
        // SAFETY: `start` follows the opening quote (checked by `string`) and `quote` is
        // the closing one (every scan stops only at a quote byte), `start <= quote`:
        // both ends border ASCII bytes, so they are character boundaries in range. The
        // checked slice cost ~8 instructions per string.
        let inner = unsafe { self.text.get_unchecked(start..quote) };
        if self.check_controls && inner.bytes().any(|c| c < 0x20) {
            return None;
        }
        self.pos = quote + 1;
        Some((inner, escaped))
    }

    /// An object key (at its opening quote), without the quotes. Keys with escapes
    /// are not read (`None`): serde would decode them, JavaScript would too.
    #[inline]
    pub fn key(&mut self) -> Option<&'a str> {
        let b = self.bytes();
        // The slice below relies on it (`object` has just looked: this check folds away).
        if b.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let end = match specials16(b, start) {
            // One 16-byte look ends nearly every key.
            Some(m) if m != 0 => start + m.trailing_zeros() as usize,
            looked => key_end(b, start + if looked.is_some() { 16 } else { 0 })?,
        };
        if b[end] != b'"' {
            return None;
        }
        self.pos = end + 1;
        // SAFETY: `start` follows the opening quote (checked above) and `end` is at the
        // closing one (`b[end] == b'"'`, `end >= start`): both ends border ASCII bytes,
        // so they are character boundaries in range.
        Some(unsafe { self.text.get_unchecked(start..end) })
    }

    /// Walks an object (at its `{`), calling `field` with each key once the cursor
    /// stands at the value; `field` must consume the value.
    pub fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
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

    /// Walks an array (at its `[`), calling `element` at each element; `element`
    /// must consume it.
    pub fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
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
        (self.depth <= self.max_depth).then_some(())
    }

    /// Any JSON value, validated and skipped.
    pub(crate) fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|s, _| s.skip_value()),
            b'[' => self.array(Self::skip_value),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => {
                // Not through `number`: nothing here needs the text sliced.
                self.pos = number_end(self.bytes(), self.pos)?;
                Some(())
            }
            _ => None,
        }
    }

    /// Any JSON value, validated; returns its text.
    pub(crate) fn value_text(&mut self) -> Option<&'a str> {
        let start = self.pos;
        self.skip_value()?;
        Some(&self.text[start..self.pos])
    }

    /// `true`, `false` or `null` (given as `word`).
    pub fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.bytes().get(self.pos..self.pos + word.len())? != word {
            return None;
        }
        self.pos += word.len();
        Some(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, as serde_json checks it.
    /// Returns the number's text.
    pub fn number(&mut self) -> Option<&'a str> {
        let end = number_end(self.bytes(), self.pos)?;
        let text = &self.text[self.pos..end];
        self.pos = end;
        Some(text)
    }
}

/// The end of the number starting at `i` ([`Lexer::number`]'s grammar), or `None`.
#[inline]
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits_end(b, i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = digits_end(b, start);
        if i == start {
            return None;
        }
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let start = i;
        i = digits_end(b, start);
        if i == start {
            return None;
        }
    }
    Some(i)
}

/// Where a key's scan stops from `end` on (a quote, a backslash or a control byte):
/// the rest of a key longer than 16 bytes, or one near the end of the text. Out of
/// line, so that the usual case inlines small.
#[inline(never)]
fn key_end(b: &[u8], mut end: usize) -> Option<usize> {
    // Eight bytes at a time: keys are short.
    while let Some(w) = b.get(end..end + 8) {
        let m = specials(u64::from_le_bytes(w.try_into().ok()?));
        if m != 0 {
            return Some(end + m.trailing_zeros() as usize / 8);
        }
        end += 8;
    }
    while !matches!(*b.get(end)?, b'"' | b'\\' | ..0x20) {
        end += 1;
    }
    Some(end)
}

/// The end of the run of ASCII digits starting at `i`: 16 bytes at a time with SSE2 (a
/// message's 13-digit `timestamp` is on every line, a cost like 0.013875000000000002
/// in every usage), then eight at a time in a register near the end of the text.
fn digits_end(b: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = b.get(i..i + 16) {
        use std::arch::x86_64::{
            _mm_add_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of the x86_64 baseline, and the unaligned load reads the
        // 16 bytes of `chunk`, borrowed for the duration of the call.
        let digits = unsafe {
            // `0`..`9` (0x30..0x39) become 0x76..0x7F: as signed bytes, the only ones
            // above 0x75 (0x3A..0xB9 wrap to negative, the rest stay at most 0x75).
            let shifted = _mm_add_epi8(_mm_loadu_si128(chunk.as_ptr().cast()), _mm_set1_epi8(0x46));
            _mm_movemask_epi8(_mm_cmpgt_epi8(shifted, _mm_set1_epi8(0x75))) as u32
        };
        if digits != 0xFFFF {
            return i + (!digits).trailing_zeros() as usize;
        }
        i += 16;
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    while let Some(w) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        // Per byte, no carries between bytes: non-zero unless the high nibble is 3,
        // and the low nibble plus 6 overflows into the high nibble when above 9.
        let not_digit =
            ((w & (LO * 0xF0)) ^ (LO * 0x30)) | (((w & (LO * 0x0F)) + LO * 6) & (LO * 0xF0));
        // The high bit of every non-zero byte.
        let flagged = (not_digit | ((not_digit & (LO * 0x7F)) + LO * 0x7F)) & (LO * 0x80);
        if flagged != 0 {
            return i + flagged.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Finds the next quote or backslash. memchr's AVX2 searcher, built once per lexer,
/// saves the runtime dispatch of `memchr2` on every call (there is a call per escape).
pub(crate) struct QuoteOrBackslash {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<memchr::arch::x86_64::avx2::memchr::Two>,
}

impl QuoteOrBackslash {
    pub(crate) fn new() -> Self {
        QuoteOrBackslash {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::Two::new(b'"', b'\\'),
        }
    }

    // Not inlined: the scanning loop then keeps its state in registers across the call.
    #[inline(never)]
    pub(crate) fn find(&self, haystack: &[u8]) -> Option<usize> {
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

/// Bit k set when byte `i + k` is a quote, a backslash or a control character (what
/// ends a key's scan); `None` when fewer than 16 bytes are left.
#[cfg(target_arch = "x86_64")]
fn specials16(b: &[u8], i: usize) -> Option<u32> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let chunk: &[u8; 16] = b.get(i..i + 16)?.try_into().ok()?;
    // SAFETY: SSE2 is part of the x86_64 baseline, and the unaligned load reads the 16
    // bytes of `chunk`, which is borrowed for the duration of the call.
    let (special, printable) = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // At least 0x20: raising the byte to 0x20 leaves it as it is.
        let printable = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x20)), v);
        (
            _mm_movemask_epi8(_mm_or_si128(quote, backslash)),
            _mm_movemask_epi8(printable),
        )
    };
    Some((special as u32) | (!(printable as u32) & 0xFFFF))
}

#[cfg(not(target_arch = "x86_64"))]
fn specials16(_: &[u8], _: usize) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests;
