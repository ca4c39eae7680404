//! Model summarizers: the OpenAI-compatible and Anthropic wire formats behind one
//! [`Engine`].
//!
//! The files, one idea each:
//!
//! * `engine.rs`: the [`Engine`] the pipelines call (through [`Summarize`]): the cache,
//!   the overall deadline, the retry loop per candidate and the fallback;
//! * `candidates.rs`: the model candidates built from configuration (each with the
//!   endpoint of its wire format) and which of them answer a call (and so whose context window applies);
//! * `error.rs`: [`EngineError`], why an engine cannot be built;
//! * `attempt.rs`: one HTTP exchange with one candidate: the request, sending it and
//!   classifying the answer as a summary or a failure;
//! * `outcome.rs`: what an attempt gives, an answer or a failure, and whether another
//!   attempt could succeed;
//! * `openai.rs`, `anthropic.rs`: the two wire formats, plain and streamed;
//! * `streaming.rs`: reading a streamed answer (the stall timer, the `delta` counts);
//! * `sse.rs`: the `text/event-stream` decoder it uses;
//! * `overflow.rs`: recognizing an answer that says the request exceeds the model's
//!   context window (each server's wording);
//! * `truncation.rs`: noticing a prompt the server cut silently (Ollama), from the
//!   prompt tokens it reports;
//! * `retry.rs`: which failures are worth another attempt and how long to wait;
//! * `cache.rs`: the in-memory cache of identical requests;
//! * `metrics.rs`: the metrics of one call;
//! * `moa.rs`: Mixture-of-Agents (proposers draft concurrently, an aggregator merges),
//!   on top of the engine's single-candidate runs.
//!
//! The imports between these files point one way: `engine` uses `candidates`,
//! `attempt`, `outcome`, `cache`, `retry`, `overflow`, `truncation` and `metrics`;
//! `attempt` uses `candidates`, `overflow`, `streaming` and the wire formats;
//! `streaming` uses `sse` and the wire formats; `candidates` uses
//! `outcome` (to learn from a failure);
//! the wire formats use `outcome`; `candidates` uses `error`; `moa` uses `engine` (whose
//! `Engine::summarize` calls the MoA method `moa` adds), `candidates` and `cache`. No file
//! uses one that uses it.
//!
//! # Design
//!
//! * **Candidates in order.** A call tries the configured candidates one after the other
//!   (or only the one the request names) and answers with the first that succeeds.
//! * **Retries.** Only transient failures are retried at the same candidate (no
//!   connection, no answer within `upstream_timeout`, a broken transfer, HTTP 408, 409,
//!   429 and 5xx), at most `retries` times, after a wait drawn with full jitter from an
//!   exponential backoff, or exactly the upstream's `Retry-After`. A wait that would pass
//!   the deadline is not taken: the engine moves to the next candidate instead. Anything
//!   else (4xx, a cut-off or empty answer, unparsable JSON) moves on at once.
//! * **Context overflow.** An answer saying the request exceeds the model's window is
//!   not retried as is: the candidate's assumed window shrinks (half of the smaller of
//!   the window and the request's estimate, at most the window the server named; kept
//!   for the life of the process, so the next plans fit at once) and the next candidate
//!   is tried. When none answers, a call in `Mode::Splittable` says `ContextOverflow` so
//!   a caller that folds (the compaction) splits and tries again; `Mode::WithFallback`
//!   falls back as for any failure, and `Mode::ModelOnly` says `ContextOverflow` too.
//! * **Provider quirks.** What a candidate sends beyond the prompt (token-limit
//!   parameter, sampling, reasoning effort or thinking budget, output cap, extra headers
//!   and query, Azure's URL and key header) comes from its options (`config::
//!   model_options`). Two things are learned from the server: a 400 that refuses the
//!   token-limit parameter sent switches to the other one (once per candidate), and one
//!   that refuses `temperature` stops sending it; the request is sent again at once (not
//!   a retry) and the change is kept for the candidate.
//! * **Streaming.** A candidate asks for its answer as a stream (unless `stream =
//!   false`): OpenAI-compatible and Azure with `stream_options.include_usage`, Anthropic
//!   with its event stream. The tokens written so far are reported as `delta` progress
//!   events (throttled), and a stream silent for the stall time (`model_stall_ms`,
//!   a candidate's `stall_ms`) is abandoned as `stalled` and retried like a timeout
//!   (`compactd_upstream_stalls_total{model}`). Errors before a stream are the same
//!   HTTP errors as without one; an error event mid-stream (Anthropic's
//!   `overloaded_error`) is the failure its status would be. The answer, usage and
//!   warnings are the same as a plain answer's. A server that refuses `stream_options`
//!   (a 400 naming it) is not asked to stream again.
//! * **Silent truncation.** An answer whose reported prompt tokens fall below a lower
//!   bound of what was sent carries a warning (`truncation.rs`).
//! * **Deadline.** One deadline (`deadline`) bounds the whole call, every candidate and
//!   wait included.
//! * **Fallback.** When every candidate failed or the deadline passed, the extractive
//!   summarizer answers (`fallback = extractive`), or the call fails with
//!   [`SummarizeError::Upstream`](crate::summarize::SummarizeError) or
//!   [`SummarizeError::Timeout`](crate::summarize::SummarizeError) (`fallback = none`).
//! * **Cache keys.** Identical requests to the same candidate list are answered from
//!   memory: the key is a SHA-256 digest of the candidates (name, kind, model, endpoint)
//!   and the request (system prompt, prompt, output budget). Only model answers are kept,
//!   never a fallback's.
//!
//! Nothing here is spawned or global: dropping the future of the engine's `summarize` (a
//! client that went away) drops the in-flight HTTP request, which closes its connection.
//! API keys live in [`SecretString`]s and in header values marked sensitive; no log line,
//! error, `Debug` output or description (`describe`) contains one, and URLs are shown without
//! their user info and query.
//!
//! [`Summarize`]: crate::summarize::Summarize

mod anthropic;
mod attempt;
mod cache;
mod candidates;
mod engine;
mod error;
mod flight;
mod metrics;
mod moa;
mod openai;
mod outcome;
mod overflow;
mod retry;
mod sse;
mod streaming;
mod truncation;

use secrecy::{ExposeSecret, SecretString};

use crate::config::redact_url;
pub use crate::config::{FallbackPolicy, LlmConfig, ModelConfig, ModelKind, SummarizerChoice};
pub use engine::{Engine, Fallback};
pub use error::EngineError;
pub use moa::best_draft;

/// The model name that always selects the extractive summarizer.
pub const EXTRACTIVE: &str = "extractive";

/// Every configured API key, to scrub from upstream text before it is logged or returned.
#[derive(Default)]
struct Secrets(Vec<SecretString>);

impl Secrets {
    /// `text` with every configured key replaced by `[REDACTED]`.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        for key in &self.0 {
            let key = key.expose_secret();
            if key.len() >= 4 && text.contains(key) {
                text = text.replace(key, "[REDACTED]");
            }
        }
        text
    }
}

/// At most `max` characters, with an ellipsis when shortened.
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_shortened() {
        assert_eq!(truncate(&"x".repeat(1000), 200).chars().count(), 201);
        assert_eq!(truncate("short", 200), "short");
    }

    #[test]
    fn keys_are_scrubbed() {
        let secrets = Secrets(vec!["sk-SECRET".into()]);
        assert_eq!(secrets.scrub("bad key sk-SECRET"), "bad key [REDACTED]");
    }
}
