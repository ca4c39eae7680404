//! Escaped string bodies (the text between the quotes, as sent) read 64 bytes at a time
//! with AVX2: their UTF-16 length, where a prefix of N units ends, and which bytes the
//! transcoder must stop at.
//!
//! Design decisions:
//! * Which backslashes start an escape is found per block without a loop, as simdjson
//!   does: in a run of backslashes every other one starts an escape, carried from one
//!   block to the next (`escapes`). A block of code output has a `\n` every few dozen
//!   bytes; stopping at each (a `memchr` call or a branch per escape) cost more than
//!   the rest of the work.
//! * The UTF-16 length is a sum over blocks: bytes that start a character, plus one for
//!   each four-byte leader, less one for each escaped character and four more for each
//!   `\u` (an escape is one unit: 2 or 6 bytes). Exact for valid bodies (a `\u` has its
//!   four hex digits), which are the only ones a parser hands on.
//! * The transcoder (`json::transcode`) copies a body as sent and stops only where the
//!   answer needs other bytes: for decoded text at `\/` and `\u` (`copy_decoded`: a
//!   64-byte block is stored whole, as `json::write` stores 16), for JavaScript's
//!   literal escaped again at every backslash and quote, which get a backslash before
//!   them (`copy_js`: runs copied 32 bytes at a time). Both leave the last bytes (and
//!   everything, without AVX2) to the plain stop-at-every-backslash loop.
//! * A prefix of N units (tool results cut at 2000) skips whole blocks by their unit
//!   counts to the last clean block start before the cut, then counts as before.
//! * Everything here has a plain path (`json::string`, `json::transcode`) it is tested
//!   against (`escaped/tests.rs`: random bodies, dense and sparse, and one escape at
//!   every byte of a block); without AVX2 (or for short bodies) the plain path runs.
//!   A count eight bytes at a time (SWAR) was tried before and lost to `memchr` on long
//!   runs; this one needs no call per escape and wins on both real sessions.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m256i, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_max_epu8,
    _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
};

use super::write::Stop;

/// The odd bits of a block (simdjson's `ODD_BITS`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;

/// The escaped bytes and the escape-starting backslashes of a block whose backslashes
/// are `bs`, with `carry` (0 or 1) set when its first byte is escaped by the block
/// before; the carry for the next block is the third value.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn escapes(bs: u64, carry: u64) -> (u64, u64, u64) {
    if bs == 0 {
        return (carry, 0, 0);
    }
    // A backslash that is itself escaped starts nothing.
    let potential = bs & !carry;
    // The subtraction runs each series of backslashes into the odd/even pattern: its
    // escape starts are at the series' start, start + 2, …
    let t = ((potential << 1) | ODD).wrapping_sub(potential) ^ ODD;
    let escaped = t ^ (bs | carry);
    let escape = t & bs;
    (escaped, escape, escape >> 63)
}

