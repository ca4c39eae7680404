//! The metrics of one summarize call, by outcome: summaries by summarizer, tokens,
//! attempts and retries, fallbacks, cache hits, and errors by kind. (Context overflows
//! and silently cut prompts are counted where they are noticed, in `engine.rs`.)

use crate::summarize::{SummarizeError, SummarizerKind, Summary};
use crate::telemetry::metric;

/// Metrics of one summarize call.
pub(super) fn record(result: &Result<Summary, SummarizeError>, uses_models: bool) {
    match result {
        Ok(s) => {
            let kind = match s.summarizer {
                SummarizerKind::Llm => "llm",
                SummarizerKind::Extractive => "extractive",
            };
            metrics::counter!(metric::SUMMARIES.name, "summarizer" => kind).increment(1);
            metrics::counter!(metric::TOKENS.name, "direction" => "input").increment(s.usage.input);
            metrics::counter!(metric::TOKENS.name, "direction" => "output")
                .increment(s.usage.output);
            metrics::counter!(metric::UPSTREAM_RETRIES.name).increment(u64::from(s.retries));
            if s.cached {
                metrics::counter!(metric::CACHE_HITS.name).increment(1);
            } else if s.summarizer == SummarizerKind::Llm {
                // MoA: one first attempt per proposer and one for the aggregator.
                let first_attempts = s
                    .moa
                    .as_ref()
                    .map_or(1, |m| (m.proposers.len() + m.failed.len() + 1) as u64);
                metrics::counter!(metric::UPSTREAM_ATTEMPTS.name)
                    .increment(u64::from(s.retries) + first_attempts);
            } else if uses_models {
                metrics::counter!(metric::FALLBACKS.name).increment(1);
            }
        }
        Err(e) => {
            let kind = match e {
                // The last three come from model-only calls, counted by hermes instead.
                SummarizeError::Upstream(_)
                | SummarizeError::NotConfigured
                | SummarizeError::Unreachable(_)
                | SummarizeError::Failed(_) => "upstream",
                SummarizeError::Timeout => "timeout",
                SummarizeError::UnknownModel(_) => "unknown_model",
                SummarizeError::NoMoa => "no_moa",
                SummarizeError::ContextOverflow(_) => "context_overflow",
            };
            metrics::counter!(metric::SUMMARIZE_ERRORS.name, "kind" => kind).increment(1);
        }
    }
}
