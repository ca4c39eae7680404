//! The job records, their event logs and the Idempotency-Key table, in process memory
//! (the default store; nothing to install).
//!
//! Design decisions:
//! * Followers wait on a `watch` channel carrying the log's length, so a slow follower
//!   never holds up the job and sees every event (it reads from the log, not from the
//!   channel). The runner's [`MemoryJobs::hold`] waits on the same channel for the job to
//!   end without it (a `DELETE`).
//! * Records expire `job_ttl` after they finish; running jobs do not expire (their work is
//!   bounded by the request deadline). Expired records and their idempotency keys are
//!   swept when jobs are created or read, at most once a second.
//! * Finished records are also bounded by count and bytes ([`JobLimits`]): when a job
//!   finishes past either, the oldest finished records go first (with their idempotency
//!   keys), never the one that just finished. Running jobs hold a place under the
//!   concurrency limit, so they are bounded already. An evicted id is remembered (its
//!   owner, nothing else; the newest [`EVICTED_REMEMBERED`]) so that it answers "gone"
//!   rather than "never existed".
//! * Owners are SHA-256 digests of the API key that created the job (never the key); a
//!   job of another owner is reported as not found, so ids cannot be probed.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use super::job::{new_id, Batch, Begin, Logged, Owner, Snapshot, Status};

struct Job {
    owner: Owner,
    operation: String,
    status: Status,
    created: SystemTime,
    finished: Option<(SystemTime, Instant)>,
    events: Vec<Logged>,
    http_status: Option<u16>,
    length: watch::Sender<usize>,
    /// The idempotency key that names this job, to forget it with the job.
    idempotency: Option<(Owner, String)>,
    /// The bytes of its events.
    bytes: usize,
}

/// The ceilings on finished records (`COMPACTD_JOBS_MAX`, `COMPACTD_JOBS_MAX_BYTES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLimits {
    pub max: usize,
    pub max_bytes: usize,
}

/// Evicted ids remembered, at most.
pub const EVICTED_REMEMBERED: usize = 65_536;

#[derive(Default)]
struct Inner {
    jobs: HashMap<String, Job>,
    /// (owner, key) → (fingerprint of the request, job id).
    keys: HashMap<(Owner, String), ([u8; 32], String)>,
    swept: Option<Instant>,
    /// Finished jobs, oldest first (ids of expired ones are skipped when met).
    finished: VecDeque<String>,
    /// The bytes of the finished jobs held.
    finished_bytes: usize,
    /// Evicted ids and their owners, oldest first.
    evicted: VecDeque<String>,
    evicted_owner: HashMap<String, Owner>,
}

/// The jobs of this process.
pub struct MemoryJobs {
    inner: Mutex<Inner>,
    ttl: Duration,
    limits: JobLimits,
}