/// The masks of one 64-byte block.
#[cfg(target_arch = "x86_64")]
struct Masks {
    backslash: u64,
    /// Bytes that are not UTF-8 continuation bytes.
    starts: u64,
    /// Four-byte leaders (astral characters: a second unit).
    astral: u64,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load(b: &[u8; 64], k: usize) -> __m256i {
    // SAFETY: 32 of the 64 bytes of `b` (k is 0 or 1); AVX2 is enabled for callers.
    unsafe { _mm256_loadu_si256(b.as_ptr().add(32 * k).cast()) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn mask(v: __m256i) -> u64 {
    _mm256_movemask_epi8(v) as u32 as u64
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn unit_masks(b: &[u8; 64]) -> Masks {
    let mut m = Masks {
        backslash: 0,
        starts: 0,
        astral: 0,
    };
    for k in 0..2 {
        // SAFETY: AVX2 is enabled for this function; `load` reads within `b`.
        unsafe {
            let v = load(b, k);
            m.backslash |= mask(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8))) << (32 * k);
            if mask(v) == 0 {
                // ASCII (most text): every byte starts a character.
                m.starts |= 0xFFFF_FFFF << (32 * k);
                continue;
            }
            // Signed: continuation bytes 0x80..=0xBF are -128..=-65.
            m.starts |= mask(_mm256_cmpgt_epi8(v, _mm256_set1_epi8(-65))) << (32 * k);
            let f0 = _mm256_set1_epi8(0xF0u8 as i8);
            m.astral |= mask(_mm256_cmpeq_epi8(_mm256_max_epu8(v, f0), v)) << (32 * k);
        }
    }
    m
}

/// Bit k set where byte k of `b` is `c`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn eq_mask(b: &[u8; 64], c: u8) -> u64 {
    // SAFETY: AVX2 is enabled for this function; `load` reads within `b`.
    unsafe {
        let c = _mm256_set1_epi8(c as i8);
        mask(_mm256_cmpeq_epi8(load(b, 0), c)) | mask(_mm256_cmpeq_epi8(load(b, 1), c)) << 32
    }
}

fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// UTF-16 length of the text the valid body `body` decodes to
/// (`json::string::escaped_utf16_len`).
pub(crate) fn escaped_utf16_len(body: &str) -> usize {
    #[cfg(target_arch = "x86_64")]
    if body.len() >= 64 && avx2() {
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
        return unsafe { utf16_len_avx2(body.as_bytes()) };
    }
    super::string::escaped_utf16_len(body)
}

/// Units of one block as counted by [`escaped_utf16_len`] (escapes are counted where
/// their escaped byte is), and the carry for the next block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn block_units(b: &[u8; 64], carry: u64) -> (i64, u64, u64) {
    // SAFETY: AVX2 is enabled for this function.
    let m = unsafe { unit_masks(b) };
    let (escaped, _, next) = escapes(m.backslash, carry);
    // Signed: a block may end inside a `\u` escape whose digits count in the next.
    let units = (m.starts.count_ones() + m.astral.count_ones()) as i64;
    if escaped != 0 {
        // SAFETY: as above.
        let u = unsafe { eq_mask(b, b'u') } & escaped;
        let less = escaped.count_ones() + 4 * u.count_ones();
        return (units - less as i64, next, u);
    }
    (units, next, 0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn utf16_len_avx2(b: &[u8]) -> usize {
    let mut chunks = b.chunks_exact(64);
    let (mut units, mut carry) = (0i64, 0u64);
    for c in &mut chunks {
        // SAFETY: AVX2 and POPCNT are enabled for this function.
        let (u, next, _) = unsafe { block_units(c.try_into().expect("64 bytes"), carry) };
        units += u;
        carry = next;
    }
    // The tail in a zeroed block: each zero byte counts one unit, taken off again.
    let rest = chunks.remainder();
    let mut last = [0u8; 64];
    last[..rest.len()].copy_from_slice(rest);
    // SAFETY: as above.
    let (u, _, _) = unsafe { block_units(&last, carry) };
    (units + u) as usize - (64 - rest.len())
}

/// The UTF-16 length of `JSON.stringify` of the string whose valid body is `body`,
/// quotes left out: JavaScript writes the body's escapes back as they are, except
/// `\/` (one unit less); `Some(None)` when the body has a `\u` escape (what that
/// becomes depends on the character: the caller's general path). `None` without
/// AVX2 or for a short body: the caller's plain count.
pub(crate) fn js_literal_units(body: &str) -> Option<Option<usize>> {
    #[cfg(target_arch = "x86_64")]
    if body.len() >= 64 && avx2() {
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
        return Some(unsafe { js_literal_units_avx2(body.as_bytes()) });
    }
    None
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn js_literal_units_avx2(b: &[u8]) -> Option<usize> {
    let mut chunks = b.chunks_exact(64);
    let (mut units, mut carry) = (0usize, 0u64);
    let rest = chunks.remainder();
    let mut last = [0u8; 64];
    last[..rest.len()].copy_from_slice(rest);
    for c in (&mut chunks)
        .map(|c| c.try_into().expect("64 bytes"))
        .chain([&last])
    {
        // SAFETY: AVX2 and POPCNT are enabled for this function.
        let m = unsafe { unit_masks(c) };
        let (escaped, _, next) = escapes(m.backslash, carry);
        carry = next;
        units += (m.starts.count_ones() + m.astral.count_ones()) as usize;
        if escaped != 0 {
            // SAFETY: as above.
            let (u, slash) = unsafe { (eq_mask(c, b'u'), eq_mask(c, b'/')) };
            if u & escaped != 0 {
                return None;
            }
            units -= (slash & escaped).count_ones() as usize;
        }
    }
    // The zero bytes of the last block counted one unit each.
    Some(units - (64 - rest.len()))
}

/// Where to start counting a prefix of at most `max_units` units of the valid body
/// `b`: a byte offset that starts a character and no escape is open across, with the
/// units before it, at most one block (plus the escape left open) short of the end
/// of the prefix. `(0, 0)` without AVX2.
pub(crate) fn prefix_start(b: &[u8], max_units: usize) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if b.len() >= 128 && avx2() {
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
        return unsafe { prefix_start_avx2(b, max_units) };
    }
    let _ = max_units;
    (0, 0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn prefix_start_avx2(b: &[u8], max_units: usize) -> (usize, usize) {
    let (mut i, mut units, mut carry) = (0usize, 0i64, 0u64);
    let mut start = (0, 0);
    while let Some(c) = b.get(i..i + 64) {
        // SAFETY: AVX2 and POPCNT are enabled for this function.
        let (u, next, uescapes) = unsafe { block_units(c.try_into().expect("64 bytes"), carry) };
        if units + u > max_units as i64 {
            break;
        }
        units += u;
        i += 64;
        carry = next;
        // The next block starts clean unless an escape (or its four hex digits, or a
        // character) runs into it; and not at a backslash, which may be the low half
        // of a surrogate pair (the prefix never splits one).
        let clean = |&c: &u8| (c as i8) >= -64 && c != b'\\';
        if carry == 0 && uescapes >> 60 == 0 && b.get(i).is_some_and(clean) {
            start = (i, units as usize);
        }
    }
    start
}

/// Copies the valid body `bytes` to `out`, calling `stop` where a decode-then-escape
/// writes something other than the bytes as sent: at a backslash that starts an
/// escape other than `\" \\ \b \f \n \r \t`, and at a raw quote or control byte (not
/// valid, handled all the same). `stop` is `json::write::escape_with`'s, and must
/// leave the input at the start of a character outside any escape. Returns how far it
/// got: the caller writes the rest (fewer than 65 bytes) the plain way.
pub(crate) fn copy_decoded(
    out: &mut Vec<u8>,
    bytes: &[u8],
    stop: impl FnMut(&[u8], usize) -> Stop,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= 65 && avx2() {
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
        return unsafe { copy_decoded_avx2(out, bytes, stop) };
    }
    let _ = (out, stop);
    0
}

/// Bytes that may follow a backslash and are written back as they are.
#[cfg(target_arch = "x86_64")]
const KEPT: [u8; 7] = *b"\"\\bfnrt";

/// The backslashes of a block, and its raw quotes and control bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn decode_masks(b: &[u8; 64]) -> (u64, u64) {
    let (mut bs, mut raw) = (0, 0);
    for k in 0..2 {
        // SAFETY: AVX2 is enabled for this function; `load` reads within `b`.
        unsafe {
            let v = load(b, k);
            bs |= mask(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8))) << (32 * k);
            let low = _mm256_set1_epi8(0x1f);
            let ctrl = _mm256_cmpeq_epi8(_mm256_max_epu8(v, low), low);
            let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
            raw |= mask(_mm256_or_si256(ctrl, quote)) << (32 * k);
        }
    }
    (bs, raw)
}

/// Where [`copy_decoded`] stops in a block (its backslashes `bs`, raw quotes and control
/// bytes `raw`, `carry` from the block before; `after` is the byte after the block): the
/// raw quotes and control bytes outside escapes and the first byte of every escape that
/// changes; and the carry for the next block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn decoded_stops(block: &[u8; 64], bs: u64, raw: u64, carry: u64, after: u8) -> (u64, u64) {
    let (escaped, next) = if bs | carry == 0 {
        (0, 0)
    } else {
        let (escaped, _, next) = escapes(bs, carry);
        (escaped, next)
    };
    let mut stops = raw & !escaped;
    if escaped | next != 0 {
        // SAFETY: AVX2 is enabled for this function.
        let kept = unsafe { kept_mask(block) };
        // An escape starts one byte before its escaped byte; the escaped byte of an
        // escape starting at byte 63 is the byte after the block.
        stops |= (escaped & !kept) >> 1;
        if next != 0 && !KEPT.contains(&after) {
            stops |= 1 << 63;
        }
    }
    (stops, next)
}

