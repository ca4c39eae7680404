//! The summary cache's shared tier: answers one replica paid for serve the identical
//! request on another (issue 13).
//!
//! Design decisions:
//! * The cache is a cache: a failing or slow Redis is a miss, never an error of the
//!   request. After a failure the tier is skipped for [`PAUSE`], so an outage costs each
//!   request nothing rather than a timeout per lookup.
//! * Entries are the summarizer's own encoding (the caller's bytes) under
//!   `compactd:cache:{sha256 key}`, kept [`ENTRY_TTL`]: bounded without relying on the
//!   server's eviction policy (which may not be set for job keys' sake).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::cmd;

use super::super::job::hex;
use super::{Redis, PREFIX};

/// How long a shared answer is kept.
pub const ENTRY_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long the tier is skipped after a failure.
pub const PAUSE: Duration = Duration::from_secs(5);

/// The shared tier of the summary cache; cheap to clone.
#[derive(Clone)]
pub struct SharedCache {
    redis: Redis,
    /// Milliseconds since `epoch` before which the tier is skipped.
    paused_until: Arc<AtomicU64>,
    epoch: Instant,
}

impl SharedCache {
    pub fn new(redis: Redis) -> Self {
        SharedCache {
            redis,
            paused_until: Arc::new(AtomicU64::new(0)),
            epoch: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn paused(&self) -> bool {
        self.now_ms() < self.paused_until.load(Ordering::Relaxed)
    }

    fn pause(&self) {
        let until = self.now_ms() + PAUSE.as_millis() as u64;
        self.paused_until.store(until, Ordering::Relaxed);
    }

    /// The bytes stored under `key`; `None` on a miss or when Redis fails.
    pub async fn get(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        if self.paused() {
            return None;
        }
        let name = format!("{PREFIX}cache:{}", hex(key));
        let got = self
            .redis
            .call("cache_get", |mut c| async move {
                cmd("GET")
                    .arg(name)
                    .query_async::<Option<Vec<u8>>>(&mut c)
                    .await
            })
            .await;
        got.unwrap_or_else(|_| {
            self.pause();
            None
        })
    }

    /// Stores `bytes` under `key` (a failure is logged and counted, nothing more).
    pub async fn set(&self, key: &[u8; 32], bytes: Vec<u8>) {
        if self.paused() {
            return;
        }
        let name = format!("{PREFIX}cache:{}", hex(key));
        let ms = ENTRY_TTL.as_millis() as u64;
        let set = self
            .redis
            .call("cache_set", |mut c| async move {
                cmd("SET")
                    .arg(name)
                    .arg(bytes)
                    .arg("PX")
                    .arg(ms)
                    .query_async::<()>(&mut c)
                    .await
            })
            .await;
        if set.is_err() {
            self.pause();
        }
    }
}
