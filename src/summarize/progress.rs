//! Progress events: what a long compaction reports while it runs.
//!
//! The pipelines and the model engine report through a [`ProgressSink`] they are handed;
//! they never know where the events go (a Server-Sent Events stream, a job's event log,
//! or nowhere: [`Silent`]). The sink is a plain synchronous callback, so reporting costs
//! nothing when nobody listens and the pure core stays free of I/O (it reports nothing;
//! the pipeline reports around it).
//!
//! Design decisions:
//! * One typed enum, serialized as the `data` of an SSE event whose `event` name is
//!   [`ProgressEvent::name`]; the fields are camelCase like every answer.
//! * The engine does not know which part of a compaction it is answering; the pipeline
//!   wraps the sink in [`Scoped`], which stamps the part (`history`, chunk 2, …) on
//!   every event passing through.
//! * Upstream error text in `retry` and `fallback` is the engine's scrubbed text (keys
//!   removed), the same the logs get.
//! * `delta` carries token counts, never the text being written: the summary arrives
//!   once, whole and checked, in `result`; a count is what a progress bar needs, and
//!   a half-written summary is not worth a client's parsing.

use serde::Serialize;

/// Which part of a request a summarizer call is answering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// `history`, `turnPrefix`, `short`, `branch`, `summary` (`/v1/summarize`) or
    /// `hermes`; empty until a [`Scoped`] sink names it.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub part: &'static str,
    /// The 1-based pass of a chunked history summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u32>,
}

/// What was planned before any summarizer call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    /// The endpoint's work: `compact`, `branch-summary`, `summarize`, `hermes`.
    pub operation: &'static str,
    /// The first entry kept verbatim (compact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_split_turn: Option<bool>,
    /// Messages or entries going to the summarizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<usize>,
    /// The summarizer calls planned, by part (`history`, `turnPrefix`, `short`, …).
    pub parts: Vec<&'static str>,
    /// History passes planned (more than 1: chunked folding). An estimate when chunked:
    /// each later pass also carries the running summary, so there may be more.
    pub chunks: u32,
}

/// One event of a running compaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProgressEvent {
    /// The plan: cut point, tokens, parts and chunks.
    Prepared(Prepared),
    /// A summarizer call (one attempt at one model) starts.
    #[serde(rename_all = "camelCase")]
    Summarizing {
        #[serde(flatten)]
        part: Part,
        /// `name/model`, or `extractive`.
        model: String,
        /// 1-based attempt at this model.
        attempt: u32,
        /// Answered from the summary cache (no upstream call).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        cached: bool,
    },
    /// An attempt failed transiently; the next one comes after `waitMs`.
    #[serde(rename_all = "camelCase")]
    Retry {
        #[serde(flatten)]
        part: Part,
        model: String,
        /// The attempt that failed.
        attempt: u32,
        /// Why (upstream status and message, scrubbed of keys).
        reason: String,
        wait_ms: u64,
        /// `retry-after` (the upstream asked) or `backoff`.
        source: &'static str,
    },
    /// A model gave up; the next candidate, or the extractive summarizer, answers.
    #[serde(rename_all = "camelCase")]
    Fallback {
        #[serde(flatten)]
        part: Part,
        /// The model that failed (`name/model`); absent when the deadline passed.
        #[serde(skip_serializing_if = "Option::is_none")]
        from: Option<String>,
        /// The next candidate (`name/model`) or `extractive`.
        to: String,
        reason: String,
    },
    /// The model is writing: output tokens so far, from the upstream's stream. Throttled
    /// (the first token, then at most one every [`DELTA_INTERVAL`], and the final count
    /// when the stream ends), so a fast model does not flood clients and job logs.
    #[serde(rename_all = "camelCase")]
    Delta {
        #[serde(flatten)]
        part: Part,
        model: String,
        /// The attempt writing (a retry starts again from 0).
        attempt: u32,
        /// Tokens generated so far, reasoning included.
        output_tokens: u64,
        /// Of which reasoning (thinking), when the server streams it.
        #[serde(skip_serializing_if = "is_zero")]
        reasoning_tokens: u64,
        /// Counted from the streamed text with compactd's estimate (UTF-16 units / 4);
        /// `false` once the server reported its own count (at the end of the stream).
        estimated: bool,
    },
}

/// The shortest time between two `delta` events of one attempt.
pub const DELTA_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ProgressEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            ProgressEvent::Prepared(_) => "prepared",
            ProgressEvent::Summarizing { .. } => "summarizing",
            ProgressEvent::Retry { .. } => "retry",
            ProgressEvent::Fallback { .. } => "fallback",
            ProgressEvent::Delta { .. } => "delta",
        }
    }

    fn part_mut(&mut self) -> Option<&mut Part> {
        match self {
            ProgressEvent::Prepared(_) => None,
            ProgressEvent::Summarizing { part, .. }
            | ProgressEvent::Retry { part, .. }
            | ProgressEvent::Fallback { part, .. }
            | ProgressEvent::Delta { part, .. } => Some(part),
        }
    }
}

/// Where progress goes. Synchronous and cheap: implementations queue, never block.
pub trait ProgressSink: Send + Sync {
    fn emit(&self, event: ProgressEvent);
}

/// Nobody listens (plain requests, the command line).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl ProgressSink for Silent {
    fn emit(&self, _: ProgressEvent) {}
}

/// Stamps one part on every event going through (the engine does not know it).
pub struct Scoped<'a> {
    pub inner: &'a dyn ProgressSink,
    pub part: Part,
}

impl<'a> Scoped<'a> {
    pub fn new(inner: &'a dyn ProgressSink, part: &'static str, chunk: Option<u32>) -> Self {
        Scoped {
            inner,
            part: Part { part, chunk },
        }
    }
}

impl ProgressSink for Scoped<'_> {
    fn emit(&self, mut event: ProgressEvent) {
        if let Some(p) = event.part_mut() {
            if p.part.is_empty() {
                *p = self.part.clone();
            }
        }
        self.inner.emit(event);
    }
}

/// Collects events (tests, and the in-memory job log).
impl ProgressSink for std::sync::Mutex<Vec<ProgressEvent>> {
    fn emit(&self, event: ProgressEvent) {
        if let Ok(mut v) = self.lock() {
            v.push(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_sinks_stamp_the_part_and_events_serialize_flat() {
        let log = std::sync::Mutex::new(Vec::new());
        let scoped = Scoped::new(&log, "history", Some(2));
        scoped.emit(ProgressEvent::Retry {
            part: Part::default(),
            model: "local/m".into(),
            attempt: 1,
            reason: "status 503".into(),
            wait_ms: 250,
            source: "backoff",
        });
        let events = log.into_inner().unwrap();
        assert_eq!(events[0].name(), "retry");
        assert_eq!(
            serde_json::to_value(&events[0]).unwrap(),
            serde_json::json!({"part": "history", "chunk": 2, "model": "local/m",
                "attempt": 1, "reason": "status 503", "waitMs": 250, "source": "backoff"})
        );
    }
}
