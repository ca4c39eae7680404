//! compactd: server-side context compaction for pi-style coding agents.
//!
//! The cores are crates of their own, pure and without I/O: `compactd_core` (`json`,
//! `session`, `compaction`, the cancellation checkpoints) and `compactd_hermes`. This crate
//! is the service on top of them: the pipelines combine the cores with the summarizers;
//! the HTTP layer and the command line only call them, and `startup` wires the service
//! together for `compactd serve` and the API tests.

pub mod cancel;
pub mod cli;
pub mod config;
pub mod http;
pub mod pipeline;
pub mod startup;
pub mod state;
pub mod summarize;
pub mod telemetry;

// The cores, for this crate's users (its tests, benchmarks and fuzz targets) under the
// names they have always had; the service's own code names the crates themselves.
pub use compactd_core::{compaction, json, recall, session};
pub use compactd_hermes as hermes;
