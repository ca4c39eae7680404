//! compactd's pure core: what a pi compaction decides, with no I/O, no clock, no runtime
//! and no model calls. The service crate (HTTP, CLI, summarizers) is built on it; Cargo
//! keeps the dependency one way.
//!
//! Layers, bottom to top (a module uses only the ones before it):
//! * [`cancel`]: the cancellation token and the checkpoints every step calls;
//! * [`json`]: the JSON lexer the session reader and the `JSON.stringify` reader share;
//! * [`session`]: session files parsed, migrated and walked as a tree of entries, and
//!   the entries compactd writes into them;
//! * [`compaction`]: tokens, cut point, preparation, pruning, serialization, file
//!   operations, branch selection and the pinned ledger (`docs/algorithm.md`);
//! * [`recall`]: searching the entries a compaction took out of the context.

pub mod cancel;
pub mod compaction;
pub mod json;
pub mod recall;
pub mod session;