impl MemoryJobs {
    pub fn new(ttl: Duration, limits: JobLimits) -> Self {
        MemoryJobs {
            inner: Mutex::new(Inner::default()),
            ttl,
            limits,
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
                idempotency,
                bytes: 0,
            },
        );
        Begin::New(id)
    }

    /// Appends a progress event (ignored once the job is done).
    pub fn push(&self, id: &str, event: Logged) {
        let mut inner = self.lock();
        if let Some(job) = inner.jobs.get_mut(id) {
            if !job.status.is_done() {
                job.bytes += event_bytes(&event);
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
        job.bytes += event_bytes(&event);
        job.events.push(event);
        job.length.send_replace(job.events.len());
        self.finished(&mut inner, id);
        true
    }

    /// Cancels a running job and ends it with `event` (its runner's `hold` ends, and it
    /// drops the work). Returns the job as it is now; `None` when the owner has no such
    /// job.
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
            job.status = Status::Cancelled;
            job.http_status = Some(http_status);
            job.finished = Some((SystemTime::now(), Instant::now()));
            job.bytes += event_bytes(&event);
            job.events.push(event);
            job.length.send_replace(job.events.len());
            self.finished(&mut inner, id);
        }
        let job = inner.jobs.get(id)?;
        Some(self.snapshot(id, job))
    }

    /// Whether the owner's job `id` was evicted to keep under the ceilings (it then
    /// answers 410, not 404).
    pub fn evicted(&self, owner: Owner, id: &str) -> bool {
        self.lock().evicted_owner.get(id) == Some(&owner)
    }

    /// Counts a job that just ended, then evicts the oldest finished ones past the
    /// ceilings (never this one).
    fn finished(&self, inner: &mut Inner, id: &str) {
        inner.finished_bytes += inner.jobs.get(id).map_or(0, |j| j.bytes);
        inner.finished.push_back(id.to_string());
        while inner.finished.len() > 1
            && (inner.finished.len() > self.limits.max
                || inner.finished_bytes > self.limits.max_bytes)
        {
            let Some(oldest) = inner.finished.pop_front() else {
                break;
            };
            if let Some(job) = forget(inner, &oldest) {
                inner.evicted.push_back(oldest.clone());
                inner.evicted_owner.insert(oldest, job.owner);
                if inner.evicted.len() > EVICTED_REMEMBERED {
                    if let Some(old) = inner.evicted.pop_front() {
                        inner.evicted_owner.remove(&old);
                    }
                }
            }
        }
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
    fn read(&self, owner: Owner, id: &str, from: usize) -> Option<(Batch, watch::Receiver<usize>)> {
        let inner = self.lock();
        let job = inner.jobs.get(id).filter(|j| j.owner == owner)?;
        let events = job
            .events
            .get(from..)
            .map(<[Logged]>::to_vec)
            .unwrap_or_default();
        let batch = Batch {
            events,
            done: job.status.is_done(),
        };
        Some((batch, job.length.subscribe()))
    }

    /// Events from index `from` on, waiting up to `wait` when there are none yet.
    pub async fn events(
        &self,
        owner: Owner,
        id: &str,
        from: usize,
        wait: Duration,
    ) -> Option<Batch> {
        let (batch, mut rx) = self.read(owner, id, from)?;
        if !batch.events.is_empty() || batch.done {
            return Some(batch);
        }
        // The receiver was taken with the read: a push after it marks it changed.
        match tokio::time::timeout(wait, rx.changed()).await {
            Ok(Ok(())) => self.read(owner, id, from).map(|(b, _)| b),
            Ok(Err(_)) => None,
            Err(_) => Some(batch),
        }
    }

    /// Ends when the job has ended without its runner (cancelled) or is gone.
    pub async fn hold(&self, id: &str) {
        let mut rx = {
            let inner = self.lock();
            match inner.jobs.get(id) {
                Some(job) if !job.status.is_done() => job.length.subscribe(),
                _ => return,
            }
        };
        loop {
            if rx.changed().await.is_err() {
                return;
            }
            let inner = self.lock();
            if inner.jobs.get(id).is_none_or(|j| j.status.is_done()) {
                return;
            }
        }
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
            forget(inner, &id);
        }
        // Their places in the eviction order go once they reach its front.
        while let Some(front) = inner.finished.front() {
            if inner.jobs.contains_key(front) {
                break;
            }
            inner.finished.pop_front();
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

/// Removes a job and its idempotency key; a finished job's bytes leave the count.
fn forget(inner: &mut Inner, id: &str) -> Option<Job> {
    let job = inner.jobs.remove(id)?;
    if let Some(key) = &job.idempotency {
        inner.keys.remove(key);
    }
    if job.finished.is_some() {
        inner.finished_bytes -= job.bytes;
    }
    Some(job)
}

/// What an event costs to hold beyond its name and data (the record around them); the
/// shared store counts the same.
pub const EVENT_OVERHEAD: usize = std::mem::size_of::<Logged>();

/// What an event costs to hold: its name and data, and the record around them.
fn event_bytes(event: &Logged) -> usize {
    event.name.len() + event.data.len() + EVENT_OVERHEAD
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: JobLimits = JobLimits {
        max: 1000,
        max_bytes: 1 << 30,
    };

    fn event(name: &'static str) -> Logged {
        Logged::new(name, "{}")
    }

    fn finished_job(jobs: &MemoryJobs, owner: Owner, key: &str, result: &str) -> String {
        let Begin::New(id) = jobs.begin(owner, "/v1/compact", Some((key, [7; 32]))) else {
            panic!()
        };
        assert!(jobs.finish(&id, Status::Succeeded, 200, Logged::new("result", result)));
        id
    }

    #[test]
    fn past_the_count_the_oldest_finished_job_is_evicted_with_its_key() {
        let jobs = MemoryJobs::new(Duration::from_secs(60), JobLimits { max: 2, ..LIMITS });
        let me = Owner([1; 32]);
        let ids: Vec<String> = (0..3)
            .map(|n| finished_job(&jobs, me, &format!("k{n}"), "{}"))
            .collect();
        assert_eq!(jobs.len(), 2);
        assert!(jobs.get(me, &ids[0]).is_none());
        assert!(jobs.evicted(me, &ids[0]));
        assert!(!jobs.evicted(Owner([2; 32]), &ids[0]), "owners only");
        assert!(jobs.get(me, &ids[2]).is_some() && !jobs.evicted(me, &ids[2]));
        // The evicted job's key is forgotten: the same key starts a new job.
        assert!(matches!(
            jobs.begin(me, "/v1/compact", Some(("k0", [7; 32]))),
            Begin::New(_)
        ));
    }

    #[test]
    fn past_the_bytes_the_oldest_go_but_never_the_newest() {
        let big = "x".repeat(1000);
        let jobs = MemoryJobs::new(
            Duration::from_secs(60),
            JobLimits {
                max: 100,
                max_bytes: 2500,
            },
        );
        let me = Owner::default();
        let ids: Vec<String> = (0..5)
            .map(|n| finished_job(&jobs, me, &format!("k{n}"), &big))
            .collect();
        assert_eq!(jobs.len(), 2, "two results of ~1 kB fit in 2.5 kB");
        assert!(jobs.evicted(me, &ids[2]));
        // One result over the whole ceiling stays, alone: its client is waiting for it.
        let huge = finished_job(&jobs, me, "huge", &"y".repeat(10_000));
        assert_eq!(jobs.len(), 1);
        assert!(jobs.get(me, &huge).is_some());
    }

    #[test]
    fn keys_join_the_same_body_and_refuse_another() {
        let jobs = MemoryJobs::new(Duration::from_secs(60), LIMITS);
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
        let jobs = MemoryJobs::new(Duration::ZERO, LIMITS);
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
        assert_eq!(&*s.progress.unwrap().name, "prepared");
        assert_eq!(&*s.outcome.unwrap().name, "result");
        std::thread::sleep(Duration::from_millis(1100));
        assert!(jobs.get(me, &id).is_none());
        assert!(matches!(
            jobs.begin(me, "/v1/compact", Some(("k", [7; 32]))),
            Begin::New(_)
        ));
    }
}
