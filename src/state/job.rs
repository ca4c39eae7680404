//! What a job is, whichever store keeps it: its owner, status, events and snapshot.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

/// Who created a job: the digest of its API key (all zeros without authentication).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Owner(pub [u8; 32]);

impl Owner {
    pub fn hex(&self) -> String {
        hex(&self.0)
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl Status {
    pub fn is_done(self) -> bool {
        matches!(self, Status::Succeeded | Status::Failed | Status::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Status> {
        [
            Status::Queued,
            Status::Running,
            Status::Succeeded,
            Status::Failed,
            Status::Cancelled,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// How a job's log ends: its last event, named `result` or `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The answer (JSON), as the plain request would have had it.
    Result,
    /// The problem document.
    Error,
}

impl Outcome {
    /// The SSE event name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::Error => "error",
        }
    }
}

/// One logged event: its SSE name and JSON data. The name is text because logs in Redis
/// are read back as text; [`Logged::outcome`] is the one place it is matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub name: Arc<str>,
    pub data: Arc<str>,
}

impl Logged {
    pub fn new(name: &str, data: impl Into<Arc<str>>) -> Self {
        Logged {
            name: Arc::from(name),
            data: data.into(),
        }
    }

    /// The last event of a job.
    pub fn ending(outcome: Outcome, data: impl Into<Arc<str>>) -> Self {
        Logged::new(outcome.name(), data)
    }

    /// Which ending this event is, if it is one.
    pub fn outcome(&self) -> Option<Outcome> {
        [Outcome::Result, Outcome::Error]
            .into_iter()
            .find(|o| o.name() == &*self.name)
    }

    /// `result` or `error`: the last event of a job.
    pub fn is_terminal(&self) -> bool {
        self.outcome().is_some()
    }
}

/// What a reader sees of a job.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub id: String,
    pub operation: String,
    pub status: Status,
    pub created: SystemTime,
    pub finished: Option<SystemTime>,
    pub expires: Option<SystemTime>,
    pub events: usize,
    /// The newest progress event (not the terminal one).
    pub progress: Option<Logged>,
    /// The terminal event, when done.
    pub outcome: Option<Logged>,
    /// The HTTP status the plain request would have answered (when done).
    pub http_status: Option<u16>,
}

/// What `begin` decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Begin {
    /// A new job: run the work.
    New(String),
    /// The same key and body: join this job.
    Existing(String),
    /// The same key with another body (422).
    Mismatch,
}

/// Events read from a job's log.
#[derive(Debug, Default)]
pub struct Batch {
    /// From the index asked for, in order.
    pub events: Vec<Logged>,
    /// The job has ended and `events` reaches its terminal event (or it was read before).
    pub done: bool,
}

/// A follower's means of waiting for more events (the shared store blocks on a
/// connection of its own, since a blocking read would hold up a shared one).
#[derive(Default)]
pub struct Waiter {
    pub(super) connection: Option<::redis::aio::MultiplexedConnection>,
}

/// 128 random bits from the operating system, as 32 hex digits.
pub(super) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    // Failing to read the OS's randomness is not something to recover from: an id that
    // could be guessed would expose another client's job.
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    hex(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_random_bits() {
        let a = new_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, new_id());
    }

    #[test]
    fn statuses_read_back() {
        for s in [Status::Running, Status::Succeeded, Status::Cancelled] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("nope"), None);
    }

    #[test]
    fn endings_read_back_and_progress_is_not_one() {
        for o in [Outcome::Result, Outcome::Error] {
            let e = Logged::ending(o, "{}");
            assert_eq!(e.outcome(), Some(o));
            assert!(e.is_terminal());
        }
        let progress = Logged::new("summarizing", "{}");
        assert_eq!(progress.outcome(), None);
        assert!(!progress.is_terminal());
    }
}
