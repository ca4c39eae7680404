//! CPU-bound work on tokio's blocking pool, cancelled when nobody waits for it.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{run, Cancelled, Token};

/// Work done on the blocking pool so far (see [`offloaded`]).
static OFFLOADED: AtomicU64 = AtomicU64::new(0);

/// How many pieces of offloaded work finished since start-up: start-up's memory trimmer
/// gives freed memory back only after work was done.
pub fn offloaded() -> u64 {
    OFFLOADED.load(Ordering::Relaxed)
}

/// `tokio::task::spawn_blocking`, counted when it ends (see [`offloaded`]).
pub fn spawn_blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    struct Count;
    impl Drop for Count {
        // Also when `f` unwinds: its memory was freed all the same.
        fn drop(&mut self) {
            OFFLOADED.fetch_add(1, Ordering::Relaxed);
        }
    }
    tokio::task::spawn_blocking(move || {
        let _count = Count;
        f()
    })
}

/// Runs `f` on the blocking pool; dropping the returned future (the client left, a
/// deadline passed, a job was deleted) cancels it at its next checkpoint. A panic in `f`
/// goes on in the caller, as if `f` had run there.
pub async fn offload<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Cancelled> {
    let token = Token::new();
    let _cancel_when_dropped = token.cancel_on_drop();
    let worker = token.clone();
    match spawn_blocking(move || run(&worker, f)).await {
        Ok(out) => out,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down.
        Err(_) => Err(Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::cancel::checkpoint;

    #[tokio::test]
    async fn dropping_the_future_stops_the_work() {
        let steps = Arc::new(AtomicUsize::new(0));
        let counted = steps.clone();
        let work = offload(move || loop {
            checkpoint();
            counted.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(1));
        });
        // The work runs while its future waits, and stops once the future is gone.
        let _ = tokio::time::timeout(Duration::from_millis(50), work).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let after_drop = steps.load(Ordering::Relaxed);
        assert!(after_drop > 0);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(steps.load(Ordering::Relaxed) <= after_drop + 1);
    }

    #[tokio::test]
    async fn finished_work_is_answered() {
        assert_eq!(offload(|| 6 * 7).await, Ok(42));
    }
}
