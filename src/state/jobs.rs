//! The job interface: what a job is, and the one set of operations the HTTP
//! layer calls, answered by the in-process store (`memory`) or by Redis/Valkey (`redis`).
//!
//! Design decisions:
//! * The interface is an enum over the two stores rather than a trait object: both are
//!   known here, the calls are async, and a match keeps them zero-cost and `Send`
//!   without boxing every future.
//! * Every operation can fail with [`StateError`] (only the shared store does); the
//!   caller answers 503 `state-unavailable` with `Retry-After`.
//! * A job's events are one append-only log; an event's id is its index, the same ids a
//!   plain event stream sends, on every replica. The terminal event (`result` or
//!   `error`) is written once, by whoever ends the job first: its runner, a `DELETE`, or
//!   (shared store) a reader who finds the runner's lease expired.
//! * The runner [`Jobs::hold`]s its job while the work runs: that future ends when the
//!   job was ended by someone else (cancelled, or declared lost), and the runner then
//!   drops its work, so the model calls stop. The shared store renews the lease there.

use std::time::Duration;

use super::job::{Batch, Begin, Logged, Owner, Snapshot, Status, Waiter};
use super::memory::{JobLimits, MemoryJobs};
use super::redis::jobs::RedisJobs;
use super::StateError;

/// The jobs: in this process, or shared by the replicas through Redis.
pub enum Jobs {
    Memory(MemoryJobs),
    Redis(RedisJobs),
}

impl Jobs {
    /// Jobs kept in this process, forgotten `ttl` after they finish or when finished
    /// ones go past `limits`.
    pub fn memory(ttl: Duration, limits: JobLimits) -> Self {
        Jobs::Memory(MemoryJobs::new(ttl, limits))
    }

    /// Whether the owner's job `id` was evicted under the ceilings (`COMPACTD_JOBS_MAX`,
    /// `COMPACTD_JOBS_MAX_BYTES`; both stores evict the oldest finished jobs). A shared
    /// store that cannot answer says no (the caller then answers 404).
    pub async fn evicted(&self, owner: Owner, id: &str) -> bool {
        match self {
            Jobs::Memory(m) => m.evicted(owner, id),
            Jobs::Redis(r) => r.evicted(owner, id).await.unwrap_or(false),
        }
    }

    /// Registers a job (status `running`: it already holds its place under the limit),
    /// or finds the one an idempotency key names.
    pub async fn begin(
        &self,
        owner: Owner,
        operation: &str,
        key: Option<(&str, [u8; 32])>,
    ) -> Result<Begin, StateError> {
        match self {
            Jobs::Memory(m) => Ok(m.begin(owner, operation, key)),
            Jobs::Redis(r) => r.begin(owner, operation, key).await,
        }
    }

    /// Appends a progress event (ignored once the job is done).
    pub async fn push(&self, id: &str, event: Logged) -> Result<(), StateError> {
        match self {
            Jobs::Memory(m) => {
                m.push(id, event);
                Ok(())
            }
            Jobs::Redis(r) => r.push(id, event).await,
        }
    }

    /// Ends a job with its terminal event; false when it had already ended.
    pub async fn finish(
        &self,
        id: &str,
        status: Status,
        http_status: u16,
        event: Logged,
    ) -> Result<bool, StateError> {
        match self {
            Jobs::Memory(m) => Ok(m.finish(id, status, http_status, event)),
            Jobs::Redis(r) => r.finish(id, status, http_status, event).await,
        }
    }

    /// Cancels a running job and ends it with `event` (its runner, wherever it runs,
    /// drops the work). The job as it is now; `None` when the owner has no such job.
    pub async fn cancel(
        &self,
        owner: Owner,
        id: &str,
        event: Logged,
        http_status: u16,
    ) -> Result<Option<Snapshot>, StateError> {
        match self {
            Jobs::Memory(m) => Ok(m.cancel(owner, id, event, http_status)),
            Jobs::Redis(r) => r.cancel(owner, id, event, http_status).await,
        }
    }

    /// The job as its owner sees it.
    pub async fn get(&self, owner: Owner, id: &str) -> Result<Option<Snapshot>, StateError> {
        match self {
            Jobs::Memory(m) => Ok(m.get(owner, id)),
            Jobs::Redis(r) => r.get(owner, id).await,
        }
    }

    /// Events from index `from` on; when there are none yet, waits up to `wait` for some
    /// (an empty batch then: ask again). `None` when the owner has no such job.
    pub async fn events(
        &self,
        owner: Owner,
        id: &str,
        from: usize,
        wait: Duration,
        waiter: &mut Waiter,
    ) -> Result<Option<Batch>, StateError> {
        match self {
            Jobs::Memory(m) => Ok(m.events(owner, id, from, wait).await),
            Jobs::Redis(r) => r.events(owner, id, from, wait, waiter).await,
        }
    }

    /// Held by a job's runner while its work runs: ends when the job was ended by
    /// someone else (cancelled, expired, or declared lost). The shared store renews the
    /// runner's lease meanwhile.
    pub async fn hold(&self, id: &str) {
        match self {
            Jobs::Memory(m) => m.hold(id).await,
            Jobs::Redis(r) => r.hold(id).await,
        }
    }

    /// How long a follower waits for events before it looks at the job again.
    pub fn poll(&self) -> Duration {
        match self {
            Jobs::Memory(_) => Duration::from_secs(30),
            Jobs::Redis(r) => r.poll(),
        }
    }
}
