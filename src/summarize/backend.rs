//! The summarizer the pipelines call: the configured model engine, with the extractive
//! summarizer as its fallback (or as the summarizer itself).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::config::Config;
use crate::summarize::Summarize;

use super::llm::{Engine, Fallback};
use super::{extractive, SummarizeError, Summary, SummaryRequest};

/// Metrics of one summarize call.
fn record(result: &Result<Summary, SummarizeError>, uses_models: bool) {
    use super::SummarizerKind;
    match result {
        Ok(s) => {
            let kind = match s.summarizer {
                SummarizerKind::Llm => "llm",
                SummarizerKind::Extractive => "extractive",
            };
            metrics::counter!("compactd_summaries_total", "summarizer" => kind).increment(1);
            metrics::counter!("compactd_tokens_total", "direction" => "input")
                .increment(s.usage.input);
            metrics::counter!("compactd_tokens_total", "direction" => "output")
                .increment(s.usage.output);
            metrics::counter!("compactd_upstream_retries_total").increment(u64::from(s.retries));
            if s.cached {
                metrics::counter!("compactd_cache_hits_total").increment(1);
            } else if s.summarizer == SummarizerKind::Llm {
                metrics::counter!("compactd_upstream_attempts_total")
                    .increment(u64::from(s.retries) + 1);
            } else if uses_models {
                metrics::counter!("compactd_fallbacks_total").increment(1);
            }
        }
        Err(e) => {
            let kind = match e {
                SummarizeError::Upstream(_) => "upstream",
                SummarizeError::Timeout => "timeout",
                SummarizeError::UnknownModel(_) => "unknown_model",
            };
            metrics::counter!("compactd_summarize_errors_total", "kind" => kind).increment(1);
        }
    }
}

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
        Box::pin(async move {
            let result = Engine::summarize(self, req, model).await;
            record(&result, self.uses_models());
            result
        })
    }

    fn context_window(&self, model: Option<&str>) -> Option<u64> {
        Engine::context_window(self, model)
    }

    fn describe(&self) -> serde_json::Value {
        Engine::describe(self)
    }
}
