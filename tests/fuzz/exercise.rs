//! One fuzz case: a body and options through every pipeline the endpoints run — parse
//! (both formats), prepare, compact (plan and run with the extractive summarizer),
//! branch summary (plan, dry run, run) and prune (answer and file rewrite).
//!
//! Shared by the time-bounded fuzz test (`tests/fuzz/main.rs`, in `cargo test`) and the
//! cargo-fuzz target (`fuzz/fuzz_targets/session.rs`). Errors are answers; a panic or a
//! broken invariant is a bug.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use compactd::compaction::Settings;
use compactd::pipeline::branch::{plan_branch_summary, run_branch_summary, BranchBudget};
use compactd::pipeline::compact::{plan_compaction, run_compaction};
use compactd::pipeline::prune::plan_prune;
use compactd::pipeline::{
    prepare_response, BodyFormat, BranchSummaryOptions, CompactOptions, PruneOptions, SessionInput,
};
use compactd::summarize::extractive::Extractive;
use compactd::summarize::{Prompts, Silent};

/// Polls a future that never waits (its summarizer answers at once).
fn finish<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a pipeline waited although its summarizer answers at once"),
    }
}

/// The ids a case may pick for leafId / oldLeafId / targetId.
pub fn ids_of(body: &[u8]) -> Vec<String> {
    body.split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
        .filter_map(|v| v.get("id").and_then(|i| i.as_str()).map(String::from))
        .collect()
}

/// The options of one case, as each endpoint takes them (from the query string of a
/// JSONL body; a JSON body carries its own).
#[derive(Debug, Clone, Default)]
pub struct CaseOptions {
    /// `/v1/compact`'s, which hold `/v1/prepare`'s.
    pub compact: CompactOptions,
    pub branch: BranchSummaryOptions,
    pub prune: PruneOptions,
}

/// Runs one case. `limit` is the entry limit (`COMPACTD_MAX_ENTRIES`). Each endpoint
/// parses the body with its own options, as the server does.
pub fn exercise(body: &[u8], format: BodyFormat, options: CaseOptions, limit: usize) {
    let prompts = Prompts::builtin();
    let Ok(input) = SessionInput::parse_limited(body, format, options.compact, limit) else {
        return;
    };
    let defaults = Settings {
        keep_recent_tokens: 20_000,
        reserve_tokens: 16_384,
    };

    // /v1/prepare: the answer must serialize.
    if let Ok(answer) = prepare_response(&input, &prompts, defaults, Some(128_000)) {
        serde_json::to_vec(&answer).expect("a prepare answer serializes");
    }

    // /v1/compact.
    if let Ok(plan) = plan_compaction(&input, &prompts, defaults, Default::default()) {
        let now = time::OffsetDateTime::UNIX_EPOCH;
        if let Ok(result) = finish(run_compaction(plan, &prompts, &Extractive, now, &Silent)) {
            serde_json::to_vec(&result).expect("a compaction result serializes");
        }
    }
    drop(input);

    // /v1/branch-summary (needs oldLeafId and targetId).
    if let Ok(input) = SessionInput::parse_limited(body, format, options.branch, limit) {
        let o = &input.options;
        if o.old_leaf_id.is_some() && o.target_id.is_some() {
            let budget = BranchBudget {
                context_window: o.context_window.unwrap_or(128_000),
                reserve_tokens: o.reserve_tokens.unwrap_or(16_384),
            };
            if let Ok(plan) = plan_branch_summary(&input, &prompts, budget, Default::default()) {
                serde_json::to_vec(&plan.dry_run()).expect("a branch dry run serializes");
                let now = time::OffsetDateTime::UNIX_EPOCH;
                if let Ok(result) = finish(run_branch_summary(
                    plan,
                    &prompts,
                    &Extractive,
                    now,
                    &Silent,
                )) {
                    serde_json::to_vec(&result).expect("a branch result serializes");
                }
            }
        }
    }

    // /v1/prune and `compactd prune -o`: a rewritten JSONL file parses again.
    let Ok(input) = SessionInput::parse_limited(body, format, options.prune, limit) else {
        return;
    };
    if let Ok(pruning) = plan_prune(&input) {
        let answer = pruning.response(0).expect("a prune answer serializes");
        serde_json::to_vec(&answer).expect("a prune answer serializes");
        if format == BodyFormat::Jsonl {
            let rewritten = pruning.rewrite(body, 0).expect("a parsed file rewrites");
            SessionInput::parse(&rewritten, BodyFormat::Jsonl, PruneOptions::default())
                .expect("a pruned file parses again");
        }
    }
}
