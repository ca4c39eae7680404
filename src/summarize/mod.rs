//! Summarizers and the prompts they are given.

pub mod templates;

pub use templates::{PromptOptions, Prompts, RequestKind, SummaryRequest};
