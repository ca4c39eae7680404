//! Cancellation on the runtime's side: the token and checkpoints are the pure core's
//! (`compactd_core::cancel`); here CPU-bound work goes to tokio's blocking pool and is
//! cancelled when the future waiting for it is dropped. Jobs outlive their connection
//! because they are spawned tasks of their own; their work stops when the job is deleted
//! or its deadline passes, as a request's does.

mod offload;

pub use compactd_core::cancel::{checkpoint, run, CancelOnDrop, Cancelled, Token};
pub use offload::{offload, offloaded, spawn_blocking};
