//! Summarizers and the prompts they are given.
//!
//! Every summarizer answers a [`SummaryRequest`] (system prompt, prompt, output budget)
//! with a [`Summary`]. The built-in extractive summarizer needs no network; model
//! summarizers speak the OpenAI-compatible and Anthropic wire formats.
//!
//! [`Summarize`] is the one interface the pipelines call. It lives here, below the
//! pipelines, so that `summarize` never imports from a layer above it; the pipelines, the
//! HTTP layer and the tests (with summarizers of their own) depend on it.

pub mod backend;
pub mod extractive;
pub mod llm;
pub mod progress;
pub mod templates;

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub use crate::config::Strategy;
pub use progress::{Part, Prepared, ProgressEvent, ProgressSink, Scoped, Silent, DELTA_INTERVAL};
pub use templates::{PromptOptions, Prompts, RequestKind, SummaryRequest, CONVERSATION_OPEN};

/// Token usage, in pi's shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    /// Output tokens the model spent reasoning (included in `output`; OpenAI's
    /// `completion_tokens_details.reasoning_tokens`). Absent when none were reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.reasoning += other.reasoning;
    }
}

/// Which kind of summarizer wrote a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SummarizerKind {
    /// A model (OpenAI-compatible or Anthropic).
    Llm,
    /// The built-in deterministic summarizer.
    Extractive,
}

/// A summarizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub text: String,
    pub usage: Usage,
    /// `provider/model` for models, `extractive` otherwise.
    pub model: String,
    pub summarizer: SummarizerKind,
    /// Retried upstream attempts (0 when the first attempt answered).
    pub retries: u32,
    /// Served from the in-memory cache of identical requests.
    pub cached: bool,
    /// Which models took part when Mixture-of-Agents wrote it (`None`: one model, or
    /// the extractive summarizer).
    pub moa: Option<MoaReport>,
    /// What the caller should know about how it was written (a server that cut the
    /// prompt silently); the answers carry them as `warnings`.
    pub warnings: Vec<String>,
}

/// Which models took part in a Mixture-of-Agents summary, by their `[[models]]` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoaReport {
    /// The proposers whose drafts were used, in configured order.
    pub proposers: Vec<String>,
    /// The proposers that gave no draft (left out).
    pub failed: Vec<String>,
    /// The aggregator that wrote the summary; `null` when it failed and the best draft
    /// answered.
    pub aggregator: Option<String>,
    /// The proposer whose draft answered, when the aggregator failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<String>,
}

/// Why no summary could be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummarizeError {
    /// Every model candidate failed and no fallback is allowed (502).
    #[error("every model candidate failed: {0}")]
    Upstream(String),
    /// The summarizer deadline passed (504).
    #[error("the summarizer deadline passed")]
    Timeout,
    /// The request names a model that is not configured (422).
    #[error("no configured model is named {0:?}")]
    UnknownModel(String),
    /// The request asks for `strategy: moa` and no `[moa]` table is configured (422).
    #[error("strategy \"moa\" needs a [moa] table (proposers, aggregator) in the configuration")]
    NoMoa,
    /// The request exceeds the context window of every model that was tried: only
    /// [`Summarize::summarize_splittable`] answers it (502 if it escapes), and the caller
    /// splits the request and tries again; the window to plan for is then
    /// [`Summarize::context_window`] (the engine has shrunk it).
    #[error("the request exceeds the model's context window: {0}")]
    ContextOverflow(String),
}

/// Why a model gave no summary, classified for callers that have their own fallback
/// (the hermes endpoints): hermes keeps the session unchanged when the model is out of
/// reach and writes its static summary for every other failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelFailure {
    /// No model is configured (the extractive summarizer would answer).
    #[error("no auxiliary LLM provider configured")]
    NotConfigured,
    /// The request names a model that is not configured (422).
    #[error("no configured model is named {0:?}")]
    UnknownModel(String),
    /// `strategy: moa` without a `[moa]` table (422).
    #[error("strategy \"moa\" needs a [moa] table (proposers, aggregator) in the configuration")]
    NoMoa,
    /// No access (401, 402, 403), no connection, or no answer in time (a timeout, 408,
    /// 504, or the deadline).
    #[error("{0}")]
    Unreachable(String),
    /// The request exceeds the model's context window (no candidate answered, one of
    /// them said so). A caller that can split the request does and tries again, planning
    /// for [`Summarize::context_window`], which the engine has shrunk for that model;
    /// one that cannot treats it like [`ModelFailure::Failed`] (hermes does).
    #[error("the request exceeds the model's context window: {0}")]
    ContextOverflow(String),
    /// Anything else: other statuses, unreadable or empty answers.
    #[error("{0}")]
    Failed(String),
}