/// Bytes of the block that are in [`KEPT`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn kept_mask(b: &[u8; 64]) -> u64 {
    let mut m = 0;
    for k in 0..2 {
        // SAFETY: AVX2 is enabled for this function; `load` reads within `b`.
        unsafe {
            let v = load(b, k);
            let mut any = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(KEPT[0] as i8));
            for c in &KEPT[1..] {
                any = _mm256_or_si256(any, _mm256_cmpeq_epi8(v, _mm256_set1_epi8(*c as i8)));
            }
            m |= mask(any) << (32 * k);
        }
    }
    m
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn copy_decoded_avx2(
    out: &mut Vec<u8>,
    bytes: &[u8],
    mut stop: impl FnMut(&[u8], usize) -> Stop,
) -> usize {
    use super::write::ESCAPE_WINDOW;
    let (mut i, mut carry) = (0usize, 0u64);
    // Blocks start before `last`, so the byte after each block exists.
    let last = bytes.len() - 64;
    while i < last {
        let end = last.min(i + ESCAPE_WINDOW);
        // As `escape_with`: a stop writes at most 6 bytes per byte taken (up to 72
        // from one before `end`), and each block is stored whole (64 bytes at w).
        out.reserve((end - i) * 6 + 72 + 64);
        let base = out.as_mut_ptr();
        let mut w = out.len();
        // Invariant: w <= len0 + 6 * (i - i0) and i < end while storing.
        while i < end {
            let block: &[u8; 64] = bytes[i..i + 64].try_into().expect("64 bytes");
            // SAFETY: the block is 64 readable bytes; w + 64 is within the capacity
            // reserved above (invariant).
            unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), base.add(w), 64) };
            // SAFETY: AVX2 is enabled for this function.
            let (bs, raw) = unsafe { decode_masks(block) };
            // SAFETY: AVX2 is enabled for this function.
            let (stops, next) = unsafe { decoded_stops(block, bs, raw, carry, bytes[i + 64]) };
            if stops == 0 {
                i += 64;
                w += 64;
                carry = next;
                continue;
            }
            let k = stops.trailing_zeros() as usize;
            i += k;
            w += k;
            let (buf, n, taken) = stop(bytes, i);
            debug_assert!((1..=12).contains(&taken) && n <= 6 * taken && n <= 8);
            // SAFETY: 8 bytes at w are within the reserved capacity (invariant).
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), base.add(w), 8) };
            w += n;
            i += taken;
            carry = 0;
        }
        // SAFETY: bytes up to w were written above; w is within the capacity.
        unsafe { out.set_len(w) };
    }
    if carry != 0 {
        // The last block ended on a backslash whose escape runs on: leave both to the
        // caller.
        out.pop();
        i -= 1;
    }
    i
}

