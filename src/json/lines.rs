//! The lines of a JSONL text, each with whether it holds a control byte.
//!
//! The strict lexer needs to know whether a line holds any byte below 0x20 (then every
//! string of it is checked for one; see [`Lexer::strict_hinted`](super::Lexer)). The
//! line break is itself such a byte, so one pass finds both: the first byte below 0x20
//! from the line's start on is, in a session file, nearly always the `\n` that ends the
//! line, which says at once where the line ends and that it holds no control byte. Only
//! a line with a tab, a `\r` or a raw control byte in it (rare: JSON writers escape
//! them) is searched once more, for its `\n`.
//!
//! This replaced two passes over every byte (`memchr` for the line break, then the
//! control-byte pass of each line); the one pass reads 64 bytes per step with AVX2.

/// The end of the line starting at `start` (the index of its `\n`, or the length of
/// `b`) and whether the line, without its `\n` and without one `\r` just before it,
/// holds a byte below 0x20. (A last line without a `\n` counts its final `\r`: the
/// answer is then `true` where `false` would do, which only costs the check.)
pub fn line_end(b: &[u8], start: usize) -> (usize, bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the answer is cached).
        return unsafe { line_end_avx2(b, start) };
    }
    line_end_portable(b, start)
}

fn line_end_portable(b: &[u8], start: usize) -> (usize, bool) {
    match b
        .get(start..)
        .and_then(|r| r.iter().position(|&c| c < 0x20))
    {
        Some(k) => after_first_control(b, start + k),
        None => (b.len(), false),
    }
}

/// The line's end given its first byte below 0x20, at `at`.
#[inline]
fn after_first_control(b: &[u8], at: usize) -> (usize, bool) {
    match b[at] {
        b'\n' => (at, false),
        // CRLF: the `\r` is cut off with the line break.
        b'\r' if b.get(at + 1) == Some(&b'\n') => (at + 1, false),
        _ => (
            memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |k| at + k),
            true,
        ),
    }
}

/// [`line_end`] with AVX2: the minimum of 64 bytes per step, one compare.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn line_end_avx2(b: &[u8], start: usize) -> (usize, bool) {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_min_epu8,
        _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    // Bit k set when byte k of `v` is below 0x20 (raising it to 0x20 changes it).
    #[inline(always)]
    unsafe fn below(v: __m256i) -> u32 {
        // SAFETY: register operations only; AVX2 is enabled where this is inlined.
        unsafe {
            let raised = _mm256_max_epu8(v, _mm256_set1_epi8(0x20));
            !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(raised, v)) as u32)
        }
    }
    let n = b.len();
    let p = b.as_ptr();
    let mut i = start;
    while i + 64 <= n {
        // SAFETY: AVX2 is enabled for this function (its callers check the CPU); both
        // loads read inside `b`, as `i + 64 <= n`.
        let found = unsafe {
            let v0 = _mm256_loadu_si256(p.add(i).cast());
            let v1 = _mm256_loadu_si256(p.add(i + 32).cast());
            match below(_mm256_min_epu8(v0, v1)) {
                0 => None,
                _ => Some(match below(v0) {
                    0 => i + 32 + below(v1).trailing_zeros() as usize,
                    m => i + m.trailing_zeros() as usize,
                }),
            }
        };
        if let Some(at) = found {
            return after_first_control(b, at);
        }
        i += 64;
    }
    if n >= 32 && i < n {
        // The last bytes: 32-byte loads, the final one ending at the end of `b` (it may
        // reread bytes before `i`; those bits are masked off).
        while i + 32 < n {
            // SAFETY: as above; the load reads bytes `i..i + 32`, inside `b`.
            let m = unsafe { below(_mm256_loadu_si256(p.add(i).cast())) };
            if m != 0 {
                return after_first_control(b, i + m.trailing_zeros() as usize);
            }
            i += 32;
        }
        let from = n - 32;
        // SAFETY: as above; the load reads bytes `n - 32..n`, inside `b` (`n >= 32`).
        let m = unsafe { below(_mm256_loadu_si256(p.add(from).cast())) } >> (i - from);
        return match m {
            0 => (n, false),
            m => after_first_control(b, i + m.trailing_zeros() as usize),
        };
    }
    line_end_portable(b, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain reading: memchr for the line break, then any control byte in the line
    /// as the session parser strips it (its `\n` and one `\r` before it).
    fn reference(b: &[u8], start: usize) -> (usize, bool) {
        let end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |k| start + k);
        let line = &b[start..end];
        let line = if end < b.len() {
            line.strip_suffix(b"\r").unwrap_or(line)
        } else {
            line
        };
        (end, line.iter().any(|&c| c < 0x20))
    }

    fn check(b: &[u8]) {
        let mut start = 0;
        loop {
            let want = reference(b, start);
            for (got, how) in [
                (line_end(b, start), "dispatched"),
                (line_end_portable(b, start), "portable"),
            ] {
                assert_eq!(got, want, "{how}: from {start} in {b:?}");
            }
            if want.0 == b.len() {
                break;
            }
            start = want.0 + 1;
        }
    }

    #[test]
    fn lines_end_and_control_bytes_are_found_as_memchr_and_a_byte_pass_find_them() {
        // Every length and every position of a line break, of a CRLF, of a tab and of a
        // raw control byte, around the 32- and 64-byte steps and the overlapping tail.
        for len in 0..200 {
            let base = vec![b'a'; len];
            check(&base);
            for at in 0..len {
                for (k, insert) in [&b"\n"[..], b"\r\n", b"\t", b"\x01", b"\r", b"\x1f\n"]
                    .iter()
                    .enumerate()
                {
                    if k > 1 && at % 3 != 0 {
                        continue;
                    }
                    let mut t = base.clone();
                    t.splice(at..at, insert.iter().copied());
                    check(&t);
                }
            }
        }
        // Random texts: lines of random lengths, bytes mostly printable (multi-byte
        // UTF-8 among them), a few control bytes and line breaks.
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..3000 {
            let len = rng.usize(0..400);
            let t: Vec<u8> = (0..len)
                .map(|_| match rng.u8(0..100) {
                    0..=2 => b'\n',
                    3 => b'\r',
                    4 => b'\t',
                    5 => rng.u8(0..0x20),
                    6..=20 => rng.u8(0x80..=0xFF),
                    _ => rng.u8(0x20..0x7F),
                })
                .collect();
            check(&t);
        }
    }
}
