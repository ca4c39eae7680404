//! The summarizer the pipelines call: the configured model engine, with the extractive
//! summarizer as its fallback (or as the summarizer itself).

use std::sync::Arc;

use crate::config::Config;
use crate::state::SharedCache;

use super::llm::{Engine, EngineError, Fallback};
use super::{extractive, Summarize};

/// Builds the summarizer from configuration.
pub fn build(config: &Config) -> Result<Arc<dyn Summarize>, EngineError> {
    build_shared(config, None)
}

/// [`build`], with the summary cache's tier shared by the replicas (the server's, when
/// `COMPACTD_REDIS_URL` is set).
pub fn build_shared(
    config: &Config,
    shared: Option<SharedCache>,
) -> Result<Arc<dyn Summarize>, EngineError> {
    let fallback: Fallback = Arc::new(extractive::summarize);
    let mut engine = Engine::new(&config.llm, fallback)?;
    if let Some(shared) = shared {
        engine.share_cache(shared);
    }
    Ok(Arc::new(engine))
}
