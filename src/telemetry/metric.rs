//! Every metric the service records, in one table: its name, kind and help text. Call
//! sites name a constant (`metrics::counter!(metric::JOBS.name)`), never a string, so a
//! metric cannot be recorded under a misspelt name or go undescribed on `/metrics`.

/// What a metric measures over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric: its Prometheus name, kind and the help text `/metrics` shows (labels
/// and their values in parentheses).
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

const fn counter(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Counter,
        help,
    }
}

// HTTP.
pub const REQUESTS: Metric = counter("compactd_requests_total", "HTTP requests (route, status)");
pub const REQUEST_DURATION: Metric = Metric {
    name: "compactd_request_duration_seconds",
    kind: Kind::Histogram,
    help: "HTTP request latency (route)",
};
pub const REQUESTS_IN_FLIGHT: Metric = Metric {
    name: "compactd_requests_in_flight",
    kind: Kind::Gauge,
    help: "HTTP requests in progress",
};
pub const MEMORY_BUDGET_REFUSALS: Metric = counter(
    "compactd_memory_budget_refusals_total",
    "requests answered 503 over-memory-budget (COMPACTD_MEMORY_BUDGET_BYTES)",
);

// Jobs.
pub const JOBS: Metric = counter(
    "compactd_jobs_total",
    "jobs started (Prefer: respond-async or an Idempotency-Key)",
);
pub const JOBS_JOINED: Metric = counter(
    "compactd_jobs_joined_total",
    "requests that joined a job already started with the same Idempotency-Key",
);
pub const JOBS_FINISHED: Metric = counter(
    "compactd_jobs_finished_total",
    "jobs ended (status: succeeded | failed)",
);
pub const JOBS_LOST: Metric = counter(
    "compactd_jobs_lost_total",
    "jobs whose runner stopped renewing its lease in Redis, ended as job-lost",
);
pub const STATE_ERRORS: Metric = counter(
    "compactd_state_errors_total",
    "failed operations on the shared state in Redis (op)",
);

// Summaries.
pub const SUMMARIES: Metric = counter(
    "compactd_summaries_total",
    "summaries written (summarizer: llm | extractive)",
);
pub const SUMMARIZE_ERRORS: Metric = counter(
    "compactd_summarize_errors_total",
    "summaries that failed (kind)",
);
pub const FALLBACKS: Metric = counter(
    "compactd_fallbacks_total",
    "summaries answered by the extractive fallback because every model failed",
);
pub const CACHE_HITS: Metric = counter(
    "compactd_cache_hits_total",
    "summaries served from the cache",
);
pub const SINGLE_FLIGHT_JOINS: Metric = counter(
    "compactd_single_flight_joins_total",
    "summary requests that waited for an identical call in progress instead of calling the model",
);
pub const TOKENS: Metric = counter(
    "compactd_tokens_total",
    "summarizer tokens (direction: input | output)",
);
pub const PINNED_ITEMS: Metric = counter(
    "compactd_pinned_items_total",
    "pinned items of verified summaries (outcome: pinned | present | reinserted | left_out)",
);
pub const REPLANS: Metric = counter(
    "compactd_compaction_replans_total",
    "compaction passes planned again in smaller chunks after a context overflow",
);

// Model calls.
pub const UPSTREAM_ATTEMPTS: Metric = counter(
    "compactd_upstream_attempts_total",
    "model calls made (first attempts and retries)",
);
pub const UPSTREAM_RETRIES: Metric =
    counter("compactd_upstream_retries_total", "model calls retried");
pub const CONTEXT_OVERFLOWS: Metric = counter(
    "compactd_context_overflows_total",
    "model answers saying the request exceeds the context window (candidate)",
);
pub const TRUNCATED_PROMPTS: Metric = counter(
    "compactd_truncated_prompts_total",
    "model answers reporting far fewer prompt tokens than were sent, a server that cut the prompt (candidate)",
);
pub const UPSTREAM_STALLS: Metric = counter(
    "compactd_upstream_stalls_total",
    "streamed model answers abandoned because the stream went silent for the stall time (candidate)",
);
pub const MOA_SUMMARIES: Metric = counter(
    "compactd_moa_summaries_total",
    "Mixture-of-Agents summaries (outcome: aggregated | best_draft | failed)",
);
pub const MOA_PROPOSER_FAILURES: Metric = counter(
    "compactd_moa_proposer_failures_total",
    "Mixture-of-Agents proposers that gave no draft and were left out",
);

// hermes-agent.
pub const HERMES_COMPACTIONS: Metric = counter(
    "compactd_hermes_compactions_total",
    "hermes compactions answered (outcome: the summarizer, or why nothing was compacted)",
);
pub const HERMES_SUMMARIES: Metric = counter(
    "compactd_hermes_summaries_total",
    "hermes summaries asked of a model (outcome: llm | aborted | failed)",
);

/// The table: `/metrics` describes each of these.
pub const ALL: &[Metric] = &[
    REQUESTS,
    REQUEST_DURATION,
    REQUESTS_IN_FLIGHT,
    MEMORY_BUDGET_REFUSALS,
    JOBS,
    JOBS_JOINED,
    JOBS_FINISHED,
    JOBS_LOST,
    STATE_ERRORS,
    SUMMARIES,
    SUMMARIZE_ERRORS,
    FALLBACKS,
    CACHE_HITS,
    SINGLE_FLIGHT_JOINS,
    TOKENS,
    PINNED_ITEMS,
    REPLANS,
    UPSTREAM_ATTEMPTS,
    UPSTREAM_RETRIES,
    CONTEXT_OVERFLOWS,
    TRUNCATED_PROMPTS,
    UPSTREAM_STALLS,
    MOA_SUMMARIES,
    MOA_PROPOSER_FAILURES,
    HERMES_COMPACTIONS,
    HERMES_SUMMARIES,
];

/// Gives every metric of the table its help text (and the histogram its unit).
pub(super) fn describe_all() {
    for m in ALL {
        match m.kind {
            Kind::Counter => metrics::describe_counter!(m.name, m.help),
            Kind::Gauge => metrics::describe_gauge!(m.name, m.help),
            Kind::Histogram => {
                metrics::describe_histogram!(m.name, metrics::Unit::Seconds, m.help)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    #[test]
    fn names_are_unique_prometheus_names_with_help() {
        let mut seen = BTreeSet::new();
        for m in ALL {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.starts_with("compactd_"), "{}", m.name);
            assert!(
                m.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{}",
                m.name
            );
            assert_eq!(
                m.kind == Kind::Counter,
                m.name.ends_with("_total"),
                "{}",
                m.name
            );
            assert!(!m.help.is_empty(), "{} has no help", m.name);
        }
    }

    /// Every recorded name comes from the table: no metric macro is given a string.
    #[test]
    fn no_call_site_spells_a_metric_name() {
        fn scan(dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    scan(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let flat: String = text.split_whitespace().collect();
                    for mac in [
                        "counter!(\"",
                        "gauge!(\"",
                        "histogram!(\"",
                        "describe_counter!(\"",
                    ] {
                        if flat.contains(mac) {
                            out.push(format!("{}: {mac}", path.display()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        scan(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert!(
            found.is_empty(),
            "metric names spelt at call sites:\n{}",
            found.join("\n")
        );
    }
}
