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
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::config::Strategy;
use compactd_core::compaction::ledger::Ledger;
pub use progress::{
    Operation, Part, PartName, Prepared, ProgressEvent, ProgressSink, Scoped, Silent, WaitSource,
    DELTA_INTERVAL,
};
pub use templates::{PromptOptions, Prompts, RequestKind, CONVERSATION_OPEN};

/// One summarizer call; also a valid remoteEndpoint body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    pub kind: RequestKind,
    pub system_prompt: String,
    pub prompt: String,
    pub max_tokens: u64,
    /// The request's strategy (`None`: the configured default). Not part of the
    /// remoteEndpoint body: the summarizer reads it, no model sees it.
    #[serde(skip)]
    #[schema(ignore)]
    pub strategy: Option<Strategy>,
    /// The configured model the request names (`None`: the default). Like `strategy`,
    /// read by the summarizer and never sent.
    #[serde(skip)]
    #[schema(ignore)]
    pub model: Option<String>,
    /// The pinned ledger of exactly what the prompt's conversation holds, when the caller
    /// built it already (a compaction's plan): the extractive summarizer states its items
    /// instead of reading them out of the prompt again, which would cost as much as the
    /// plan's own extraction. Never sent; a request without one (a remoteEndpoint body)
    /// is read from its prompt.
    #[serde(skip)]
    #[schema(ignore)]
    pub ledger: Option<Arc<Ledger>>,
}

impl SummaryRequest {
    /// The request for `model` with `strategy` (`None`: the configured defaults). The
    /// prompt builders leave both to the default; the pipelines set the caller's.
    pub fn for_model(self, model: Option<&str>, strategy: Option<Strategy>) -> Self {
        SummaryRequest {
            model: model.map(str::to_string),
            strategy,
            ..self
        }
    }

    /// The request with the pinned ledger of its conversation (see [`SummaryRequest::ledger`]).
    pub fn with_ledger(self, ledger: Arc<Ledger>) -> Self {
        SummaryRequest {
            ledger: Some(ledger),
            ..self
        }
    }
}

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

    /// The `usage` of a compaction or branch_summary entry as newer pi records it: these
    /// counts and a `cost` object. compactd knows no prices, so every cost is 0 (pi adds
    /// `cost.total` when it totals a session, so the object must be there).
    pub fn entry_value(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).expect("counts serialize");
        value["cost"] = serde_json::json!({
            "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0
        });
        value
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
    /// The request exceeds the context window of every model that was tried (no
    /// candidate answered, one of them said so). [`Mode::Splittable`] and
    /// [`Mode::ModelOnly`] answer it (502 if it escapes): a caller that can split the
    /// request does and tries again, planning for [`Summarize::context_window`], which
    /// the engine has shrunk for that model; one that cannot treats it like
    /// [`SummarizeError::Failed`] (hermes does).
    #[error("the request exceeds the model's context window: {0}")]
    ContextOverflow(String),
    /// [`Mode::ModelOnly`]: no model is configured (the extractive summarizer would
    /// answer).
    #[error("no auxiliary LLM provider configured")]
    NotConfigured,
    /// [`Mode::ModelOnly`]: no access (401, 402, 403), no connection, or no answer in
    /// time (a timeout, 408, 504, or the deadline).
    #[error("{0}")]
    Unreachable(String),
    /// [`Mode::ModelOnly`]: anything else (other statuses, unreadable or empty answers).
    #[error("{0}")]
    Failed(String),
}

impl SummarizeError {
    /// Whether the model was out of reach (no access, no connection, no answer in time),
    /// rather than failing with an answer: hermes then aborts the compaction instead of
    /// writing its static fallback summary.
    pub fn aborts(&self) -> bool {
        matches!(
            self,
            SummarizeError::Unreachable(_) | SummarizeError::Timeout
        )
    }

    /// The classification [`Mode::ModelOnly`] reports for a failure of the call with a
    /// fallback: only a timeout is out of reach, and a failed upstream has its own words.
    fn model_only(self) -> SummarizeError {
        match self {
            SummarizeError::Timeout => {
                SummarizeError::Unreachable("the summarizer deadline passed (timed out)".into())
            }
            SummarizeError::Upstream(m) => SummarizeError::Failed(m),
            other => other,
        }
    }
}

/// How a summary may be written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// By a model, else by the configured fallback (the extractive summarizer).
    #[default]
    WithFallback,
    /// By a model only: no extractive fallback, and a failure classified
    /// ([`SummarizeError::aborts`]) for a caller with a fallback of its own (hermes).
    ModelOnly,
    /// As [`Mode::WithFallback`], for a caller that can split its request: a request
    /// larger than the model's context window is `Err(ContextOverflow)` instead of the
    /// fallback.
    Splittable,
}

/// A summary being written.
pub type Answering<'a> = Pin<Box<dyn Future<Output = Result<Summary, SummarizeError>> + Send + 'a>>;

/// What the pipelines need from a summarizer: `/v1/compact`, `/v1/summarize`,
/// `/v1/branch-summary`, hermes and their commands call it.
pub trait Summarize: Send + Sync {
    /// Answers one request in `mode`, for the model and strategy the request names
    /// (`None`: the configured default), reporting attempts, retries and fallbacks to
    /// `sink` (callers with nothing to report pass `&Silent`).
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a>;

    /// Context window (tokens) of what would answer a request for `model` with
    /// `strategy` (`None`: the configured defaults): the smallest window of the
    /// Mixture-of-Agents models when they would answer; `None` for the extractive
    /// summarizer.
    fn context_window(&self, model: Option<&str>, strategy: Option<Strategy>) -> Option<u64>;

    /// Non-secret description for `GET /v1/config`.
    fn describe(&self) -> serde_json::Value;
}

/// [`Summarize::summarize`] for a summarizer with no models, attempts or modes of its own
/// (the extractive one, and test doubles): one `summarizing` event, then `answer`; in
/// [`Mode::ModelOnly`] an extractive answer is `NotConfigured` and a failure is classified.
pub fn answer_plainly<'a>(
    req: &'a SummaryRequest,
    mode: Mode,
    sink: &'a dyn ProgressSink,
    answer: impl Future<Output = Result<Summary, SummarizeError>> + Send + 'a,
) -> Answering<'a> {
    // Emitted when the call is made, not when first polled: concurrent calls report in
    // the order they were made.
    sink.emit(ProgressEvent::Summarizing {
        part: Part::default(),
        model: req.model.as_deref().unwrap_or("default").to_string(),
        attempt: 1,
        cached: false,
    });
    Box::pin(async move {
        let answered = answer.await;
        if mode != Mode::ModelOnly {
            return answered;
        }
        match answered {
            Ok(s) if s.summarizer == SummarizerKind::Extractive => {
                Err(SummarizeError::NotConfigured)
            }
            Ok(s) => Ok(s),
            Err(e) => Err(e.model_only()),
        }
    })
}
