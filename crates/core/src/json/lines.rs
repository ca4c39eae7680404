//! The lines of a JSONL text, each with whether it holds a control byte and whether it
//! is plain ASCII.
//!
//! The strict lexer needs to know whether a line holds any byte below 0x20 (then every
//! string of it is checked for one; see [`Lexer::strict_hinted`](super::Lexer)). The
//! line break is itself such a byte, so one pass finds both: the first byte below 0x20
//! from the line's start on is, in a session file, nearly always the `\n` that ends the
//! line, which says at once where the line ends and that it holds no control byte. Only
//! a line with a tab, a `\r` or a raw control byte in it (rare: JSON writers escape
//! them) is searched once more, for its `\n`.
//!
//! The same pass ORs the bytes together: a line without a byte above 0x7F is ASCII,
//! hence UTF-8, and the body arriving in pieces (`pipeline::arriving`) validates only
//! the other lines as UTF-8 (on the 2.4 MB session, 76 lines of 1004).
//!
//! This replaced three passes over every byte (UTF-8 validation, `memchr` for the line
//! break, then the control-byte pass of each line); the one pass reads 128 bytes per
//! step with AVX2.

/// What [`line_end`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineEnd {
    /// The index of the line's `\n`, or the length of the text.
    pub end: usize,
    /// The line, without its `\n` and without one `\r` just before it, holds a byte
    /// below 0x20. Exact when `false`; may be `true` for a last line (no `\n`) whose
    /// final byte is a `\r`, which only costs the check.
    pub controls: bool,
    /// Every byte of the line is below 0x80. Exact when `true`; may be `false` for an
    /// ASCII line (bytes of the next line were looked at too), which only costs a
    /// UTF-8 validation.
    pub ascii: bool,
}

/// The line starting at `start` of `b`.
pub fn line_end(b: &[u8], start: usize) -> LineEnd {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the answer is cached).
        return unsafe { line_end_avx2(b, start) };
    }
    line_end_portable(b, start)
}

fn line_end_portable(b: &[u8], start: usize) -> LineEnd {
    let rest = b.get(start..).unwrap_or_default();
    match rest.iter().position(|&c| c < 0x20) {
        Some(k) => after_first_control(b, start + k, rest[..k].is_ascii()),
        None => LineEnd {
            end: b.len(),
            controls: false,
            ascii: rest.is_ascii(),
        },
    }
}

/// The line's end given its first byte below 0x20, at `at`; `ascii`: the bytes of the
/// line before `at` are (`true` is exact).
#[inline]
fn after_first_control(b: &[u8], at: usize, ascii: bool) -> LineEnd {
    let (end, controls) = match b[at] {
        b'\n' => (at, false),
        // CRLF: the `\r` is cut off with the line break.
        b'\r' if b.get(at + 1) == Some(&b'\n') => (at + 1, false),
        _ => {
            let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |k| at + k);
            return LineEnd {
                end,
                controls: true,
                ascii: ascii && b[at..end].is_ascii(),
            };
        }
    };
    LineEnd {
        end,
        controls,
        ascii,
    }
}

