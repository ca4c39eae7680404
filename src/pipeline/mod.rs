//! The request pipelines shared by the HTTP API and the command line:
//! input → session → preparation → (summarizer) → response.
//!
//! Each endpoint has one options type (`options`), read from a JSON body or a query
//! string and given to its pipeline: `prepare_response`, `compact::{plan_compaction,
//! run_compaction}`, `branch::{plan_branch_summary, run_branch_summary}`,
//! `prune::plan_prune`. The `plan_*` steps are synchronous (run off the async runtime);
//! the `run_*` steps call the summarizer.

pub mod arriving;
pub mod branch;
pub mod chat;
pub mod checked;
pub mod compact;
mod conversation;
pub mod core_schemas;
pub mod fold;
pub mod hermes;
pub mod include;
pub mod input;
pub mod numbers;
pub mod object_only;
pub mod options;
pub mod outline;
pub mod prepare;
mod prepare_json;
pub mod prune;
pub mod sources;

pub use input::{BodyFormat, SessionInput};
pub use options::{BranchSummaryOptions, CompactOptions, PrepareOptions, PruneOptions};
pub use prepare::{prepare_response, PrepareResponse};
