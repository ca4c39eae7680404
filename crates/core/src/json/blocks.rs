//! The end of a string body found 64 bytes at a time, escapes validated from bit masks.
//!
//! Session texts (tool output, code) carry an escape every few dozen bytes. A scanner
//! that stops at each backslash pays a load and a few branches per escape; here one
//! step loads 64 bytes, takes the masks of quotes and backslashes (SSE2), and finds the
//! escaped bytes of the whole block with simdjson's carry trick (a run of backslashes
//! escapes the byte after it when its length is odd). The first quote that is not
//! escaped ends the string; the escaped bytes before it are checked one by one from
//! the mask (`"\/bfnrt`, or `u` and four hex digits), without rescanning the text.
//!
//! The caller ([`Lexer::string`](super::Lexer::string)) scans short strings itself and
//! finishes the last 63 bytes of a text byte-wise ([`Scan::Tail`]).

/// What [`scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The closing quote is at `quote`; `escaped`: the body holds escapes.
    End { quote: usize, escaped: bool },
    /// Fewer than 64 bytes are left: continue byte-wise at `at` (never inside an
    /// escape: at the backslash of one that straddles the last block).
    Tail { at: usize, escaped: bool },
    /// A bad escape (or, unless `surrogates`, a surrogate escape): not for this lexer.
    Invalid,
}

const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;

const SIMPLE: u8 = 1;
const UNICODE: u8 = 2;

/// What may follow a backslash: `SIMPLE` for `"\/bfnrt`, `UNICODE` for `u`, 0 otherwise.
static ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    let simple = *b"\"\\/bfnrt";
    let mut k = 0;
    while k < simple.len() {
        t[simple[k] as usize] = SIMPLE;
        k += 1;
    }
    t[b'u' as usize] = UNICODE;
    t
};

/// The body of a string starting at `start` (just after its opening quote).
pub(crate) fn scan(b: &[u8], start: usize, surrogates: bool) -> Scan {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the answer is cached).
        return unsafe { scan_avx2(b, start, surrogates) };
    }
    scan_with(b, start, surrogates, masks64, escapes_ok_bytewise)
}

/// [`scan`] with 32-byte compares: half the instructions per block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(b: &[u8], start: usize, surrogates: bool) -> Scan {
    scan_with(
        b,
        start,
        surrogates,
        |b, i| {
            // SAFETY: this closure only runs inside `scan_avx2`, on a CPU with AVX2.
            unsafe { masks64_avx2(b, i) }
        },
        |b, i, e, surrogates| {
            // Two escapes or fewer left: one table lookup each beats the block's masks.
            let rest = e & e.wrapping_sub(1);
            if rest & rest.wrapping_sub(1) == 0 {
                return escapes_ok_bytewise(b, i, e, surrogates);
            }
            // SAFETY: as above, inside `scan_avx2` on a CPU with AVX2.
            unsafe { escapes_ok_avx2(b, i, e, surrogates) }
        },
    )
}

/// The escaped bytes `e` (bit k: byte `i + k`) are what may follow a backslash.
#[inline(always)]
fn escapes_ok_bytewise(b: &[u8], i: usize, mut e: u64, surrogates: bool) -> bool {
    while e != 0 {
        let at = i + e.trailing_zeros() as usize;
        e &= e - 1;
        // A table, not a `match`: the match compiles to a jump table whose indirect
        // branch mispredicts on the mix of escapes in real text.
        match ESCAPES[b[at] as usize] {
            SIMPLE => {}
            UNICODE if hex4_ok(b, at + 1, surrogates) => {}
            _ => return false,
        }
    }
    true
}

/// [`escapes_ok_bytewise`] for a block with many escapes (tool output: a `\n` or `\"`
/// every dozen bytes). The escaped quotes and backslashes are already known good (the
/// caller takes them out with its own masks); of the rest, the `n` and `t` bytes (most
/// escapes in code and tool output) are found with two compares per 32 bytes, and only
/// what is left (`/bfr`, `\u` and anything bad) is looked up one by one.
///
/// Replaced a classification of every byte with two nibble-table shuffles: ~30
/// instructions per block against ~13 here.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn escapes_ok_avx2(b: &[u8], i: usize, e: u64, surrogates: bool) -> bool {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8,
    };
    let Some(chunk) = b.get(i..i + 64) else {
        return escapes_ok_bytewise(b, i, e, surrogates);
    };
    let mut common = 0u64;
    for k in 0..2 {
        // SAFETY: AVX2 is enabled for this function (its callers check the CPU); the
        // load reads 32 of the 64 bytes of `chunk`, borrowed for the duration of the call.
        let m = unsafe {
            let v = _mm256_loadu_si256(chunk.as_ptr().add(32 * k).cast());
            let n = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'n' as i8));
            let t = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b't' as i8));
            _mm256_movemask_epi8(_mm256_or_si256(n, t))
        };
        common |= u64::from(m as u32) << (32 * k);
    }
    escapes_ok_bytewise(b, i, e & !common, surrogates)
}

