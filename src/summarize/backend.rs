//! The summarizer the pipelines call: the configured model engine, with the extractive
//! summarizer as its fallback (or as the summarizer itself).

use std::sync::Arc;

use crate::config::Config;

use super::llm::{Engine, EngineError, Fallback};
use super::{extractive, Summarize};

/// Builds the summarizer from configuration.
pub fn build(config: &Config) -> Result<Arc<dyn Summarize>, EngineError> {
    let fallback: Fallback = Arc::new(extractive::summarize);
    Ok(Arc::new(Engine::new(&config.llm, fallback)?))
}
