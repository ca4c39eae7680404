//! Coverage-guided fuzzing of session parsing and every pipeline (see scripts/fuzz).
//!
//! The first byte picks the format and the options; the rest is the body. Seeds are the
//! conformance corpus with a zero control byte in front.
#![no_main]

#[path = "../../tests/fuzz/exercise.rs"]
mod exercise;

use compactd::pipeline::{
    BodyFormat, BranchSummaryOptions, CompactOptions, PrepareOptions, PruneOptions,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, body)) = data.split_first() else {
        return;
    };
    let format = if control & 1 == 0 {
        BodyFormat::Jsonl
    } else {
        BodyFormat::Json
    };
    let ids = exercise::ids_of(body);
    let id = |k: u8| (!ids.is_empty()).then(|| ids[k as usize % ids.len()].clone());
    let tokens = [0, 100, 20_000, u64::MAX];
    let leaf_id = (control & 2 != 0).then(|| id(control)).flatten();
    let reserve_tokens = Some(tokens[(control >> 4) as usize & 3]);
    let options = exercise::CaseOptions {
        compact: CompactOptions {
            prepare: PrepareOptions {
                leaf_id: leaf_id.clone(),
                keep_recent_tokens: Some(tokens[(control >> 2) as usize & 3]),
                reserve_tokens,
                ..PrepareOptions::default()
            },
            ..CompactOptions::default()
        },
        branch: BranchSummaryOptions {
            old_leaf_id: id(control.wrapping_mul(7)),
            target_id: id(control.wrapping_mul(13)),
            reserve_tokens,
            ..BranchSummaryOptions::default()
        },
        prune: PruneOptions {
            leaf_id,
            protect_tokens: Some(tokens[(control >> 6) as usize & 3]),
            ..PruneOptions::default()
        },
    };
    exercise::exercise(body, format, options, 100_000);
});
