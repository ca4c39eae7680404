//! The state that replicas can share: jobs, their events, idempotency keys and
//! cached summaries. In this process by default; in Redis/Valkey when
//! `COMPACTD_REDIS_URL` is set, so that any replica can read, follow and cancel a job
//! another one runs, an idempotent retry reaches whichever replica and still pays once,
//! and one replica's summary answers the next identical request on another.
//!
//! Layout: `job` (what a job is), `memory` (the in-process store), `redis` (the shared
//! one: connection, jobs, cache), `jobs` (the one interface the HTTP layer calls).
//!
//! Design decisions (`docs/deployment.md`, "Replicas with Redis", says the same for
//! operators):
//! * Redis being unreachable is never a hang: every call has `COMPACTD_STATE_TIMEOUT_MS`.
//!   Job and idempotency operations then fail (503 `state-unavailable` with
//!   `Retry-After`), `/readyz` fails, and the summary cache degrades to misses; plain
//!   compactions keep working. Each failure counts in
//!   `compactd_state_errors_total{op}` and logs a warning at most every 10 s.
//! * The URL is never logged nor shown (it may carry a password).

pub mod job;
pub mod jobs;
pub mod memory;
pub mod redis;

use std::sync::Arc;

pub use self::redis::cache::SharedCache;
pub use job::{Batch, Begin, Logged, Outcome, Owner, Snapshot, Status, Waiter};
pub use jobs::Jobs;
pub use memory::JobLimits;

use crate::config::Config;

/// A call to the shared state failed or took longer than its timeout.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the shared state is unavailable ({op}): {reason}")]
pub struct StateError {
    /// The operation (`begin`, `get`, …), as the metric labels it.
    pub op: &'static str,
    pub reason: String,
}

/// The configured state: the jobs, and the shared cache when there is one.
#[derive(Clone)]
pub struct SharedState {
    pub jobs: Arc<Jobs>,
    /// The summary cache's shared tier (with Redis only).
    pub cache: Option<SharedCache>,
    redis: Option<redis::Redis>,
}

impl SharedState {
    /// Everything in this process.
    pub fn memory(config: &Config) -> Self {
        SharedState {
            jobs: Arc::new(Jobs::memory(
                config.job_ttl,
                JobLimits {
                    max: config.jobs_max,
                    max_bytes: config.jobs_max_bytes,
                },
            )),
            cache: None,
            redis: None,
        }
    }

    /// The state `config` asks for. Connecting to Redis happens on first use, so a
    /// replica starts (and reports itself not ready) while Redis is down.
    pub fn open(config: &Config) -> Result<Self, StateError> {
        let Some(url) = &config.redis_url else {
            return Ok(SharedState::memory(config));
        };
        let redis = redis::Redis::open(
            secrecy::ExposeSecret::expose_secret(url),
            config.state_timeout,
        )?;
        Ok(SharedState {
            jobs: Arc::new(Jobs::Redis(redis::jobs::RedisJobs::new(
                redis.clone(),
                config,
            ))),
            cache: Some(SharedCache::new(redis.clone())),
            redis: Some(redis),
        })
    }

    /// Whether the state can be used now: always in memory; Redis answers `PING` in time.
    pub async fn ready(&self) -> Result<(), StateError> {
        match &self.redis {
            None => Ok(()),
            Some(r) => r.ping().await,
        }
    }

    /// `memory` or `redis`.
    pub fn kind(&self) -> &'static str {
        if self.redis.is_some() {
            "redis"
        } else {
            "memory"
        }
    }
}
