//! Logging: `RUST_LOG` filters, `COMPACTD_LOG_FORMAT` picks JSON lines or human text.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests start several servers) keeps the first subscriber.
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Pretty => builder.try_init(),
    };
}

/// The Prometheus recorder, installed once per process (tests start several servers).
pub fn metrics() -> &'static metrics_exporter_prometheus::PrometheusHandle {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    static HANDLE: std::sync::OnceLock<metrics_exporter_prometheus::PrometheusHandle> =
        std::sync::OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full("compactd_request_duration_seconds".into()),
                &[
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                    120.0,
                ],
            )
            .expect("the bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed by an embedding program; then our
        // handle renders nothing, which is better than failing to start.
        let _ = metrics::set_global_recorder(recorder);
        describe();
        handle
    })
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        "compactd_requests_total",
        "HTTP requests by route and status"
    );
    describe_histogram!(
        "compactd_request_duration_seconds",
        Unit::Seconds,
        "HTTP request latency by route"
    );
    describe_gauge!("compactd_requests_in_flight", "HTTP requests in progress");
    describe_counter!(
        "compactd_summaries_total",
        "summaries written, by summarizer (llm | extractive)"
    );
    describe_counter!(
        "compactd_upstream_attempts_total",
        "model calls made (first attempts and retries)"
    );
    describe_counter!("compactd_upstream_retries_total", "model calls retried");
    describe_counter!(
        "compactd_fallbacks_total",
        "summaries answered by the extractive fallback because every model failed"
    );
    describe_counter!(
        "compactd_summarize_errors_total",
        "summaries that failed, by kind"
    );
    describe_counter!(
        "compactd_context_overflows_total",
        "model answers saying the request exceeds the context window, by model candidate"
    );
    describe_counter!(
        "compactd_truncated_prompts_total",
        "model answers reporting far fewer prompt tokens than were sent (a server that cut the prompt), by model candidate"
    );
    describe_counter!(
        "compactd_upstream_stalls_total",
        "streamed model answers abandoned because the stream went silent for the stall time, by model candidate"
    );
    describe_counter!(
        "compactd_compaction_replans_total",
        "compaction passes planned again in smaller chunks after a context overflow"
    );
    describe_counter!(
        "compactd_cache_hits_total",
        "summaries served from the in-memory cache"
    );
    describe_counter!(
        "compactd_pinned_items_total",
        "pinned items of verified summaries, by outcome (pinned | present | reinserted | left_out)"
    );
    describe_counter!(
        "compactd_tokens_total",
        "summarizer tokens by direction (input | output)"
    );
}
