//! Whether a text holds any byte below 0x20, read once per session line before the
//! lexer walks it, so the per-string control check runs only on the rare lines that
//! need it.

/// Any byte below 0x20. Outside strings JSON allows only tab, CR and LF (whitespace);
/// inside strings none. Texts without any (the norm) skip the per-string check.
pub(super) fn has_control_bytes(b: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; the answer is cached).
        return unsafe { has_control_bytes_avx2(b) };
    }
    has_control_bytes_portable(b)
}

pub(super) fn has_control_bytes_portable(b: &[u8]) -> bool {
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

/// [`has_control_bytes`] with 32-byte minimums, 128 bytes per step: a line costs
/// ~0.05 instructions per byte instead of the portable loop's ~0.34 (it reads every
/// byte of every session line).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn has_control_bytes_avx2(b: &[u8]) -> bool {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_min_epu8,
        _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    let mut chunks = b.chunks_exact(128);
    // SAFETY: AVX2 is enabled for this function (its callers check the CPU), and every
    // unaligned load reads 32 of the 128 bytes of the chunk `c`, borrowed meanwhile.
    let below = unsafe {
        let (mut m0, mut m1) = (_mm256_set1_epi8(-1), _mm256_set1_epi8(-1));
        for c in &mut chunks {
            let p = c.as_ptr();
            let (v0, v1) = (
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(32).cast()),
            );
            let (v2, v3) = (
                _mm256_loadu_si256(p.add(64).cast()),
                _mm256_loadu_si256(p.add(96).cast()),
            );
            m0 = _mm256_min_epu8(m0, _mm256_min_epu8(v0, v1));
            m1 = _mm256_min_epu8(m1, _mm256_min_epu8(v2, v3));
        }
        // A lane is below 0x20 when raising it to at least 0x20 changes it.
        let m = _mm256_min_epu8(m0, m1);
        let raised = _mm256_max_epu8(m, _mm256_set1_epi8(0x20));
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(raised, m)) != -1
    };
    let rest = chunks.remainder();
    if b.len() < 32 {
        return below || has_control_bytes_portable(rest);
    }
    // The last bytes as 32-byte loads, the final one overlapping what came before (a
    // line of a few hundred bytes would otherwise spend most of its time byte-wise).
    // SAFETY: AVX2 as above; every load reads 32 bytes inside `b`, which is at least
    // 32 bytes long, so `end - 32` and each `k + 32 <= end` stay in bounds.
    let tail = unsafe {
        let p = b.as_ptr();
        let end = b.len();
        let mut m = _mm256_loadu_si256(p.add(end - 32).cast());
        let mut k = end - rest.len();
        while k + 32 <= end {
            m = _mm256_min_epu8(m, _mm256_loadu_si256(p.add(k).cast()));
            k += 32;
        }
        let raised = _mm256_max_epu8(m, _mm256_set1_epi8(0x20));
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(raised, m)) != -1
    };
    below || tail
}
