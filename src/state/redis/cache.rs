//! The summary cache's shared tier: answers one replica paid for serve the identical
//! request on another.
//!
//! Design decisions:
//! * The cache is a cache: a failing or slow Redis is a miss, never an error of the
//!   request. After a failure the tier is skipped for [`PAUSE`], so an outage costs each
//!   request nothing rather than a timeout per lookup.
//! * Single flight across replicas: before calling the model, a replica claims the key
//!   (`compactd:flight:{sha256}`, `SET NX PX` for the engine's deadline); the others
//!   wait for the answer to land in this tier, polling every [`FLIGHT_POLL`], and take
//!   over when the claim is released without one (a failed or cancelled call) or has
//!   expired (a dead replica). A Redis that fails is a claim granted: the call is made.
//! * Entries are the summarizer's own encoding (the caller's bytes) under
//!   `compactd:cache:{sha256 key}`, kept [`ENTRY_TTL`]: bounded without relying on the
//!   server's eviction policy (which may not be set for job keys' sake).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::cmd;

use super::super::job::{hex, new_id};
use super::{Redis, PREFIX};

/// How long a shared answer is kept.
pub const ENTRY_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long the tier is skipped after a failure.
pub const PAUSE: Duration = Duration::from_secs(5);
/// How often a replica waiting for another's call looks for its answer.
pub const FLIGHT_POLL: Duration = Duration::from_millis(50);

/// Releases a claim only if it is still ours (it may have expired and been taken).
static RELEASE: std::sync::LazyLock<::redis::Script> = std::sync::LazyLock::new(|| {
    ::redis::Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
",
    )
});

/// This replica makes the call for a key; released when dropped.
pub struct Claim {
    held: Option<(Redis, String, String)>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let Some((redis, name, token)) = self.held.take() else {
            return;
        };
        // Dropped from synchronous code: the release runs on its own (bounded by the
        // timeout; a claim not released expires with its lease).
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let mut inv = RELEASE.prepare_invoke();
                inv.key(name).arg(token);
                let _ = redis
                    .call("flight_release", |mut c| async move {
                        inv.invoke_async::<i64>(&mut c).await
                    })
                    .await;
            });
        }
    }
}

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

    /// Claims the call for `key` for `lease`: `None` while another replica holds it.
    pub async fn claim(&self, key: &[u8; 32], lease: Duration) -> Option<Claim> {
        let granted = Claim { held: None };
        if self.paused() {
            return Some(granted);
        }
        let name = format!("{PREFIX}flight:{}", hex(key));
        let token = new_id();
        let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1);
        let (n, t) = (name.clone(), token.clone());
        let set = self
            .redis
            .call("flight_claim", |mut c| async move {
                cmd("SET")
                    .arg(n)
                    .arg(t)
                    .arg("NX")
                    .arg("PX")
                    .arg(ms)
                    .query_async::<Option<String>>(&mut c)
                    .await
            })
            .await;
        match set {
            Ok(Some(_)) => Some(Claim {
                held: Some((self.redis.clone(), name, token)),
            }),
            Ok(None) => None,
            Err(_) => {
                self.pause();
                Some(granted)
            }
        }
    }

    /// Whether another replica still holds the claim on `key` (false when Redis fails).
    pub async fn claimed(&self, key: &[u8; 32]) -> bool {
        if self.paused() {
            return false;
        }
        let name = format!("{PREFIX}flight:{}", hex(key));
        let held = self
            .redis
            .call("flight_check", |mut c| async move {
                cmd("EXISTS").arg(name).query_async::<bool>(&mut c).await
            })
            .await;
        held.unwrap_or_else(|_| {
            self.pause();
            false
        })
    }
}
