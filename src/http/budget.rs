//! The memory budget: what the requests in progress may hold at once
//! (`COMPACTD_MEMORY_BUDGET_BYTES`), so that many large bodies at once get 503 with
//! `Retry-After` instead of taking the process to an out-of-memory kill.
//!
//! Decisions:
//! * What a request will hold is estimated from its body: [`HELD_PER_BODY_BYTE`] times
//!   its bytes (the measured peak of a compaction of a session of very short messages,
//!   the worst shape per byte, was about 15×; docs/deployment.md). The count of requests
//!   (`COMPACTD_MAX_CONCURRENCY`) alone cannot bound memory: one large body weighs more
//!   than a hundred small ones.
//! * A request reserves as its body is read: the declared `Content-Length` before the
//!   first byte (so an oversized request is refused before it is read), then what has
//!   arrived (chunked and compressed bodies). A reservation that does not fit is a 503 at
//!   once, never a wait: a queue of large bodies would be held in memory too.
//! * One request is never refused for its size alone: its reservation is capped at the
//!   whole budget, so a body the budget cannot fit still runs when nothing else does
//!   (`COMPACTD_MAX_BODY_BYTES` bounds it).
//! * The reservation is released when the work ends: it lives in the request's
//!   [`Permit`](super::guard::Permit), which a job or an event stream keeps.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::problem::ApiError;

/// What a request is estimated to hold per byte of its (decoded) body at its peak.
pub const HELD_PER_BODY_BYTE: usize = 16;

/// Reservations are counted in KiB (a semaphore hands out at most `u32` permits at once).
const UNIT: usize = 1024;

/// The budget every request reserves from.
#[derive(Debug)]
pub struct MemoryBudget {
    units: Arc<Semaphore>,
    total_units: usize,
}

impl MemoryBudget {
    pub fn new(bytes: usize) -> Self {
        let total_units = bytes.div_ceil(UNIT).clamp(1, u32::MAX as usize);
        MemoryBudget {
            units: Arc::new(Semaphore::new(total_units)),
            total_units,
        }
    }

    /// Bytes reserved by the requests in progress now.
    pub fn reserved_bytes(&self) -> usize {
        (self.total_units - self.units.available_permits()) * UNIT
    }
}

/// One request's reservation; it grows as the body arrives and is released when the
/// last clone is dropped.
#[derive(Clone, Default)]
pub struct Held(Arc<Mutex<Reservation>>);

#[derive(Default)]
struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    units: usize,
}

impl Held {
    /// Reserves what a body of `body_bytes` is estimated to hold (nothing more when it
    /// already does); 503 `over-memory-budget` when the budget has not that much left.
    pub fn cover(&self, budget: &MemoryBudget, body_bytes: usize) -> Result<(), ApiError> {
        let want = body_bytes
            .saturating_mul(HELD_PER_BODY_BYTE)
            .div_ceil(UNIT)
            .min(budget.total_units);
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if want <= r.units {
            return Ok(());
        }
        let extra = u32::try_from(want - r.units).unwrap_or(u32::MAX);
        let more = Arc::clone(&budget.units)
            .try_acquire_many_owned(extra)
            .map_err(|_| {
                metrics::counter!(crate::telemetry::metric::MEMORY_BUDGET_REFUSALS.name)
                    .increment(1);
                ApiError::OverMemoryBudget
            })?;
        match &mut r.permit {
            Some(p) => p.merge(more),
            None => r.permit = Some(more),
        }
        r.units = want;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_grow_refuse_past_the_budget_and_come_back_when_dropped() {
        let budget = MemoryBudget::new(160 * UNIT);
        let a = Held::default();
        a.cover(&budget, 5 * UNIT).unwrap();
        assert_eq!(budget.reserved_bytes(), 80 * UNIT);
        // Growing to what it already holds takes nothing more.
        a.cover(&budget, 4 * UNIT).unwrap();
        assert_eq!(budget.reserved_bytes(), 80 * UNIT);
        let b = Held::default();
        b.cover(&budget, 5 * UNIT).unwrap();
        let c = Held::default();
        assert!(matches!(
            c.cover(&budget, UNIT),
            Err(ApiError::OverMemoryBudget)
        ));
        drop(a);
        assert_eq!(budget.reserved_bytes(), 80 * UNIT);
        c.cover(&budget, UNIT).unwrap();
        assert_eq!(budget.reserved_bytes(), 96 * UNIT);
    }

    #[test]
    fn a_body_larger_than_the_budget_runs_alone() {
        let budget = MemoryBudget::new(10 * UNIT);
        let big = Held::default();
        big.cover(&budget, 100 * UNIT).unwrap();
        assert_eq!(budget.reserved_bytes(), 10 * UNIT);
        assert!(Held::default().cover(&budget, 1).is_err());
        drop(big);
        assert_eq!(budget.reserved_bytes(), 0);
    }
}
