//! Jobs in Redis/Valkey, shared by every replica.
//!
//! Keys (under `compactd:`), for a job `id`:
//! * `job:{id}`: a hash, the record (owner digest, operation, status, times, the newest
//!   progress event, the terminal event and the HTTP status of the plain answer);
//! * `job:{id}:events`: a Stream, the event log. Entries are added with the id `0-*`, so
//!   Redis numbers them 1, 2, 3…: entry `0-n` is event `n - 1`, the `id:` every replica
//!   sends for it, and `Last-Event-ID` works on any of them. `XREAD BLOCK` from `0-n`
//!   replays what is logged after it, then waits for what comes;
//! * `job:{id}:lease`: the runner's lease (`PX COMPACTD_JOB_LEASE_MS`), renewed every
//!   third of it while the work runs;
//! * `idem:{owner}:{sha256 of the key}`: `fingerprint:id` of an Idempotency-Key, set
//!   with `NX` semantics inside the `begin` script.
//! * `finished` (a sorted set of finished ids by finish time), `finished:bytes` (a hash,
//!   the bytes of each: its events and result, counted as the in-process store counts
//!   them) and `finished:total`: the ceilings `COMPACTD_JOBS_MAX` and
//!   `COMPACTD_JOBS_MAX_BYTES` over every replica's finished jobs. The script that ends a
//!   job evicts the oldest past them (never that job) with their Idempotency-Keys, and
//!   leaves `evicted:{id}` (the owner digest, for the job's TTL) so its owner gets 410.
//!
//! Design decisions:
//! * Every change is one Lua script, so the terminal event is written once whoever ends
//!   the job (runner, `DELETE` on any replica, a reader finding the lease gone): the
//!   script checks the status is still `running`.
//! * A cancel from another replica is an `error` event in the log: the runner follows
//!   its own log with `XREAD BLOCK` (on a connection of its own) between renewals, so it
//!   drops the work as soon as the event lands, not at the next renewal.
//! * A runner that dies (SIGKILL, a lost node) stops renewing; once the lease has
//!   expired, the next replica to read or follow the job ends it `failed` with the
//!   problem `job-lost` (503), and forgets its Idempotency-Key so the same request with
//!   the same key runs again. A job is never seen `running` without a live lease.
//! * Records are kept `COMPACTD_REQUEST_TIMEOUT_SECS` + lease + `COMPACTD_JOB_TTL_SECS`
//!   while running (a bound even if nobody reads them) and `COMPACTD_JOB_TTL_SECS` once
//!   finished, or less when evicted.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::redis::aio::MultiplexedConnection;
use ::redis::{cmd, Value};
use sha2::Digest;

use super::super::job::{
    hex, new_id, Batch, Begin, Logged, Outcome, Owner, Snapshot, Status, Waiter,
};
use super::super::memory::{JobLimits, EVENT_OVERHEAD};
use super::super::StateError;
use super::job_scripts::{BEGIN, END, PUSH};
use super::{bounded, Redis, PREFIX};
use crate::config::Config;
use crate::telemetry::metric;

/// The problem document of a job whose runner stopped renewing its lease; the HTTP
/// layer's `ApiError::JobLost` answers the same one.
pub const JOB_LOST: &str = r#"{"type":"urn:compactd:problem:job-lost","title":"Job lost","status":503,"detail":"the replica running this job stopped before it finished (its lease expired); send the request again"}"#;

/// The jobs of every replica, in Redis.
pub struct RedisJobs {
    redis: Redis,
    ttl: Duration,
    lease: Duration,
    /// How long a record is kept while it runs.
    keep: Duration,
    /// This process, as its leases name it.
    replica: String,
    /// The ceilings on finished jobs, as the in-process store has them.
    limits: JobLimits,
}

fn record(id: &str) -> String {
    format!("{PREFIX}job:{id}")
}

fn log(id: &str) -> String {
    format!("{PREFIX}job:{id}:events")
}

