//! The summarizer the pipelines call: the configured model engine, with the extractive
//! summarizer as its fallback (or as the summarizer itself).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::config::Config;
use crate::pipeline::compact::Summarize;

use super::llm::{Engine, Fallback};
use super::{extractive, SummarizeError, Summary, SummaryRequest};

/// Builds the summarizer from configuration.
pub fn build(config: &Config) -> Result<Arc<dyn Summarize>, String> {
    let fallback: Fallback = Arc::new(extractive::summarize);
    Ok(Arc::new(Engine::new(&config.llm, fallback)?))
}

impl Summarize for Engine {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        Box::pin(Engine::summarize(self, req, model))
    }

    fn context_window(&self, model: Option<&str>) -> Option<u64> {
        Engine::context_window(self, model)
    }

    fn describe(&self) -> serde_json::Value {
        Engine::describe(self)
    }
}