#[inline(always)]
fn scan_with(
    b: &[u8],
    start: usize,
    surrogates: bool,
    masks64: impl Fn(&[u8], usize) -> Option<(u64, u64)>,
    escapes_ok: impl Fn(&[u8], usize, u64, bool) -> bool,
) -> Scan {
    let mut i = start;
    let mut escaped_any = false;
    // 1 when the byte at `i` is escaped by a backslash that ended the previous block.
    let mut carry = 0u64;
    while let Some((quotes, backslashes)) = masks64(b, i) {
        let escaped = if backslashes == 0 {
            let e = carry;
            carry = 0;
            e
        } else {
            let (escaped, next) = escaped_bits(backslashes, carry);
            carry = next;
            escaped
        };
        let ends = quotes & !escaped;
        // The escaped bytes before the closing quote (all of them without one).
        let before = if ends == 0 {
            u64::MAX
        } else {
            (1u64 << ends.trailing_zeros()) - 1
        };
        let e = escaped & before;
        if e != 0 {
            escaped_any = true;
            // Escaped quotes and backslashes are valid escapes: known from the masks.
            if !escapes_ok(b, i, e & !(quotes | backslashes), surrogates) {
                return Scan::Invalid;
            }
        }
        if ends != 0 {
            return Scan::End {
                quote: i + ends.trailing_zeros() as usize,
                escaped: escaped_any,
            };
        }
        i += 64;
    }
    Scan::Tail {
        at: i - carry as usize,
        escaped: escaped_any,
    }
}

/// Four hex digits at `at`, and (unless `surrogates`) not a surrogate: the lexer's rule
/// for `\u` escapes.
fn hex4_ok(b: &[u8], at: usize, surrogates: bool) -> bool {
    let Some(h) = b.get(at..at + 4) else {
        return false;
    };
    // \uD800..\uDFFF: `d`/`D` then 8..F.
    let surrogate = matches!(h[0], b'd' | b'D') && !matches!(h[1], b'0'..=b'7');
    h.iter().all(u8::is_ascii_hexdigit) && (surrogates || !surrogate)
}

/// simdjson's escape scanner: the bytes escaped by a backslash (`carry`: the first
/// byte is, by the previous block's last backslash), and the carry into the next block.
#[inline(always)]
fn escaped_bits(backslashes: u64, carry: u64) -> (u64, u64) {
    let potential = backslashes & !carry;
    let maybe_escaped = potential << 1;
    let codes = ((maybe_escaped | ODD_BITS).wrapping_sub(potential)) ^ ODD_BITS;
    let escaped = codes ^ (backslashes | carry);
    let escape = codes & backslashes;
    (escaped, escape >> 63)
}

/// Quote and backslash masks of the 64 bytes at `i` (bit k: byte `i + k`), or `None`
/// when fewer are left.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks64(b: &[u8], i: usize) -> Option<(u64, u64)> {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    let chunk: &[u8; 64] = b.get(i..i + 64)?.try_into().ok()?;
    let (mut q, mut s) = (0u64, 0u64);
    for k in 0..4 {
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned load reads 16 of
        // the 64 bytes of `chunk`, borrowed for the duration of the call.
        let (qm, sm) = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast());
            (
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8))),
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8))),
            )
        };
        q |= (qm as u16 as u64) << (16 * k);
        s |= (sm as u16 as u64) << (16 * k);
    }
    Some((q, s))
}

/// [`masks64`] with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn masks64_avx2(b: &[u8], i: usize) -> Option<(u64, u64)> {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    let chunk: &[u8; 64] = b.get(i..i + 64)?.try_into().ok()?;
    let (mut q, mut s) = (0u64, 0u64);
    for k in 0..2 {
        // SAFETY: AVX2 is enabled for this function (its callers check the CPU); the
        // unaligned load reads 32 of the 64 bytes of `chunk`, borrowed for the call.
        let (qm, sm) = unsafe {
            let v = _mm256_loadu_si256(chunk.as_ptr().add(32 * k).cast());
            (
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8))),
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8))),
            )
        };
        q |= (qm as u32 as u64) << (32 * k);
        s |= (sm as u32 as u64) << (32 * k);
    }
    Some((q, s))
}

