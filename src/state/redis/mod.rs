//! The connection to Redis/Valkey (`COMPACTD_REDIS_URL`), through redis-rs.
//!
//! Design decisions:
//! * One `ConnectionManager` (a multiplexed connection that reconnects by itself) serves
//!   every short command of the process. It connects lazily: a replica starts while
//!   Redis is down and reports itself not ready until it answers.
//! * Blocking reads (`XREAD BLOCK`: a follower waiting for events, a runner watching for
//!   a cancel) would hold up every command queued behind them on a multiplexed
//!   connection, so each one gets a connection of its own ([`Redis::dedicated`]).
//! * Every call is bounded by `COMPACTD_STATE_TIMEOUT_MS` (plus the block time for a
//!   blocking read), so an unreachable or stalled Redis is an error, never a hang. A
//!   failure is counted in `compactd_state_errors_total{op}` and logged at most every
//!   10 s, with the operation and the kind of failure — never the URL.
//! * Keys live under `compactd:`; a standalone server (or a primary) is assumed: the job
//!   scripts touch keys named in their arguments (no Redis Cluster).

pub mod cache;
mod job_scripts;
pub mod jobs;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use ::redis::{AsyncConnectionConfig, Client, RedisError};

use super::StateError;
use crate::telemetry::metric;

/// The prefix of every key compactd writes.
pub(super) const PREFIX: &str = "compactd:";

/// A handle on the shared Redis; cheap to clone.
#[derive(Clone)]
pub struct Redis {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    manager: ConnectionManager,
    timeout: Duration,
}

impl Redis {
    /// Checks the URL and prepares the connection (made on first use).
    pub fn open(url: &str, timeout: Duration) -> Result<Redis, StateError> {
        let client = Client::open(url).map_err(|e| StateError {
            op: "open",
            // The client's message may quote the URL: only its kind is shown.
            reason: format!("invalid Redis URL ({:?})", e.kind()),
        })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(timeout);
        let manager =
            ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| {
                StateError {
                    op: "open",
                    reason: describe(&e),
                }
            })?;
        Ok(Redis {
            inner: Arc::new(Inner {
                client,
                manager,
                timeout,
            }),
        })
    }

    /// The bound on one call.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Runs `f` on the shared connection within the timeout; failures are counted and
    /// logged under `op`.
    pub async fn call<T, F, Fut>(&self, op: &'static str, f: F) -> Result<T, StateError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let conn = self.inner.manager.clone();
        bounded(op, self.inner.timeout, f(conn)).await
    }

    /// A connection of its own, for blocking reads.
    pub async fn dedicated(&self) -> Result<MultiplexedConnection, StateError> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.inner.timeout))
            // Blocking reads bring their own bound (see `bounded`).
            .set_response_timeout(None);
        bounded(
            "connect",
            self.inner.timeout,
            self.inner
                .client
                .get_multiplexed_async_connection_with_config(&config),
        )
        .await
    }

    /// Redis answers `PING` in time.
    pub async fn ping(&self) -> Result<(), StateError> {
        self.call("ping", |mut c| async move {
            ::redis::cmd("PING").query_async::<String>(&mut c).await
        })
        .await
        .map(|_| ())
    }
}

/// `fut` within `limit`; a failure is counted and logged under `op`.
pub(super) async fn bounded<T>(
    op: &'static str,
    limit: Duration,
    fut: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, StateError> {
    let reason = match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => return Ok(v),
        Ok(Err(e)) => describe(&e),
        Err(_) => format!("no answer within {} ms", limit.as_millis()),
    };
    Err(failed(op, reason))
}

/// Counts and (rate-limited) logs a failure of `op`.
pub(super) fn failed(op: &'static str, reason: String) -> StateError {
    metrics::counter!(metric::STATE_ERRORS.name, "op" => op).increment(1);
    if should_warn() {
        tracing::warn!(op, reason = %reason, "the shared state (Redis) failed; counting compactd_state_errors_total");
    }
    StateError { op, reason }
}

/// What went wrong, without anything the URL holds: I/O failures by kind, server
/// errors by their code and message (the server's own words).
fn describe(e: &RedisError) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connection_refusal() {
        "connection refused".into()
    } else if e.is_connection_dropped() {
        "connection dropped".into()
    } else if e.is_io_error() {
        "i/o error".into()
    } else {
        match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_string(),
            _ => format!("{:?}", e.kind()),
        }
    }
}

/// At most one warning every 10 s for the process: an outage is one line, not a flood.
fn should_warn() -> bool {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 10_001;
    let last = LAST.load(Ordering::Relaxed);
    now.saturating_sub(last) > 10_000
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}
