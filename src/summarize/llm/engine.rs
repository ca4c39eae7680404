//! The engine: one summarize call from start to answer.
//!
//! A call selects its candidates, answers from the cache when it can, and otherwise tries
//! the candidates in order within one overall deadline, retrying transient failures of a
//! candidate with backoff. When every candidate failed or the deadline passed, the
//! fallback policy decides: the extractive summarizer answers, or the call fails. The
//! [`Summarize`] implementation adds the metrics of every call.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::cache::SummaryCache;
use super::candidates::{Candidate, Candidates, Selection};
use super::error::EngineError;
use super::flight::Flights;
use super::metrics::record;
use super::outcome::{Answer, Failure, StreamedTokens};
use super::retry::Backoff;
use super::{attempt, overflow, truncation};
use super::{FallbackPolicy, LlmConfig, Secrets, SummarizerChoice};
use crate::config::{LlmDescription, Strategy};
use crate::summarize::{
    Answering, Mode, Part, ProgressEvent, ProgressSink, Summarize, SummarizeError, SummarizerKind,
    Summary, SummaryRequest,
};

/// The extractive summarizer, injected by the caller (it lives elsewhere).
pub type Fallback = Arc<dyn Fn(&SummaryRequest) -> Summary + Send + Sync>;

/// Summarizes with the configured model candidates; see the module documentation.
pub struct Engine {
    fallback_policy: FallbackPolicy,
    candidates: Candidates,
    client: reqwest::Client,
    fallback: Fallback,
    retries: u32,
    backoff: Backoff,
    upstream_timeout: Duration,
    /// The longest silence of a streamed answer (zero: unbounded), unless a candidate
    /// sets its own.
    stall: Duration,
    deadline: Duration,
    cache: SummaryCache,
    /// Identical calls in progress share one upstream call (single flight).
    flights: Flights<Result<Summary, Exhausted>>,
    /// The configuration's description; `describe` adds what the cache holds now.
    described: LlmDescription,
    /// Every configured key, to scrub from upstream text before it is logged or returned.
    secrets: Secrets,
    /// The `[moa]` table, if configured.
    moa: Option<Moa>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("summarizer", &self.candidates.summarizer)
            .field("fallback", &self.fallback_policy)
            .field("candidates", &self.candidates.list)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("stall", &self.stall)
            .field("deadline", &self.deadline)
            .field("cached_answers", &self.cache.len())
            .finish_non_exhaustive()
    }
}

/// What the attempts of one summarize call went through; kept outside the deadline so it
/// survives a timeout. Attempts, retries and candidate changes are reported to `sink`.
pub(super) struct Progress<'s> {
    pub(super) sink: &'s dyn ProgressSink,
    /// Retried attempts (the second and later attempts at a candidate).
    pub(super) retries: u32,
    /// One line per failed candidate.
    pub(super) failures: Vec<String>,
    /// Whether the last failure was one of access, connection or time.
    pub(super) out_of_reach: bool,
    /// Whether a candidate said the request exceeds its context window.
    pub(super) overflow: bool,
}

impl<'s> Progress<'s> {
    pub(super) fn new(sink: &'s dyn ProgressSink) -> Self {
        Progress {
            sink,
            retries: 0,
            failures: Vec::new(),
            out_of_reach: false,
            overflow: false,
        }
    }
}

/// How the candidates of one call failed.
#[derive(Clone)]
pub(super) struct Exhausted {
    pub(super) failures: String,
    pub(super) retries: u32,
    pub(super) deadline_passed: bool,
    pub(super) out_of_reach: bool,
    /// A candidate said the request exceeds its context window (a smaller request could
    /// succeed).
    pub(super) overflow: bool,
}

/// The `[moa]` table resolved to candidates (indices into the engine's list). It lives
/// here, where the engine is built; `moa.rs` (which runs it) imports it, so the imports
/// point one way.
#[derive(Debug)]
pub(super) struct Moa {
    pub(super) proposers: Vec<usize>,
    pub(super) aggregator: usize,
    pub(super) strategy: Strategy,
}

