//! Logging: `RUST_LOG` filters, `COMPACTD_LOG_FORMAT` picks JSON lines or human text.
//! Metrics: the Prometheus recorder, and the table of every metric ([`metric`]).

pub mod metric;

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
                Matcher::Full(metric::REQUEST_DURATION.name.into()),
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
        metric::describe_all();
        handle
    })
}
