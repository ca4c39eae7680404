//! compactd: server-side context compaction for pi-style coding agents.
//!
//! The core (`json`, `session`, `compaction`) is pure and does no I/O. The pipelines
//! combine it with the summarizers; the HTTP layer and the command line only call them,
//! and `startup` wires the service together for `compactd serve` and the API tests.

pub mod cancel;
pub mod cli;
pub mod compaction;
pub mod config;
pub mod hermes;
pub mod http;
pub mod json;
pub mod pipeline;
pub mod session;
pub mod startup;
pub mod state;
pub mod summarize;
pub mod telemetry;