/// How one call is answered.
enum Route<'e> {
    Extractive,
    Single(Vec<&'e Candidate>),
    Moa(&'e Moa),
}

impl Engine {
    /// Built from configuration; `fallback` is the built-in extractive summarizer.
    pub fn new(config: &LlmConfig, fallback: Fallback) -> Result<Engine, EngineError> {
        config.validate()?;
        let list = config
            .models
            .iter()
            .map(Candidate::new)
            .collect::<Result<Vec<_>, _>>()?;
        // Keys and extra header values (a gateway's key may be one).
        let secrets = Secrets(
            config
                .models
                .iter()
                .flat_map(|m| {
                    m.api_key
                        .iter()
                        .cloned()
                        .chain(m.options.headers.iter().map(|(_, v)| v.clone()))
                })
                .collect(),
        );
        // Redirects are not followed: an `x-api-key` would go along to the new host.
        let client = reqwest::Client::builder()
            .user_agent(concat!("compactd/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| EngineError::HttpClient(e.without_url()))?;
        // Validated above: every `[moa]` name is a candidate's.
        let index = |name: &str| list.iter().position(|c| c.name == name).unwrap_or(0);
        let moa = config.moa.as_ref().map(|m| Moa {
            proposers: m.proposers.iter().map(|p| index(p)).collect(),
            aggregator: index(&m.aggregator),
            strategy: m.strategy,
        });
        Ok(Engine {
            moa,
            fallback_policy: config.fallback,
            candidates: Candidates {
                summarizer: config.summarizer,
                list,
            },
            client,
            fallback,
            retries: config.retries,
            backoff: Backoff {
                base: config.backoff_base,
                cap: config.backoff_cap.max(config.backoff_base),
            },
            upstream_timeout: config.upstream_timeout,
            stall: config.stall,
            deadline: config.deadline,
            cache: SummaryCache::new(config.cache_entries, config.cache_bytes),
            flights: Flights::default(),
            described: config.describe(),
            secrets,
        })
    }

    /// Answers `req` in `mode` (see [`Summarize::summarize`]); the trait adds the
    /// metrics.
    ///
    /// With the configured summarizer: when `summarizer = extractive` the fallback
    /// answers directly (summarizer: Extractive). Otherwise the model candidates are tried
    /// in order (or only the one the request names; an unknown name is
    /// `Err(UnknownModel)`). The name is matched against candidate names, then model ids,
    /// then `name/model`; `"extractive"` always selects the extractive summarizer, and a
    /// configured candidate may be named even when the default summarizer is extractive.
    async fn answer_in(
        &self,
        req: &SummaryRequest,
        mode: Mode,
        sink: &dyn ProgressSink,
    ) -> Result<Summary, SummarizeError> {
        match mode {
            Mode::WithFallback => self.summarize_full(req, false, sink).await,
            Mode::Splittable => self.summarize_full(req, true, sink).await,
            Mode::ModelOnly => self.model_only(req, sink).await,
        }
    }

    /// A model's answer, else the fallback's. `splittable`: when every candidate failed
    /// and one of them said the request exceeds its context window,
    /// `Err(ContextOverflow)` instead of the fallback: the caller splits the request (the
    /// window it should plan for is then already smaller) and tries again.
    async fn summarize_full(
        &self,
        req: &SummaryRequest,
        splittable: bool,
        sink: &dyn ProgressSink,
    ) -> Result<Summary, SummarizeError> {
        let answered = match self.route(req)? {
            Route::Extractive => {
                sink.emit(extractive_step());
                return self.extractive(req, 0).await;
            }
            Route::Single(candidates) => self.answer(&candidates, req, sink).await,
            Route::Moa(moa) => self.answer_moa(moa, req, sink).await,
        };
        let split = |e: &Exhausted| splittable && e.overflow && !e.deadline_passed;
        if let (Err(e), FallbackPolicy::Extractive) = (&answered, self.fallback_policy) {
            if !split(e) {
                sink.emit(ProgressEvent::Fallback {
                    part: Part::default(),
                    from: None,
                    to: super::EXTRACTIVE.into(),
                    reason: if e.deadline_passed {
                        "the summarizer deadline passed".into()
                    } else {
                        format!("every model candidate failed: {}", e.failures)
                    },
                });
            }
        }
        match answered {
            Ok(summary) => Ok(summary),
            Err(e) if split(&e) => Err(SummarizeError::ContextOverflow(e.failures)),
            Err(e) if !e.deadline_passed => match self.fallback_policy {
                FallbackPolicy::Extractive => {
                    tracing::warn!(
                        failures = %e.failures,
                        "every model candidate failed; answering with the extractive summarizer"
                    );
                    self.extractive(req, e.retries).await
                }
                FallbackPolicy::None => Err(SummarizeError::Upstream(e.failures)),
            },
            Err(e) => match self.fallback_policy {
                FallbackPolicy::Extractive => {
                    tracing::warn!(
                        deadline_ms = self.deadline.as_millis() as u64,
                        failures = %e.failures,
                        "summarizer deadline passed; answering with the extractive summarizer"
                    );
                    self.extractive(req, e.retries).await
                }
                FallbackPolicy::None => {
                    tracing::warn!(
                        deadline_ms = self.deadline.as_millis() as u64,
                        failures = %e.failures,
                        "summarizer deadline passed"
                    );
                    Err(SummarizeError::Timeout)
                }
            },
        }
    }

    /// A model's answer only ([`Mode::ModelOnly`]): the extractive summarizer never
    /// answers, and a failure says whether the model was out of reach.
    async fn model_only(
        &self,
        req: &SummaryRequest,
        sink: &dyn ProgressSink,
    ) -> Result<Summary, SummarizeError> {
        let answered = match self.route(req) {
            Ok(Route::Single(candidates)) => self.answer(&candidates, req, sink).await,
            Ok(Route::Moa(moa)) => self.answer_moa(moa, req, sink).await,
            Ok(Route::Extractive) => return Err(SummarizeError::NotConfigured),
            Err(e @ (SummarizeError::UnknownModel(_) | SummarizeError::NoMoa)) => return Err(e),
            Err(other) => return Err(SummarizeError::Failed(other.to_string())),
        };
        match answered {
            Ok(summary) => Ok(summary),
            Err(e) if e.deadline_passed => Err(SummarizeError::Unreachable(format!(
                "the summarizer deadline passed (timed out){}{}",
                if e.failures.is_empty() { "" } else { "; " },
                e.failures
            ))),
            Err(e) if e.out_of_reach => Err(SummarizeError::Unreachable(e.failures)),
            Err(e) if e.overflow => Err(SummarizeError::ContextOverflow(e.failures)),
            Err(e) => Err(SummarizeError::Failed(e.failures)),
        }
    }

    /// How a call is answered. The strategy is the request's, else `single` when the
    /// request names a model, else the `[moa]` default. `moa` uses the `[moa]` models
    /// (a named model is then not used); it needs a `[moa]` table.
    fn route(&self, req: &SummaryRequest) -> Result<Route<'_>, SummarizeError> {
        let model = req.model.as_deref();
        let strategy = match req.strategy {
            Some(s) => s,
            None if model.is_some() => Strategy::Single,
            None => self.moa.as_ref().map_or(Strategy::Single, |m| m.strategy),
        };
        if strategy == Strategy::Moa {
            return self
                .moa
                .as_ref()
                .map(Route::Moa)
                .ok_or(SummarizeError::NoMoa);
        }
        Ok(match self.candidates.select(model)? {
            Selection::Extractive => Route::Extractive,
            Selection::Models(c) => Route::Single(c),
        })
    }

    /// From the cache, or from the candidates (then cached).
    async fn answer(
        &self,
        candidates: &[&Candidate],
        req: &SummaryRequest,
        sink: &dyn ProgressSink,
    ) -> Result<Summary, Exhausted> {
        let key = SummaryCache::key(Strategy::Single, candidates, req);
        self.shared(key, sink, || async move {
            let answered = self.attempt_models(candidates, req, sink).await;
            if let Ok(summary) = &answered {
                self.cache.insert(key, summary.clone()).await;
            }
            answered
        })
        .await
    }

    pub(super) fn candidate(&self, index: usize) -> &Candidate {
        &self.candidates.list[index]
    }

    pub(super) fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The candidates in order within the deadline.
    async fn attempt_models(
        &self,
        candidates: &[&Candidate],
        req: &SummaryRequest,
        sink: &dyn ProgressSink,
    ) -> Result<Summary, Exhausted> {
        let deadline = Instant::now() + self.deadline;
        let mut progress = Progress::new(sink);
        let run = self.run(candidates, req, deadline, &mut progress);
        let answered = tokio::time::timeout_at(deadline, run).await;
        match answered {
            Ok(Some(summary)) => Ok(summary),
            Ok(None) => Err(Exhausted {
                failures: progress.failures.join("; "),
                retries: progress.retries,
                deadline_passed: false,
                out_of_reach: progress.out_of_reach,
                overflow: progress.overflow,
            }),
            Err(_) => Err(Exhausted {
                failures: progress.failures.join("; "),
                retries: progress.retries,
                deadline_passed: true,
                out_of_reach: true,
                overflow: progress.overflow,
            }),
        }
    }

    /// Whether model candidates answer (false: the extractive summarizer is configured).
    pub fn uses_models(&self) -> bool {
        self.candidates.summarizer != SummarizerChoice::Extractive
    }

    /// Context window (tokens) of the first candidate that would be tried; None for
    /// extractive. When the call would be answered by Mixture-of-Agents (the strategy,
    /// else the `[moa]` default with no model named, as [`Engine::route`] decides), the
    /// smallest window of the MoA models, so a request chunked for it fits every proposer
    /// and the aggregator.
    fn window(&self, model: Option<&str>, strategy: Option<Strategy>) -> Option<u64> {
        let strategy = match strategy {
            Some(s) => s,
            None if model.is_some() => Strategy::Single,
            None => self.moa.as_ref().map_or(Strategy::Single, |m| m.strategy),
        };
        match &self.moa {
            Some(moa) if strategy == Strategy::Moa => moa
                .proposers
                .iter()
                .chain(std::iter::once(&moa.aggregator))
                .map(|&i| self.candidate(i).window())
                .min(),
            _ => self.candidates.context_window(model),
        }
    }

    /// Non-secret description for GET /v1/config: summarizer, fallback, candidates (name,
    /// kind, baseUrl, contextWindow, whether a key is set — never the key), timeouts,
    /// retries.
    fn description(&self) -> serde_json::Value {
        let mut described = self.described.clone();
        described.cache.entries = self.cache.len();
        serde_json::to_value(described).expect("a description is plain data")
    }

    /// The extractive summary, on the blocking pool: it is CPU-bound and stops when the
    /// caller is dropped (see `cancel`).
    async fn extractive(
        &self,
        req: &SummaryRequest,
        retries: u32,
    ) -> Result<Summary, SummarizeError> {
        let (fallback, req) = (self.fallback.clone(), req.clone());
        let summary = crate::cancel::offload(move || fallback(&req))
            .await
            .map_err(|_| SummarizeError::Timeout)?;
        Ok(Summary {
            summarizer: SummarizerKind::Extractive,
            retries,
            cached: false,
            moa: None,
            ..summary
        })
    }
}

/// The extractive summarizer answers (configured, or named by the request).
fn extractive_step() -> ProgressEvent {
    ProgressEvent::Summarizing {
        part: Part::default(),
        model: super::EXTRACTIVE.into(),
        attempt: 1,
        cached: false,
    }
}

mod as_summarizer;
mod attempts;
mod shared;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::llm::EXTRACTIVE;
    use crate::summarize::Usage;

    #[test]
    fn summarize_future_is_send() {
        fn send<T: Send>(_: &T) {}
        let engine = Engine::new(
            &LlmConfig::default(),
            Arc::new(|_: &SummaryRequest| Summary {
                text: String::new(),
                usage: Usage::default(),
                model: EXTRACTIVE.into(),
                summarizer: SummarizerKind::Extractive,
                retries: 0,
                cached: false,
                moa: None,
                warnings: Vec::new(),
            }),
        )
        .unwrap();
        let req = SummaryRequest {
            kind: crate::summarize::RequestKind::History,
            system_prompt: String::new(),
            prompt: String::new(),
            max_tokens: 1,
            strategy: None,
            model: None,
            ledger: None,
        };
        send(&engine.summarize(&req, Mode::WithFallback, &crate::summarize::Silent));
        fn sync<T: Send + Sync>(_: &T) {}
        sync(&engine);
    }
}