impl ModelFailure {
    /// Whether hermes would abort the compaction rather than write its fallback summary.
    pub fn aborts(&self) -> bool {
        matches!(self, ModelFailure::Unreachable(_))
    }
}

/// What the pipelines need from a summarizer: `/v1/compact`, `/v1/summarize`,
/// `/v1/branch-summary` and their commands call it.
pub trait Summarize: Send + Sync {
    /// Answers one request; `model` names a configured model (`None`: the default).
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>>;

    /// Answers one request with a model only: no extractive fallback, and the failure
    /// classified. The default serves summarizers without models (tests, extractive).
    fn summarize_model_only<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, ModelFailure>> + Send + 'a>> {
        Box::pin(async move {
            match self.summarize(req, model).await {
                Ok(s) if s.summarizer == SummarizerKind::Extractive => {
                    Err(ModelFailure::NotConfigured)
                }
                Ok(s) => Ok(s),
                Err(SummarizeError::UnknownModel(m)) => Err(ModelFailure::UnknownModel(m)),
                Err(SummarizeError::NoMoa) => Err(ModelFailure::NoMoa),
                Err(SummarizeError::Timeout) => Err(ModelFailure::Unreachable(
                    "the summarizer deadline passed (timed out)".into(),
                )),
                Err(SummarizeError::Upstream(m)) => Err(ModelFailure::Failed(m)),
                Err(SummarizeError::ContextOverflow(m)) => Err(ModelFailure::ContextOverflow(m)),
            }
        })
    }

    /// [`Summarize::summarize`], reporting its attempts, retries and fallbacks to `sink`.
    /// The default (summarizers without attempts) reports one `summarizing` event.
    fn summarize_observed<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
        sink: &'a dyn ProgressSink,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        sink.emit(ProgressEvent::Summarizing {
            part: Part::default(),
            model: model.unwrap_or("default").to_string(),
            attempt: 1,
            cached: false,
        });
        self.summarize(req, model)
    }

    /// [`Summarize::summarize_model_only`], reporting to `sink`.
    fn summarize_model_only_observed<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
        sink: &'a dyn ProgressSink,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, ModelFailure>> + Send + 'a>> {
        sink.emit(ProgressEvent::Summarizing {
            part: Part::default(),
            model: model.unwrap_or("default").to_string(),
            attempt: 1,
            cached: false,
        });
        self.summarize_model_only(req, model)
    }

    /// Like [`Summarize::summarize`] for a caller that can split its request: when the
    /// request exceeds the model's context window, `Err(ContextOverflow)` instead of the
    /// fallback. The default serves summarizers without windows (tests, extractive).
    fn summarize_splittable<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        self.summarize(req, model)
    }

    /// [`Summarize::summarize_splittable`], reporting to `sink`.
    fn summarize_splittable_observed<'a>(
        &'a self,
        req: &'a SummaryRequest,
        model: Option<&'a str>,
        sink: &'a dyn ProgressSink,
    ) -> Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>> {
        sink.emit(ProgressEvent::Summarizing {
            part: Part::default(),
            model: model.unwrap_or("default").to_string(),
            attempt: 1,
            cached: false,
        });
        self.summarize_splittable(req, model)
    }

    /// Context window of the model that would answer, if any (extractive: none).
    fn context_window(&self, model: Option<&str>) -> Option<u64>;

    /// Context window of what would answer a request with this strategy (`None`: the
    /// configured default): the smallest window of the Mixture-of-Agents models when they
    /// would answer. The default serves summarizers without strategies.
    fn context_window_for(&self, model: Option<&str>, strategy: Option<Strategy>) -> Option<u64> {
        let _ = strategy;
        self.context_window(model)
    }

    /// Non-secret description for `GET /v1/config`.
    fn describe(&self) -> serde_json::Value;
}
