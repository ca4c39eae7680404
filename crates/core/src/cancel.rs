//! Work that stops when nobody waits for it.
//!
//! A request's CPU-bound steps (reading a session, the ledger, the extractive summary,
//! hermes' compression) run on the blocking pool. When the client leaves or the deadline
//! passes, the future waiting for them is dropped; without more, the thread would go on
//! to the end and throw the answer away (a 20,000-turn prompt kept a core busy for 27 s
//! after its client left).
//!
//! Decisions:
//! * The cores stay free of any runtime and of any token parameter: a step calls
//!   [`checkpoint`] between units of work (a message, an entry, a section), and the
//!   token it checks is the one [`run`] set for the current thread. Outside [`run`] (the
//!   CLI, tests) a checkpoint does nothing.
//! * A cancelled checkpoint unwinds (`resume_unwind`, which runs no panic hook, so
//!   nothing is logged as a panic) back to [`run`], which returns [`Cancelled`]; any
//!   other panic goes on unwinding. This is how rust-analyzer cancels its queries: no
//!   `Result` threaded through every pure function for a case no caller can act on.
//! * Nothing is shared with the unwound work but its own data, which is dropped.
//! * The runtime side (the service's `cancel::offload`) ties a token to the future that
//!   waits: dropping the future cancels it. This crate knows no runtime.

use std::cell::RefCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Shared by the work and whoever may cancel it.
#[derive(Debug, Clone, Default)]
pub struct Token(Arc<AtomicBool>);

impl Token {
    pub fn new() -> Token {
        Token::default()
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// A guard that cancels the token when it is dropped.
    pub fn cancel_on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// Cancels its token when dropped.
#[derive(Debug)]
pub struct CancelOnDrop(Token);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The work was cancelled before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the work was cancelled")
    }
}

impl std::error::Error for Cancelled {}

thread_local! {
    static CURRENT: RefCell<Option<Token>> = const { RefCell::new(None) };
}

/// Stops the current work if its token was cancelled (see the module docs); cheap enough
/// to call once per message.
#[inline]
pub fn checkpoint() {
    let cancelled = CURRENT.with(|c| c.borrow().as_ref().is_some_and(Token::is_cancelled));
    if cancelled {
        resume_unwind(Box::new(Cancelled));
    }
}

/// Runs `f` on this thread with `token` as the one [`checkpoint`] checks.
pub fn run<T>(token: &Token, f: impl FnOnce() -> T) -> Result<T, Cancelled> {
    let previous = CURRENT.with(|c| c.replace(Some(token.clone())));
    let result = catch_unwind(AssertUnwindSafe(f));
    CURRENT.with(|c| *c.borrow_mut() = previous);
    match result {
        Ok(v) => Ok(v),
        Err(payload) => match payload.downcast::<Cancelled>() {
            Ok(_) => Err(Cancelled),
            Err(other) => resume_unwind(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_outside_run_does_nothing() {
        checkpoint();
    }

    #[test]
    fn a_cancelled_token_stops_the_work_at_its_next_checkpoint() {
        let token = Token::new();
        let mut steps = 0;
        let out = run(&token, || loop {
            checkpoint();
            steps += 1;
            if steps == 3 {
                token.cancel();
            }
        });
        assert_eq!(out, Err::<(), _>(Cancelled));
        assert_eq!(steps, 3);
        // The thread's token is put back: later work is not cancelled.
        checkpoint();
    }

    #[test]
    fn work_that_finishes_returns_its_value_and_other_panics_go_on() {
        let token = Token::new();
        assert_eq!(run(&token, || 7), Ok(7));
        let panicked = catch_unwind(|| run(&Token::new(), || panic!("a bug")));
        assert!(panicked.is_err());
    }

    #[test]
    fn dropping_the_guard_cancels() {
        let token = Token::new();
        drop(token.cancel_on_drop());
        assert!(token.is_cancelled());
    }
}
