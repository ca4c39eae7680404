//! The request pipelines shared by the HTTP API and the command line:
//! input → session → preparation → (summarizer) → response.
//!
//! Each endpoint has one options type (`options`), read from a JSON body or a query
//! string and given to its pipeline: `prepare_response`, `compact::{plan, run_compaction}`,
//! `branch::{plan_branch_summary, run_branch_summary}`, `remote::{plan_remote,
//! run_remote}` (a prompt that arrives rendered), `prune::plan_prune`. The `plan*` steps
//! are synchronous (run off the async runtime) and decide everything a request asks for,
//! a dry run included ([`Planned`]); the `run_*` steps call the summarizer. The HTTP
//! handlers and the commands only read the request and deliver the answer.

pub mod arriving;
pub mod branch;
pub mod chat;
pub mod checked;
mod chunks;
pub mod compact;
mod conversation;
pub mod core_schemas;
pub mod fold;
pub mod hermes;
pub mod hermes_recall;
pub mod include;
pub mod input;
pub mod messages;
pub mod numbers;
pub mod object_only;
pub mod options;
pub mod outline;
mod pi_writer;
pub mod prepare;
mod prepare_json;
pub mod prune;
pub mod recall;
pub mod remote;
pub mod responses;
pub mod sources;

pub use input::{BodyFormat, SessionInput};
pub use options::{
    BranchSummaryOptions, CompactOptions, PrepareOptions, PruneOptions, RecallOptions,
};
pub use prepare::{prepare_response, PrepareResponse};

/// A request decided: an answer that needs no model (`dryRun`), or a plan to run.
#[derive(Debug)]
pub enum Planned<D, R> {
    DryRun(D),
    Run(R),
}

impl<D, R> Planned<D, R> {
    /// The dry run's answer turned into another (its bytes, while the input it borrows
    /// is alive).
    pub fn map_dry_run<E>(self, f: impl FnOnce(D) -> E) -> Planned<E, R> {
        match self {
            Planned::DryRun(d) => Planned::DryRun(f(d)),
            Planned::Run(r) => Planned::Run(r),
        }
    }
}