/// [`line_end`] with AVX2: the minimum of 128 bytes per step, one compare, and their OR.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn line_end_avx2(b: &[u8], start: usize) -> LineEnd {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_min_epu8,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm256_setzero_si256,
    };
    // Bit k set when byte k of `v` is below 0x20 (raising it to 0x20 changes it).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn below(v: __m256i) -> u32 {
        let raised = _mm256_max_epu8(v, _mm256_set1_epi8(0x20));
        !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(raised, v)) as u32)
    }
    let n = b.len();
    if n < 32 {
        return line_end_portable(b, start);
    }
    let p = b.as_ptr();
    let mut i = start;
    // The OR of every byte loaded: they cover the line up to its first control byte.
    let mut high = _mm256_setzero_si256();
    let first_control = 'found: {
        while i + 128 <= n {
            // SAFETY: AVX2 is enabled for this function (its callers check the CPU);
            // the four loads read inside `b`, as `i + 128 <= n`.
            let found = unsafe {
                let v0 = _mm256_loadu_si256(p.add(i).cast());
                let v1 = _mm256_loadu_si256(p.add(i + 32).cast());
                let v2 = _mm256_loadu_si256(p.add(i + 64).cast());
                let v3 = _mm256_loadu_si256(p.add(i + 96).cast());
                let or = _mm256_or_si256(_mm256_or_si256(v0, v1), _mm256_or_si256(v2, v3));
                high = _mm256_or_si256(high, or);
                let min = _mm256_min_epu8(_mm256_min_epu8(v0, v1), _mm256_min_epu8(v2, v3));
                match below(min) {
                    0 => None,
                    _ => {
                        let low = u64::from(below(v0)) | u64::from(below(v1)) << 32;
                        Some(match low {
                            0 => {
                                let m = u64::from(below(v2)) | u64::from(below(v3)) << 32;
                                i + 64 + m.trailing_zeros() as usize
                            }
                            m => i + m.trailing_zeros() as usize,
                        })
                    }
                }
            };
            if found.is_some() {
                break 'found found;
            }
            i += 128;
        }
        if i + 64 <= n {
            // SAFETY: AVX2 is enabled for this function (its callers check the CPU);
            // both loads read inside `b`, as `i + 64 <= n`.
            let found = unsafe {
                let v0 = _mm256_loadu_si256(p.add(i).cast());
                let v1 = _mm256_loadu_si256(p.add(i + 32).cast());
                high = _mm256_or_si256(high, _mm256_or_si256(v0, v1));
                match below(_mm256_min_epu8(v0, v1)) {
                    0 => None,
                    _ => Some(match below(v0) {
                        0 => i + 32 + below(v1).trailing_zeros() as usize,
                        m => i + m.trailing_zeros() as usize,
                    }),
                }
            };
            if found.is_some() {
                break 'found found;
            }
            i += 64;
        }
        if i >= n {
            break 'found None;
        }
        // The last bytes: 32-byte loads, the final one ending at the end of `b` (it may
        // reread bytes before `i`: those bits are shifted out).
        while i + 32 < n {
            // SAFETY: as above; the load reads bytes `i..i + 32`, inside `b`.
            let m = unsafe {
                let v = _mm256_loadu_si256(p.add(i).cast());
                high = _mm256_or_si256(high, v);
                below(v)
            };
            if m != 0 {
                break 'found Some(i + m.trailing_zeros() as usize);
            }
            i += 32;
        }
        let from = n - 32;
        // SAFETY: as above; the load reads bytes `n - 32..n`, inside `b` (`n >= 32`).
        let m = unsafe {
            let v = _mm256_loadu_si256(p.add(from).cast());
            high = _mm256_or_si256(high, v);
            below(v) >> (i - from)
        };
        (m != 0).then(|| i + m.trailing_zeros() as usize)
    };
    let ascii = _mm256_movemask_epi8(high) == 0;
    match first_control {
        Some(at) => after_first_control(b, at, ascii),
        None => LineEnd {
            end: n,
            controls: false,
            ascii,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain reading: memchr for the line break, then any control byte in the line
    /// as the session parser strips it (its `\n` and one `\r` before it), and whether
    /// the line is ASCII.
    fn reference(b: &[u8], start: usize) -> LineEnd {
        let end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |k| start + k);
        let line = &b[start..end];
        let ascii = line.is_ascii();
        let line = if end < b.len() {
            line.strip_suffix(b"\r").unwrap_or(line)
        } else {
            line
        };
        LineEnd {
            end,
            controls: line.iter().any(|&c| c < 0x20),
            ascii,
        }
    }

    fn check(b: &[u8]) {
        let mut start = 0;
        loop {
            let want = reference(b, start);
            for (got, how) in [
                (line_end(b, start), "dispatched"),
                (line_end_portable(b, start), "portable"),
            ] {
                let at = format!("{how}: from {start} in {b:?}");
                assert_eq!((got.end, got.controls), (want.end, want.controls), "{at}");
                // ASCII may be missed (bytes past the line were looked at), never claimed.
                assert!(!got.ascii || want.ascii, "{at}");
                // ... and never missed in an ASCII text.
                assert!(got.ascii || !b.is_ascii(), "{at}");
            }
            if want.end == b.len() {
                break;
            }
            start = want.end + 1;
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
