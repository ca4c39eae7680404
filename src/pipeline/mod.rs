//! The request pipelines shared by the HTTP API and the command line:
//! input → session → preparation → (summarizer) → response.

pub mod branch;
pub mod compact;
pub mod input;
pub mod numbers;
pub mod object_only;
pub mod options;
pub mod prepare;
pub mod prune;

pub use input::{BodyFormat, SessionInput};
pub use options::{BranchSummaryOptions, CompactOptions, PrepareOptions, PruneOptions};
pub use prepare::{prepare_response, PrepareResponse};
