//! Writing JSON straight into a byte buffer, byte for byte what `serde_json::to_vec`
//! writes for the same value.
//!
//! Design: answers are mostly long strings (the serialized conversation, the prompts),
//! so the escaper finds the next byte that needs an escape sixteen bytes at a time (SSE2
//! compares; a word-wide test for `"`, `\` and control characters on the last few bytes
//! and off x86_64) and copies the run before it in one `extend_from_slice`. serde_json's escaper looks at every byte through a
//! table; this one does a word per step and agrees with it on every input (tested
//! below against serde_json on all byte values and on random text).

/// Appends `s` as a JSON string literal (quotes included), escaped as serde_json does:
/// `\"`, `\\`, `\b \f \n \r \t`, other control characters as `\u00XX` (lowercase hex);
/// everything else, DEL and non-ASCII included, verbatim.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    write_str_contents(out, s);
    out.push(b'"');
}

/// [`write_str`] without the quotes: for a literal written in pieces.
pub fn write_str_contents(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        i = next_escape(bytes, i);
        if i == bytes.len() {
            break;
        }
        out.extend_from_slice(&bytes[start..i]);
        escape_byte(out, bytes[i]);
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Bytes of `w` equal to `b` get their high bit set (exact, no false positives, once
/// combined as below: the classic "has zero byte" test applied per lane).
#[inline(always)]
fn lanes_eq(w: u64, b: u8) -> u64 {
    let x = w ^ (ONES * b as u64);
    // (x - 1) & !x has the high bit of a lane set iff the lane is 0, when lanes do not
    // borrow into each other: computed on 7-bit lanes to keep it exact.
    !(((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// Lanes below 0x20.
#[inline(always)]
fn lanes_control(w: u64) -> u64 {
    // A lane is < 0x20 iff its top three bits are zero: adding 0x60 to the low seven
    // bits carries into bit 7 iff the lane's value (without bit 7) is >= 0x20.
    !(((w & !HIGHS) + ONES * 0x60) | w) & HIGHS
}

/// The position of the first byte at or after `i` that needs an escape (`len` if none).
#[inline]
fn next_escape(bytes: &[u8], mut i: usize) -> usize {
    while let Some(m) = mask16(bytes, i) {
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    while i + 8 <= bytes.len() {
        let w = u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let hit = lanes_eq(w, b'"') | lanes_eq(w, b'\\') | lanes_control(w);
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x20 || b == b'"' || b == b'\\' {
            return i;
        }
        i += 1;
    }
    i
}

/// Bit k set when byte `i + k` needs an escape; `None` when fewer than 16 bytes are left.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn mask16(b: &[u8], i: usize) -> Option<u32> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let chunk: &[u8; 16] = b.get(i..i + 16)?.try_into().ok()?;
    // SAFETY: SSE2 is part of the x86_64 baseline, and the unaligned load reads the 16
    // bytes of `chunk`, which is borrowed for the duration of the call.
    let m = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // v <= 0x1f (unsigned) iff max(v, 0x1f) == 0x1f.
        let low = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    Some(m as u32)
}

#[cfg(not(target_arch = "x86_64"))]
fn mask16(_: &[u8], _: usize) -> Option<u32> {
    None
}

fn escape_byte(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(b >> 4) as usize],
            HEX[(b & 0xf) as usize],
        ]),
    }
}

/// Appends any `Serialize` value as serde_json writes it (for the small and rare
/// parts of an answer: numbers, built messages).
pub fn write_value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing into a Vec cannot fail; a value whose Serialize fails (a map with
    // non-string keys) never reaches here: the answers are built from strings.
    serde_json::to_writer(&mut *out, v).expect("JSON of an answer part");
}

/// An object written field by field: `{`, then `"key":` before each value, `}`.
pub struct Object<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Object<'o> {
    pub fn new(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, first: true }
    }

    /// Writes `"key":` (keys are ASCII names without escapes) and returns the buffer
    /// for the value.
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    pub fn str(&mut self, key: &str, v: &str) {
        write_str(self.key(key), v);
    }

    pub fn value<T: serde::Serialize + ?Sized>(&mut self, key: &str, v: &T) {
        write_value(self.key(key), v);
    }

    pub fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_str(&mut out, s);
        out
    }

    #[test]
    fn every_char_below_256_escapes_as_serde_json_does_at_every_offset() {
        for c in (0u32..256).filter_map(char::from_u32) {
            // Every position of a 16-byte block and of the word-wide tail.
            for pad in 0..40 {
                for tail in [0, 3, 20] {
                    let s = format!("{}{c}{}", "a".repeat(pad), "é".repeat(tail));
                    assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap(), "{c:?} at {pad}");
                }
            }
        }
    }

    #[test]
    fn random_text_escapes_as_serde_json_does() {
        // A fixed-seed xorshift over a small alphabet rich in what needs escaping.
        let alphabet = [
            'a', '"', '\\', '\n', '\u{1}', '\u{1f}', ' ', '\u{7f}', 'é', '😀', '\t',
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..300 {
            let s: String = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn lanes_are_exact_for_every_byte_in_every_lane() {
        for b in 0..=255u8 {
            for lane in 0..8 {
                let mut w = [b'a'; 8];
                w[lane] = b;
                let w = u64::from_le_bytes(w);
                let hit = lanes_eq(w, b'"') | lanes_eq(w, b'\\') | lanes_control(w);
                let expected = b < 0x20 || b == b'"' || b == b'\\';
                assert_eq!(hit != 0, expected, "byte {b:#x} in lane {lane}");
                if expected {
                    assert_eq!(hit.trailing_zeros() / 8, lane as u32);
                }
            }
        }
    }

    #[test]
    fn objects_write_keys_commas_and_values() {
        let mut out = Vec::new();
        let mut o = Object::new(&mut out);
        o.str("a", "x\"y");
        o.value("b", &[1, 2]);
        o.value("c", &None::<u8>);
        o.end();
        assert_eq!(out, br#"{"a":"x\"y","b":[1,2],"c":null}"#);
    }
}