/// Writes the valid body `bytes` to `out` as JavaScript's literal of it, escaped once
/// more (`transcode::write_js_literal_escaped`). JavaScript writes an escape back as
/// it is except `\/` and `\uXXXX`, so the output is the body escaped as text: a
/// backslash before every backslash and quote, the runs between them copied as they
/// are. `stop` (`transcode::js_stop`) writes what the rest become: the escapes that
/// [`copy_decoded`] stops at. Returns how far it got (at the start of a character
/// outside any escape): the caller writes the rest (fewer than 96 bytes) the plain
/// way.
pub(crate) fn copy_js(
    out: &mut Vec<u8>,
    bytes: &[u8],
    stop: impl FnMut(&[u8], usize) -> Stop,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= 96 && avx2() {
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
        return unsafe { copy_js_avx2(out, bytes, stop) };
    }
    let _ = (out, stop);
    0
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn copy_js_avx2(
    out: &mut Vec<u8>,
    bytes: &[u8],
    mut stop: impl FnMut(&[u8], usize) -> Stop,
) -> usize {
    // Input consumed up to `i`; blocks at `bb`, each followed by 32 readable bytes (a
    // run copy may read 32 bytes from any offset of the block).
    let (mut i, mut bb, mut carry) = (0usize, 0usize, 0u64);
    while bb + 96 <= bytes.len() {
        // One block consumes input up to bb + 64 + 11 (a stop at its last byte takes
        // up to 12): at most 6 bytes out per byte, and a 32-byte copy may overrun.
        out.reserve(76 * 6 + 32);
        let base = out.as_mut_ptr();
        let mut w = out.len();
        let block: &[u8; 64] = bytes[bb..bb + 64].try_into().expect("64 bytes");
        // SAFETY: AVX2 is enabled for this function.
        let (bs, raw) = unsafe { decode_masks(block) };
        // What `copy_decoded` stops at: escapes that change, raw quotes and controls.
        // SAFETY: AVX2 is enabled for this function.
        let (special, next) = unsafe { decoded_stops(block, bs, raw, carry, bytes[bb + 64]) };
        carry = next;
        // Every other backslash or quote gets a backslash before it.
        let mut stops = bs | raw | special;
        while stops != 0 {
            let k = stops.trailing_zeros();
            let p = bb + k as usize;
            stops &= stops - 1;
            // Taken by the stop before (a `\u` escape's second half, an escaped
            // control byte).
            if p < i {
                continue;
            }
            // SAFETY: the run `i..p` lies in the block, with 32 readable bytes from
            // `i`; the destination is within the capacity reserved above.
            unsafe { copy_run(bytes, i, p, base.add(w)) };
            w += p - i;
            if special >> k & 1 == 0 {
                // SAFETY: within the capacity reserved above.
                unsafe { *base.add(w) = b'\\' };
                w += 1;
                // The byte itself starts the next run.
                i = p;
                continue;
            }
            let (buf, n, taken) = stop(bytes, p);
            debug_assert!((1..=12).contains(&taken) && n <= 6 * taken && n <= 8);
            // SAFETY: within the capacity reserved above.
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), base.add(w), 8) };
            w += n;
            i = p + taken;
        }
        bb += 64;
        if i < bb {
            // SAFETY: as above.
            unsafe { copy_run(bytes, i, bb, base.add(w)) };
            w += bb - i;
            i = bb;
        }
        // SAFETY: bytes up to w were written above; w is within the capacity.
        unsafe { out.set_len(w) };
    }
    if carry != 0 && i == bb {
        // The last block ended on a backslash whose escape runs on (written as `\\`
        // and itself): leave both to the caller.
        out.truncate(out.len() - 2);
        i -= 1;
    }
    i
}

/// Copies `bytes[from..to]` to `dst`: one 32-byte copy (which may write up to 31
/// bytes past the run), and a `memcpy` for the rest of a longer run. (A loop of
/// 32-byte copies compiles to a `memcpy` call for every run: runs between escapes are
/// a dozen bytes on average.)
///
/// # Safety
/// `bytes` must have 32 readable bytes from `from`, and `dst` room for
/// `max(to - from, 32)` bytes.
#[inline(always)]
unsafe fn copy_run(bytes: &[u8], from: usize, to: usize, dst: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        let src = bytes.as_ptr().add(from);
        std::ptr::copy_nonoverlapping(src, dst, 32);
        if to - from > 32 {
            std::ptr::copy_nonoverlapping(src.add(32), dst.add(32), to - from - 32);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