fn lease(id: &str) -> String {
    format!("{PREFIX}job:{id}:lease")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn time_of(ms: &str) -> Option<SystemTime> {
    ms.parse::<u64>()
        .ok()
        .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
}

/// A job id as this store writes them: anything else is not a job (and must not reach
/// a key name).
fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `0-n` → event `n - 1`.
fn index_of(entry: &str) -> Option<usize> {
    entry
        .strip_prefix("0-")?
        .parse::<usize>()
        .ok()?
        .checked_sub(1)
}

/// A stream entry `[id, [e, name, d, data]]` as an event.
fn logged(fields: &[String]) -> Option<Logged> {
    let get = |k: &str| {
        fields
            .chunks(2)
            .find(|p| p.len() == 2 && p[0] == k)
            .map(|p| p[1].as_str())
    };
    Some(Logged::new(get("e")?, get("d")?))
}

type Entries = Vec<(String, Vec<String>)>;

impl RedisJobs {
    pub fn new(redis: Redis, config: &Config) -> Self {
        RedisJobs {
            redis,
            ttl: config.job_ttl,
            lease: config.job_lease,
            keep: config.request_timeout + config.job_lease + config.job_ttl,
            replica: new_id(),
            limits: JobLimits {
                max: config.jobs_max,
                max_bytes: config.jobs_max_bytes,
            },
        }
    }

    /// How long a follower blocks before it looks at the job (and its lease) again.
    pub fn poll(&self) -> Duration {
        (self.lease / 2).clamp(Duration::from_millis(50), Duration::from_secs(5))
    }

    pub async fn begin(
        &self,
        owner: Owner,
        operation: &str,
        key: Option<(&str, [u8; 32])>,
    ) -> Result<Begin, StateError> {
        let id = new_id();
        let mut inv = BEGIN.prepare_invoke();
        inv.key(record(&id)).key(lease(&id));
        let fingerprint = key.map(|(_, f)| hex(&f)).unwrap_or_default();
        if let Some((k, _)) = key {
            let digest: [u8; 32] = sha2::Sha256::digest(k.as_bytes()).into();
            inv.key(format!("{PREFIX}idem:{}:{}", owner.hex(), hex(&digest)));
        }
        inv.arg(&id)
            .arg(owner.hex())
            .arg(operation)
            .arg(epoch_ms(SystemTime::now()))
            .arg(&self.replica)
            .arg(millis(self.lease))
            .arg(millis(self.keep))
            .arg(fingerprint)
            .arg(PREFIX);
        let reply: Vec<String> = self
            .redis
            .call(
                "begin",
                |mut c| async move { inv.invoke_async(&mut c).await },
            )
            .await?;
        Ok(match reply.first().map(String::as_str) {
            Some("existing") => Begin::Existing(reply.get(1).cloned().unwrap_or_default()),
            Some("mismatch") => Begin::Mismatch,
            _ => Begin::New(id),
        })
    }

    pub async fn push(&self, id: &str, event: Logged) -> Result<(), StateError> {
        let mut inv = PUSH.prepare_invoke();
        inv.key(record(id))
            .key(log(id))
            .arg(&*event.name)
            .arg(&*event.data)
            .arg(EVENT_OVERHEAD);
        self.redis
            .call("push", |mut c| async move {
                inv.invoke_async::<i64>(&mut c).await
            })
            .await
            .map(|_| ())
    }

    /// Runs the `END` script; its answer (`ended`, `done`, `missing`, `held`).
    async fn end(
        &self,
        op: &'static str,
        id: &str,
        status: Status,
        http_status: u16,
        event: &Logged,
        owner: Option<Owner>,
    ) -> Result<String, StateError> {
        let mut inv = END.prepare_invoke();
        inv.key(record(id))
            .key(log(id))
            .key(lease(id))
            .key(format!("{PREFIX}finished"))
            .key(format!("{PREFIX}finished:bytes"))
            .key(format!("{PREFIX}finished:total"))
            .arg(status.as_str())
            .arg(http_status)
            .arg(&*event.name)
            .arg(&*event.data)
            .arg(epoch_ms(SystemTime::now()))
            .arg(millis(self.ttl))
            .arg(op)
            .arg(owner.map(|o| o.hex()).unwrap_or_default())
            .arg(self.limits.max)
            .arg(self.limits.max_bytes)
            .arg(id)
            .arg(EVENT_OVERHEAD)
            .arg(PREFIX);
        self.redis
            .call(op, |mut c| async move { inv.invoke_async(&mut c).await })
            .await
    }

    pub async fn finish(
        &self,
        id: &str,
        status: Status,
        http_status: u16,
        event: Logged,
    ) -> Result<bool, StateError> {
        Ok(self
            .end("finish", id, status, http_status, &event, None)
            .await?
            == "ended")
    }

    pub async fn cancel(
        &self,
        owner: Owner,
        id: &str,
        event: Logged,
        http_status: u16,
    ) -> Result<Option<Snapshot>, StateError> {
        if !valid_id(id) {
            return Ok(None);
        }
        let answer = self
            .end(
                "cancel",
                id,
                Status::Cancelled,
                http_status,
                &event,
                Some(owner),
            )
            .await?;
        if answer == "missing" {
            return Ok(None);
        }
        self.get(owner, id).await
    }

    /// Ends the job `failed` with `job-lost` if its lease is gone (a no-op otherwise).
    async fn lose(&self, id: &str) -> Result<(), StateError> {
        let event = Logged::ending(Outcome::Error, JOB_LOST);
        let answer = self
            .end("lost", id, Status::Failed, 503, &event, None)
            .await?;
        if answer == "ended" {
            metrics::counter!(metric::JOBS_LOST.name).increment(1);
            metrics::counter!(metric::JOBS_FINISHED.name, "status" => Status::Failed.as_str())
                .increment(1);
            tracing::warn!(job = %id, "a job's runner stopped renewing its lease: ended as job-lost");
        }
        Ok(())
    }

    /// Whether the owner's job `id` was evicted under the ceilings (its marker lives as
    /// long as the record would have).
    pub async fn evicted(&self, owner: Owner, id: &str) -> Result<bool, StateError> {
        if !valid_id(id) {
            return Ok(false);
        }
        let key = format!("{PREFIX}evicted:{id}");
        let marker: Option<String> = self
            .redis
            .call("evicted", |mut c| async move {
                cmd("GET").arg(&key).query_async(&mut c).await
            })
            .await?;
        Ok(marker.as_deref() == Some(owner.hex().as_str()))
    }

    pub async fn get(&self, owner: Owner, id: &str) -> Result<Option<Snapshot>, StateError> {
        if !valid_id(id) {
            return Ok(None);
        }
        for _ in 0..2 {
            let (rec, len, leased): (HashMap<String, String>, usize, bool) = self
                .redis
                .call("get", |mut c| async move {
                    ::redis::pipe()
                        .cmd("HGETALL")
                        .arg(record(id))
                        .cmd("XLEN")
                        .arg(log(id))
                        .cmd("EXISTS")
                        .arg(lease(id))
                        .query_async(&mut c)
                        .await
                })
                .await?;
            if rec.get("owner") != Some(&owner.hex()) {
                return Ok(None);
            }
            let status = rec
                .get("status")
                .and_then(|s| Status::parse(s))
                .unwrap_or(Status::Failed);
            if status == Status::Running && !leased {
                self.lose(id).await?;
                continue;
            }
            return Ok(Some(self.snapshot(id, status, &rec, len)));
        }
        Ok(None)
    }

    fn snapshot(
        &self,
        id: &str,
        status: Status,
        rec: &HashMap<String, String>,
        events: usize,
    ) -> Snapshot {
        let pair = |name: &str, data: &str| match (rec.get(name), rec.get(data)) {
            (Some(n), Some(d)) => Some(Logged::new(n, d.as_str())),
            _ => None,
        };
        let finished = rec.get("finished").and_then(|t| time_of(t));
        Snapshot {
            id: id.to_string(),
            operation: rec.get("op").cloned().unwrap_or_default(),
            status,
            created: rec
                .get("created")
                .and_then(|t| time_of(t))
                .unwrap_or(UNIX_EPOCH),
            finished,
            expires: finished.map(|t| t + self.ttl),
            events,
            progress: pair("pname", "pdata"),
            outcome: pair("oname", "odata"),
            http_status: rec.get("http").and_then(|h| h.parse().ok()),
        }
    }

    pub async fn events(
        &self,
        owner: Owner,
        id: &str,
        from: usize,
        wait: Duration,
        waiter: &mut Waiter,
    ) -> Result<Option<Batch>, StateError> {
        if !valid_id(id) {
            return Ok(None);
        }
        let start = &format!("0-{}", from.saturating_add(1));
        let mut read = None;
        for _ in 0..2 {
            let ((who, status), leased, entries): (
                (Option<String>, Option<String>),
                bool,
                Entries,
            ) = self
                .redis
                .call("events", |mut c| async move {
                    ::redis::pipe()
                        .cmd("HMGET")
                        .arg(record(id))
                        .arg("owner")
                        .arg("status")
                        .cmd("EXISTS")
                        .arg(lease(id))
                        .cmd("XRANGE")
                        .arg(log(id))
                        .arg(start.as_str())
                        .arg("+")
                        .query_async(&mut c)
                        .await
                })
                .await?;
            if who.as_deref() != Some(owner.hex().as_str()) {
                return Ok(None);
            }
            let running = status.as_deref().and_then(Status::parse) == Some(Status::Running);
            if running && !leased {
                self.lose(id).await?;
                continue;
            }
            read = Some((running, entries));
            break;
        }
        let Some((running, entries)) = read else {
            return Ok(None);
        };
        let events: Vec<Logged> = entries.iter().filter_map(|(_, f)| logged(f)).collect();
        let done = !running || events.iter().any(Logged::is_terminal);
        if !events.is_empty() || done {
            return Ok(Some(Batch { events, done }));
        }
        // Nothing new yet: block on a connection of our own until something is logged.
        let after = format!("0-{from}");
        let events = self.block(waiter, id, &after, wait).await?;
        let done = events.iter().any(|(_, e)| e.is_terminal());
        Ok(Some(Batch {
            events: events.into_iter().map(|(_, e)| e).collect(),
            done,
        }))
    }

    /// `XREAD BLOCK` on the waiter's connection: the entries after `after` (with their
    /// stream ids), none when `wait` passed first.
    async fn block(
        &self,
        waiter: &mut Waiter,
        id: &str,
        after: &str,
        wait: Duration,
    ) -> Result<Vec<(String, Logged)>, StateError> {
        if waiter.connection.is_none() {
            waiter.connection = Some(self.redis.dedicated().await?);
        }
        let conn: &mut MultiplexedConnection = waiter.connection.as_mut().expect("just set");
        let read = bounded("follow", wait + self.redis.timeout(), async {
            cmd("XREAD")
                .arg("BLOCK")
                .arg(millis(wait))
                .arg("STREAMS")
                .arg(log(id))
                .arg(after)
                .query_async::<Value>(conn)
                .await
        })
        .await;
        let value = match read {
            Ok(v) => v,
            Err(e) => {
                // A connection that failed may be half-read: start afresh next time.
                waiter.connection = None;
                return Err(e);
            }
        };
        let streams: Option<Vec<(String, Entries)>> =
            ::redis::from_redis_value(value).unwrap_or_default();
        Ok(streams
            .into_iter()
            .flatten()
            .flat_map(|(_, entries)| entries)
            .filter_map(|(entry, f)| {
                index_of(&entry)?;
                Some((entry, logged(&f)?))
            })
            .collect())
    }

    /// The runner's side: renews the lease every third of it, and follows the job's own
    /// log in between; ends when someone else ended the job (an `error` event it did not
    /// write) or the lease could not be renewed because it is gone.
    pub async fn hold(&self, id: &str) {
        let every = self.lease / 3;
        let mut renewed = Instant::now();
        let mut waiter = Waiter::default();
        let mut after = "0-0".to_string();
        loop {
            if renewed.elapsed() >= every {
                let key = lease(id);
                let ms = millis(self.lease);
                let renewal = self
                    .redis
                    .call("renew", |mut c| async move {
                        cmd("PEXPIRE")
                            .arg(key)
                            .arg(ms)
                            .query_async::<i64>(&mut c)
                            .await
                    })
                    .await;
                match renewal {
                    // Gone: the job was ended elsewhere, or declared lost.
                    Ok(0) => return,
                    Ok(_) => renewed = Instant::now(),
                    // Redis is away: work on, and try again next round.
                    Err(_) => {}
                }
            }
            let wait = every
                .saturating_sub(renewed.elapsed())
                .max(Duration::from_millis(10));
            match self.block(&mut waiter, id, &after, wait).await {
                Ok(entries) => {
                    for (entry, event) in entries {
                        if event.is_terminal() {
                            return;
                        }
                        after = entry;
                    }
                }
                Err(_) => tokio::time::sleep(wait.min(self.redis.timeout())).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_entries_read_back_as_events() {
        assert_eq!(index_of("0-1"), Some(0));
        assert_eq!(index_of("0-12"), Some(11));
        assert_eq!(index_of("0-0"), None);
        assert_eq!(index_of("1700000000000-0"), None);
        let fields = ["e", "result", "d", "{}"].map(String::from);
        assert_eq!(logged(&fields), Some(Logged::new("result", "{}")));
        assert_eq!(logged(&fields[..2]), None);
        assert!(valid_id(&new_id()));
        assert!(!valid_id("../x") && !valid_id("job:*"));
    }

    #[test]
    fn the_lost_problem_is_a_problem_document() {
        let v: serde_json::Value = serde_json::from_str(JOB_LOST).unwrap();
        assert_eq!(v["status"], 503);
        assert_eq!(v["type"], "urn:compactd:problem:job-lost");
    }
}