#[cfg(not(target_arch = "x86_64"))]
fn masks64(b: &[u8], i: usize) -> Option<(u64, u64)> {
    let chunk = b.get(i..i + 64)?;
    let (mut q, mut s) = (0u64, 0u64);
    for (k, &c) in chunk.iter().enumerate() {
        q |= ((c == b'"') as u64) << k;
        s |= ((c == b'\\') as u64) << k;
    }
    Some((q, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-wise reading: where the body ends, whether it has escapes, or invalid.
    fn reference(b: &[u8], start: usize, surrogates: bool) -> Option<(usize, bool)> {
        let mut i = start;
        let mut escaped = false;
        loop {
            match *b.get(i)? {
                b'"' => return Some((i, escaped)),
                b'\\' => {
                    escaped = true;
                    match *b.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' if hex4_ok(b, i + 2, surrogates) => i += 6,
                        _ => return None,
                    }
                }
                _ => i += 1,
            }
        }
    }

    #[test]
    fn blocks_agree_with_the_byte_wise_reading() {
        let pieces: [&[u8]; 21] = [
            b"a", b"ab", b"\\", b"\\\\", b"\\\"", b"\"", b"\\n", b"\\u00e9", b"\\ud800", b"\\uZZ",
            b"\\x", b"   ", b"\\\\\\", b"\\u12", b"\\t", b"\\r", b"\\/", b"\\b", b"\\f", b"\\N",
            b"\\\\n",
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        for round in 0..20_000 {
            let mut text = Vec::new();
            let len = rng.usize(0..300);
            while text.len() < len {
                // Mostly plain text, so strings get long enough for whole blocks.
                if rng.u8(..) < 200 {
                    text.push(b'x');
                } else {
                    text.extend_from_slice(pieces[rng.usize(..pieces.len())]);
                }
            }
            text.extend_from_slice(b"\"");
            for surrogates in [false, true] {
                let expected = reference(&text, 0, surrogates);
                let got = match scan(&text, 0, surrogates) {
                    Scan::End { quote, escaped } => Some((quote, escaped)),
                    Scan::Invalid => None,
                    Scan::Tail { at, escaped } => {
                        // Blocks end on an escape boundary: the rest reads the same.
                        assert!(at <= text.len(), "round {round}");
                        reference(&text, at, surrogates).map(|(q, e)| (q, e || escaped))
                    }
                };
                assert_eq!(
                    got,
                    expected,
                    "round {round}: {}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_and_sse2_masks_agree() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return; // nothing to compare on this CPU: `scan` uses SSE2 alone
        }
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..2000 {
            let text: Vec<u8> = (0..64)
                .map(|_| [b'"', b'\\', b'a', 0xff][rng.usize(..4)])
                .collect();
            // SAFETY: AVX2 checked above.
            assert_eq!(unsafe { masks64_avx2(&text, 0) }, masks64(&text, 0));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn block_escape_checks_agree_with_the_table() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return; // `scan` checks escapes one by one on this CPU
        }
        let check = |text: &[u8], e: u64| {
            for surrogates in [false, true] {
                let bytewise = escapes_ok_bytewise(text, 0, e, surrogates);
                // SAFETY: AVX2 checked above.
                let masked = unsafe { escapes_ok_avx2(text, 0, e, surrogates) };
                assert_eq!(
                    masked,
                    bytewise,
                    "{e:x} {:?}",
                    String::from_utf8_lossy(text)
                );
            }
        };
        // Every byte value as an escape, at every position, among valid ones.
        for byte in 0..=255u8 {
            for at in 0..64 {
                let mut text = b"n\"/bfnrtu0041".repeat(6);
                text[at] = byte;
                check(
                    &text,
                    1 << at | 1 << ((at + 7) % 64) | 1 << ((at + 19) % 64),
                );
            }
        }
        let mut rng = fastrand::Rng::with_seed(13);
        let mut valid = 0;
        for _ in 0..20_000 {
            let text: Vec<u8> = (0..72)
                .map(|_| match rng.u8(..4) {
                    0 => rng.u8(..),
                    1 => b"dD8aeEfF09"[rng.usize(..10)],
                    _ => b"\"\\/bfnrtu"[rng.usize(..9)],
                })
                .collect();
            let e = rng.u64(..) & rng.u64(..) & rng.u64(..) & rng.u64(..);
            valid += usize::from(escapes_ok_bytewise(&text, 0, e, true));
            check(&text, e);
        }
        assert!(valid > 100, "{valid}");
    }

    #[test]
    fn runs_of_backslashes_across_block_ends() {
        for run in 0..6 {
            for at in 55..70 {
                let mut text = vec![b'x'; at];
                text.extend(std::iter::repeat_n(b'\\', run));
                text.extend_from_slice(b"\"tail that is long enough to fill another block....\"");
                let expected = reference(&text, 0, false);
                let got = match scan(&text, 0, false) {
                    Scan::End { quote, escaped } => Some((quote, escaped)),
                    Scan::Invalid => None,
                    Scan::Tail { at, escaped } => {
                        reference(&text, at, false).map(|(q, e)| (q, e || escaped))
                    }
                };
                assert_eq!(got, expected, "run {run} at {at}");
            }
        }
    }
}
