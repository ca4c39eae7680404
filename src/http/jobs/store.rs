//! The job records, their event logs and the Idempotency-Key table, in process memory.
//!
//! Design decisions:
//! * A job's events are one append-only log; the event id is the index in it, the same
//!   ids a plain event stream sends. The last event is the terminal one (`result` or
//!   `error`); a job's result is the data of its `result` event, kept once.
//! * Followers wait on a `watch` channel carrying the log's length, so a slow follower
//!   never holds up the job and sees every event (it reads from the log, not from the
//!   channel).
//! * Records expire `job_ttl` after they finish; running jobs do not expire (their work is
//!   bounded by the request deadline). Expired records and their idempotency keys are
//!   swept when jobs are created or read, at most once a second.
//! * Owners are SHA-256 digests of the API key that created the job (never the key); a
//!   job of another owner is reported as not found, so ids cannot be probed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::watch;

/// Who created a job: the digest of its API key (all zeros without authentication).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Owner(pub [u8; 32]);

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
}

/// One logged event: its SSE name and JSON data.
#[derive(Debug, Clone)]
pub struct Logged {
    pub name: &'static str,
    pub data: Arc<str>,
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

struct Job {
    owner: Owner,
    operation: String,
    status: Status,
    created: SystemTime,
    finished: Option<(SystemTime, Instant)>,
    events: Vec<Logged>,
    http_status: Option<u16>,
    length: watch::Sender<usize>,
    abort: Option<tokio::task::AbortHandle>,
    /// The idempotency key that names this job, to forget it with the job.
    idempotency: Option<(Owner, String)>,
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

#[derive(Default)]
struct Inner {
    jobs: HashMap<String, Job>,
    /// (owner, key) → (fingerprint of the request, job id).
    keys: HashMap<(Owner, String), ([u8; 32], String)>,
    swept: Option<Instant>,
}

/// The jobs of this process.
pub struct Jobs {
    inner: Mutex<Inner>,
    ttl: Duration,
}

impl Jobs {
    pub fn new(ttl: Duration) -> Self {
        Jobs {
            inner: Mutex::new(Inner::default()),
            ttl,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every change is one
        // insert or push), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a job (status `running`: it already holds its place under the limit),
    /// or finds the one an idempotency key names.
    pub fn begin(&self, owner: Owner, operation: &str, key: Option<(&str, [u8; 32])>) -> Begin {
        let mut inner = self.lock();
        self.sweep(&mut inner);
        if let Some((k, fingerprint)) = key {
            if let Some((seen, id)) = inner.keys.get(&(owner, k.to_string())) {
                return if *seen == fingerprint {
                    Begin::Existing(id.clone())
                } else {
                    Begin::Mismatch
                };
            }
        }
        let id = new_id();
        let idempotency = key.map(|(k, fingerprint)| {
            inner
                .keys
                .insert((owner, k.to_string()), (fingerprint, id.clone()));
            (owner, k.to_string())
        });
        inner.jobs.insert(
            id.clone(),
            Job {
                owner,
                operation: operation.to_string(),
                status: Status::Running,
                created: SystemTime::now(),
                finished: None,
                events: Vec::new(),
                http_status: None,
                length: watch::channel(0).0,
                abort: None,
                idempotency,
            },
        );
        Begin::New(id)
    }

    /// Remembers how to cancel a job's work.
    pub fn set_abort(&self, id: &str, abort: tokio::task::AbortHandle) {
        let mut inner = self.lock();
        match inner.jobs.get_mut(id) {
            Some(job) if !job.status.is_done() => job.abort = Some(abort),
            // Cancelled before its task was known.
            _ => abort.abort(),
        }
    }

    /// Appends a progress event (ignored once the job is done).
    pub fn push(&self, id: &str, event: Logged) {
        let mut inner = self.lock();
        if let Some(job) = inner.jobs.get_mut(id) {
            if !job.status.is_done() {
                job.events.push(event);
                job.length.send_replace(job.events.len());
            }
        }
    }

    /// Ends a job with its terminal event; false when it had already ended (cancelled).
    pub fn finish(&self, id: &str, status: Status, http_status: u16, event: Logged) -> bool {
        let mut inner = self.lock();
        let Some(job) = inner.jobs.get_mut(id) else {
            return false;
        };
        if job.status.is_done() {
            return false;
        }
        job.status = status;
        job.http_status = Some(http_status);
        job.finished = Some((SystemTime::now(), Instant::now()));
        job.abort = None;
        job.events.push(event);
        job.length.send_replace(job.events.len());
        true
    }

    /// Cancels a running job (its work is aborted) and ends it with `event`. Returns the
    /// job as it is now; `None` when the owner has no such job.
    pub fn cancel(
        &self,
        owner: Owner,
        id: &str,
        event: Logged,
        http_status: u16,
    ) -> Option<Snapshot> {
        let mut inner = self.lock();
        let job = inner.jobs.get_mut(id).filter(|j| j.owner == owner)?;
        if !job.status.is_done() {
            if let Some(abort) = job.abort.take() {
                abort.abort();
            }
            job.status = Status::Cancelled;
            job.http_status = Some(http_status);
            job.finished = Some((SystemTime::now(), Instant::now()));
            job.events.push(event);
            job.length.send_replace(job.events.len());
        }
        Some(self.snapshot(id, job))
    }

    /// The job as its owner sees it.
    pub fn get(&self, owner: Owner, id: &str) -> Option<Snapshot> {
        let mut inner = self.lock();
        self.sweep(&mut inner);
        let job = inner.jobs.get(id).filter(|j| j.owner == owner)?;
        Some(self.snapshot(id, job))
    }

    /// Events from index `from` on, whether the job is done, and a receiver that changes
    /// when more are logged.
    pub fn read(
        &self,
        owner: Owner,
        id: &str,
        from: usize,
    ) -> Option<(Vec<Logged>, bool, watch::Receiver<usize>)> {
        let inner = self.lock();
        let job = inner.jobs.get(id).filter(|j| j.owner == owner)?;
        let events = job
            .events
            .get(from..)
            .map(<[Logged]>::to_vec)
            .unwrap_or_default();
        Some((events, job.status.is_done(), job.length.subscribe()))
    }

    fn snapshot(&self, id: &str, job: &Job) -> Snapshot {
        let done = job.status.is_done();
        let (progress, outcome) = match (done, job.events.split_last()) {
            (true, Some((last, rest))) => (rest.last().cloned(), Some(last.clone())),
            (false, _) => (job.events.last().cloned(), None),
            (true, None) => (None, None),
        };
        Snapshot {
            id: id.to_string(),
            operation: job.operation.clone(),
            status: job.status,
            created: job.created,
            finished: job.finished.map(|(t, _)| t),
            expires: job.finished.map(|(t, _)| t + self.ttl),
            events: job.events.len(),
            progress,
            outcome,
            http_status: job.http_status,
        }
    }

    /// Forgets jobs (and their keys) finished more than `ttl` ago; at most once a second.
    fn sweep(&self, inner: &mut Inner) {
        let now = Instant::now();
        if inner
            .swept
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            return;
        }
        inner.swept = Some(now);
        let ttl = self.ttl;
        let expired: Vec<String> = inner
            .jobs
            .iter()
            .filter(|(_, j)| {
                j.finished
                    .is_some_and(|(_, at)| now.duration_since(at) >= ttl)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if let Some(job) = inner.jobs.remove(&id) {
                if let Some(key) = job.idempotency {
                    inner.keys.remove(&key);
                }
            }
        }
    }

    /// Jobs held now (finished ones until they expire).
    pub fn len(&self) -> usize {
        self.lock().jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// 128 random bits from the operating system, as 32 hex digits.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    // Failing to read the OS's randomness is not something to recover from: an id that
    // could be guessed would expose another client's job.
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &'static str) -> Logged {
        Logged {
            name,
            data: Arc::from("{}"),
        }
    }

    #[test]
    fn ids_are_128_random_bits() {
        let a = new_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, new_id());
    }

    #[test]
    fn keys_join_the_same_body_and_refuse_another() {
        let jobs = Jobs::new(Duration::from_secs(60));
        let me = Owner([1; 32]);
        let Begin::New(id) = jobs.begin(me, "/v1/compact", Some(("k", [7; 32]))) else {
            panic!()
        };
        assert_eq!(
            jobs.begin(me, "/v1/compact", Some(("k", [7; 32]))),
            Begin::Existing(id.clone())
        );
        assert_eq!(
            jobs.begin(me, "/v1/compact", Some(("k", [8; 32]))),
            Begin::Mismatch
        );
        // Another key holder's "k" is another key, and cannot see the job.
        let other = Owner([2; 32]);
        assert!(matches!(
            jobs.begin(other, "/v1/compact", Some(("k", [7; 32]))),
            Begin::New(_)
        ));
        assert!(jobs.get(other, &id).is_none());
        assert!(jobs.get(me, &id).is_some());
    }

    #[test]
    fn finished_jobs_expire_with_their_keys() {
        let jobs = Jobs::new(Duration::ZERO);
        let me = Owner::default();
        let Begin::New(id) = jobs.begin(me, "/v1/compact", Some(("k", [7; 32]))) else {
            panic!()
        };
        jobs.push(&id, event("prepared"));
        assert!(jobs.finish(&id, Status::Succeeded, 200, event("result")));
        assert!(
            !jobs.finish(&id, Status::Failed, 500, event("error")),
            "once"
        );
        let s = jobs.get(me, &id).unwrap();
        assert_eq!(s.status, Status::Succeeded);
        assert_eq!(s.progress.unwrap().name, "prepared");
        assert_eq!(s.outcome.unwrap().name, "result");
        std::thread::sleep(Duration::from_millis(1100));
        assert!(jobs.get(me, &id).is_none());
        assert!(matches!(
            jobs.begin(me, "/v1/compact", Some(("k", [7; 32]))),
            Begin::New(_)
        ));
    }
}
