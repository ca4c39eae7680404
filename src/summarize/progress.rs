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

/// The summarizer calls a request may make, as events name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PartName {
    /// The history before the cut (chunked: one pass per chunk).
    History,
    /// The start of a turn split by the cut.
    TurnPrefix,
    /// The short summary.
    Short,
    /// A branch summary.
    Branch,
    /// A rendered prompt (`/v1/summarize`, the remote body, the chat facade).
    Summary,
    /// A hermes compaction.
    Hermes,
}

/// Which part of a request a summarizer call is answering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Absent until a [`Scoped`] sink names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<PartName>,
    /// The 1-based pass of a chunked history summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u32>,
}

/// The endpoint's work, as `prepared` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    Compact,
    BranchSummary,
    Summarize,
    Hermes,
}

/// Why a retry waits as long as it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitSource {
    /// The upstream asked (`retry-after`).
    RetryAfter,
    /// compactd's exponential backoff.
    Backoff,
}

impl WaitSource {
    /// As events and logs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitSource::RetryAfter => "retry-after",
            WaitSource::Backoff => "backoff",
        }
    }
}

/// What was planned before any summarizer call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    pub operation: Operation,
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
    /// The summarizer calls planned, by part.
    pub parts: Vec<PartName>,
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
        source: WaitSource,
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
    pub fn new(inner: &'a dyn ProgressSink, part: PartName, chunk: Option<u32>) -> Self {
        Scoped {
            inner,
            part: Part {
                part: Some(part),
                chunk,
            },
        }
    }
}

impl ProgressSink for Scoped<'_> {
    fn emit(&self, mut event: ProgressEvent) {
        if let Some(p) = event.part_mut() {
            if p.part.is_none() {
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
        let scoped = Scoped::new(&log, PartName::History, Some(2));
        scoped.emit(ProgressEvent::Retry {
            part: Part::default(),
            model: "local/m".into(),
            attempt: 1,
            reason: "status 503".into(),
            wait_ms: 250,
            source: WaitSource::Backoff,
        });
        let events = log.into_inner().unwrap();
        assert_eq!(events[0].name(), "retry");
        assert_eq!(
            serde_json::to_value(&events[0]).unwrap(),
            serde_json::json!({"part": "history", "chunk": 2, "model": "local/m",
                "attempt": 1, "reason": "status 503", "waitMs": 250, "source": "backoff"})
        );
    }

    #[test]
    fn names_are_spelt_as_clients_read_them() {
        let spelt = |v: serde_json::Value| v.as_str().unwrap().to_string();
        let parts = [
            PartName::History,
            PartName::TurnPrefix,
            PartName::Short,
            PartName::Branch,
            PartName::Summary,
            PartName::Hermes,
        ]
        .map(|p| spelt(serde_json::to_value(p).unwrap()));
        assert_eq!(
            parts,
            [
                "history",
                "turnPrefix",
                "short",
                "branch",
                "summary",
                "hermes"
            ]
        );
        let ops = [
            Operation::Compact,
            Operation::BranchSummary,
            Operation::Summarize,
            Operation::Hermes,
        ]
        .map(|o| spelt(serde_json::to_value(o).unwrap()));
        assert_eq!(ops, ["compact", "branch-summary", "summarize", "hermes"]);
        for w in [WaitSource::RetryAfter, WaitSource::Backoff] {
            assert_eq!(spelt(serde_json::to_value(w).unwrap()), w.as_str());
        }
    }
}
