//! [`Summarize`] for the engine: what the pipelines call, with the metrics of every call.

use super::*;

/// The engine as the pipelines see it, with the metrics of every call.
impl Summarize for Engine {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        self.summarize_observed(req, model, &Silent)
    }

    fn summarize_observed<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
        sink: &'a dyn ProgressSink,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        Box::pin(async move {
            let result = Engine::summarize_with(self, req, model, sink).await;
            record(&result, self.uses_models());
            result
        })
    }

    fn summarize_model_only<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, ModelFailure>> + Send + 'a>> {
        self.summarize_model_only_observed(req, model, &Silent)
    }

    fn summarize_model_only_observed<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
        sink: &'a dyn ProgressSink,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, ModelFailure>> + Send + 'a>> {
        Box::pin(async move {
            let result = Engine::summarize_model_only_with(self, req, model, sink).await;
            let outcome = match &result {
                Ok(_) => "llm",
                Err(f) if f.aborts() => "aborted",
                Err(_) => "failed",
            };
            metrics::counter!("compactd_hermes_summaries_total", "outcome" => outcome).increment(1);
            result
        })
    }

    fn summarize_splittable<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        self.summarize_splittable_observed(req, model, &Silent)
    }

    fn summarize_splittable_observed<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
        sink: &'a dyn ProgressSink,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        Box::pin(async move {
            let result = Engine::summarize_splittable_with(self, req, model, sink).await;
            record(&result, self.uses_models());
            result
        })
    }

    fn context_window(&self, model: Option<&str>) -> Option<u64> {
        Engine::context_window(self, model)
    }

    fn context_window_for(&self, model: Option<&str>, strategy: Option<Strategy>) -> Option<u64> {
        Engine::context_window_for(self, model, strategy)
    }

    fn describe(&self) -> serde_json::Value {
        Engine::describe(self)
    }
}
