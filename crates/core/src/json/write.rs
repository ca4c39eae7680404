//! Writing JSON straight into a byte buffer, byte for byte what `serde_json::to_vec`
//! writes for the same value.
//!
//! Design: answers are mostly long strings (the serialized conversation, the prompts),
//! so the escaper looks at sixteen bytes at a time (SSE2 compares for `"`, `\` and
//! control characters; byte-wise on the last few bytes and off x86_64), storing each
//! block whole before advancing past the run that precedes the first byte to escape:
//! no `memcpy` call per run. serde_json's escaper looks at every byte through a table;
//! this one agrees with it on every input (tested below against serde_json on all byte
//! values at every offset and on random text).

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
    escape_with(out, s.as_bytes(), |b, i| {
        let (escape, n) = escape_of(b[i]);
        (escape_buf(escape), n, 1)
    });
}

/// The input bytes [`escape_with`] reserves room for at a time.
pub(crate) const ESCAPE_WINDOW: usize = 4096;

/// The most room one reservation of [`escape_with`] asks for beyond what it writes: a
/// buffer sized to its final length plus this never grows (and never doubles).
/// (64: `json::escaped` stores 64-byte blocks whole.)
pub const ESCAPE_HEADROOM: usize = ESCAPE_WINDOW * 6 + 72 + 64;

/// What a stop writes: up to 8 bytes, how many, and how many input bytes it took.
pub(crate) type Stop = ([u8; 8], usize, usize);

pub(crate) fn escape_buf(e: [u8; 6]) -> [u8; 8] {
    [e[0], e[1], e[2], e[3], e[4], e[5], 0, 0]
}

/// Copies `bytes` to `out`, calling `stop` at every `"`, `\` and control byte (with
/// the input from there on and its offset) for what to write instead. A stop may take
/// up to 12 bytes and must write at most 6 bytes per byte it takes (the reservation
/// below counts on it). Each 16-byte block is stored whole before it is looked at, so
/// a run costs no `memcpy` call and a stop a few instructions (text has an escape
/// every few dozen bytes: a call per run cost more than the scan).
#[inline(always)]
pub(crate) fn escape_with(
    out: &mut Vec<u8>,
    bytes: &[u8],
    mut stop: impl FnMut(&[u8], usize) -> Stop,
) {
    let mut i = 0;
    while i < bytes.len() {
        // Windows bound what one reservation asks for beyond the answer's real size.
        let end = bytes.len().min(i + ESCAPE_WINDOW);
        // Worst case: every byte becomes six; a stop that starts before `end` takes up
        // to 12 bytes (so writes up to 72); 16 more for a block stored past the end.
        out.reserve((end - i) * 6 + 72 + 16);
        let base = out.as_mut_ptr();
        let mut w = out.len();
        // Invariant: w <= len0 + 6 * (i - i0), and i < end + 12, so every store below
        // (at most 16 bytes at w) ends within the reserved capacity.
        while i < end {
            match mask16(bytes, i) {
                Some(m) => {
                    // SAFETY: `mask16` read bytes[i..i + 16]; the destination is within
                    // the capacity reserved above (invariant).
                    unsafe {
                        std::ptr::copy_nonoverlapping(bytes.as_ptr().add(i), base.add(w), 16)
                    };
                    if m == 0 {
                        i += 16;
                        w += 16;
                        continue;
                    }
                    let k = m.trailing_zeros() as usize;
                    i += k;
                    w += k;
                }
                None => {
                    let b = bytes[i];
                    if !(b < 0x20 || b == b'"' || b == b'\\') {
                        // SAFETY: within the reserved capacity (invariant).
                        unsafe { *base.add(w) = b };
                        i += 1;
                        w += 1;
                        continue;
                    }
                }
            }
            let (buf, n, taken) = stop(bytes, i);
            debug_assert!((1..=12).contains(&taken) && n <= 6 * taken && n <= 8);
            // SAFETY: 8 bytes at w are within the reserved capacity (invariant).
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), base.add(w), 8) };
            w += n;
            i += taken;
        }
        // SAFETY: bytes up to w were written above; w is within the capacity.
        unsafe { out.set_len(w) };
    }
}

/// The escape of a byte that needs one, padded to six bytes, and its length.
#[inline]
pub(crate) fn escape_of(b: u8) -> ([u8; 6], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = |c: u8| ([b'\\', c, 0, 0, 0, 0], 2);
    match b {
        b'"' => short(b'"'),
        b'\\' => short(b'\\'),
        b'\n' => short(b'n'),
        b'\r' => short(b'r'),
        b'\t' => short(b't'),
        0x08 => short(b'b'),
        0x0c => short(b'f'),
        _ => (
            [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ],
            6,
        ),
    }
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

/// Appends any `Serialize` value as serde_json writes it (for the small and rare
/// parts of an answer: numbers, built messages).
pub fn write_value<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing into a Vec cannot fail; a value whose Serialize fails (a map with
    // non-string keys) never reaches here: the answers are built from strings.
    serde_json::to_writer(&mut *out, v).expect("JSON of an answer part");
}

/// A number as JavaScript's `JSON.stringify` writes it: an integral value without a
/// fraction (`48211`, not `48211.0`), a non-finite one as `null`. Usable as
/// `#[serde(serialize_with = "js_number")]`.
pub fn js_number<S: serde::Serializer>(f: &f64, s: S) -> Result<S::Ok, S::Error> {
    let f = *f;
    // Integral values are exact as i64 up to 2^53, where f64 stops counting by ones.
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        s.serialize_i64(f as i64)
    } else if f.is_finite() {
        s.serialize_f64(f)
    } else {
        s.serialize_unit()
    }
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
    fn long_texts_across_pieces_escape_as_serde_json_does() {
        let mut rng = fastrand::Rng::with_seed(5);
        for _ in 0..20 {
            let s: String = (0..rng.usize(4000..20_000))
                .map(|_| match rng.u8(..) {
                    0..=5 => '\n',
                    6..=7 => '"',
                    8 => '\u{2}',
                    9 => 'é',
                    _ => 'x',
                })
                .collect();
            let mut out = b"prefix".to_vec();
            write_str(&mut out, &s);
            assert_eq!(&out[6..], &serde_json::to_vec(&s).unwrap()[..]);
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
