//! [`Summarize`] for the engine: what the pipelines call, with the metrics of every call.

use super::*;
use crate::telemetry::metric;

/// The engine as the pipelines see it, with the metrics of every call: a model-only call
/// (hermes's) counts in `compactd_hermes_summaries_total`, every other in the summary
/// metrics.
impl Summarize for Engine {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        Box::pin(async move {
            let result = self.answer_in(req, mode, sink).await;
            if mode == Mode::ModelOnly {
                let outcome = match &result {
                    Ok(_) => "llm",
                    Err(f) if f.aborts() => "aborted",
                    Err(_) => "failed",
                };
                metrics::counter!(metric::HERMES_SUMMARIES.name, "outcome" => outcome).increment(1);
            } else {
                record(&result, self.uses_models());
            }
            result
        })
    }

    fn context_window(&self, model: Option<&str>, strategy: Option<Strategy>) -> Option<u64> {
        self.window(model, strategy)
    }

    fn describe(&self) -> serde_json::Value {
        self.description()
    }
}
