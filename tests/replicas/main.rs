//! Two compactd processes (the real binary) sharing one real `redis-server`:
//! a job started on one is read, followed and cancelled on the other, an idempotent retry
//! sent to the other pays the model once, a replica killed with SIGKILL leaves its job
//! `failed` (`job-lost`) once its lease expires, a follower leaving does not stop the job,
//! finished jobs expire, the summary cache and single flight are shared, and a Redis
//! that goes away fails readiness and jobs (503) while plain compactions answer.
//!
//! The fake model servers count their calls (wiremock) or report a closed connection
//! (`silent_upstream`). Every request has a client timeout: a hang fails the test.

#[path = "../support/redis_server.rs"]
mod redis_server;
#[path = "../support/sse.rs"]
mod sse;
#[path = "../support/upstreams.rs"]
mod upstreams;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;
use wiremock::MockServer;

use redis_server::RedisServer;
use sse::Reader;
use upstreams::{calls, prompt_body, slow_model};

const KEY: &str = "replica-test-key";
/// The lease the replicas run with: short, so a killed runner's job ends soon.
const LEASE_MS: u64 = 1500;

/// One compactd process.
struct Replica {
    child: Child,
    base: String,
    client: reqwest::Client,
    /// Its standard error (the logs).
    log: std::path::PathBuf,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

impl Replica {
    /// Starts the binary against `redis` and an OpenAI-compatible model at `model_base`.
    async fn start(redis: &str, model_base: &str) -> Replica {
        Replica::start_with(redis, model_base, &[]).await
    }

    /// [`Replica::start`] with more settings.
    async fn start_with(redis: &str, model_base: &str, more: &[(&str, &str)]) -> Replica {
        let port = redis_server::free_port();
        let log = std::env::temp_dir().join(format!(
            "compactd-replica-{}-{port}.log",
            std::process::id()
        ));
        let child = Command::new(env!("CARGO_BIN_EXE_compactd"))
            .env_clear()
            .env("COMPACTD_LISTEN", format!("127.0.0.1:{port}"))
            .env("COMPACTD_SUMMARIZER", "openai")
            .env("COMPACTD_MODEL", "m")
            .env("COMPACTD_BASE_URL", model_base)
            .env("COMPACTD_RETRIES", "0")
            .env("COMPACTD_FALLBACK", "none")
            .env("COMPACTD_API_KEYS", format!("{KEY},other-key"))
            .env("COMPACTD_HEARTBEAT_MS", "200")
            .env("COMPACTD_REDIS_URL", redis)
            .env("COMPACTD_JOB_LEASE_MS", LEASE_MS.to_string())
            .env("COMPACTD_STATE_TIMEOUT_MS", "500")
            .env(
                "COMPACTD_PROMPTS_DIR",
                concat!(env!("CARGO_MANIFEST_DIR"), "/prompts"),
            )
            .env("COMPACTD_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .envs(more.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let replica = Replica {
            child,
            log,
            base: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if let Ok(r) = replica.client.get(replica.url("/healthz")).send().await {
                if r.status() == 200 {
                    return replica;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("compactd did not start");
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> reqwest::Response {
        let mut req = self.client.request(method, self.url(path)).bearer_auth(KEY);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        req.send().await.expect("an answer, not a hang")
    }

    /// A plain `/v1/summarize` of a one-turn conversation; its 200 answer.
    async fn summarize(&self, text: &str) -> Value {
        let res = self
            .send(Method::POST, "/v1/summarize", &[], Some(&prompt_body(text)))
            .await;
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    }

    async fn job(&self, id: &str) -> Value {
        let res = self
            .send(Method::GET, &format!("/v1/jobs/{id}"), &[], None)
            .await;
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    }
}

/// Polls `check` every 20 ms until it holds, for at most `limit`.
async fn until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Posts a job with `Prefer: respond-async`; its id.
async fn start_job(replica: &Replica, text: &str, key: Option<&str>) -> String {
    let mut headers = vec![("prefer", "respond-async")];
    if let Some(k) = key {
        headers.push(("idempotency-key", k));
    }
    let res = replica
        .send(
            Method::POST,
            "/v1/summarize",
            &headers,
            Some(&prompt_body(text)),
        )
        .await;
    assert_eq!(res.status(), 202);
    let location = res.headers()["location"].to_str().unwrap().to_string();
    location.strip_prefix("/v1/jobs/").unwrap().to_string()
}

async fn two_replicas(redis: &RedisServer, model_base: &str) -> (Replica, Replica) {
    let url = redis.url();
    tokio::join!(
        Replica::start(&url, model_base),
        Replica::start(&url, model_base)
    )
}

fn model_base(server: &MockServer) -> String {
    format!("{}/v1", server.uri())
}

#[tokio::test]
async fn a_job_started_on_one_replica_is_read_and_followed_on_the_other() {
    let Some(redis) = RedisServer::start("a_job_started_on_one_replica…") else {
        return;
    };
    let model = slow_model(Duration::from_millis(1500), "the summary").await;
    let (a, b) = two_replicas(&redis, &model_base(&model)).await;
    let id = start_job(&a, "hello", None).await;

    // B sees it running, and follows it: the past events replayed, then the live ones.
    let seen = b.job(&id).await;
    assert_eq!(seen["status"], "running", "{seen}");
    assert_eq!(seen["operation"], "/v1/summarize");
    let res = b
        .send(
            Method::GET,
            &format!("/v1/jobs/{id}/events"),
            &[("accept", "text/event-stream")],
            None,
        )
        .await;
    assert_eq!(res.status(), 200);
    let items = Reader::new(res).all().await;
    let events: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            sse::Item::Event { name, id, .. } => Some((name.clone(), id.clone())),
            sse::Item::Comment(_) => None,
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["prepared", "summarizing", "result"]);
    assert_eq!(events.last().unwrap().0, "result", "{events:?}");
    for (i, (_, eid)) in events.iter().enumerate() {
        assert_eq!(eid.as_deref(), Some(i.to_string().as_str()), "{events:?}");
    }
    assert!(
        items
            .iter()
            .any(|i| matches!(i, sse::Item::Comment(c) if c.contains("heartbeat"))),
        "heartbeats while following across replicas: {items:?}"
    );
    let result = items.last().unwrap().json();
    assert_eq!(result["summary"], "the summary", "{result}");

    // Both replicas show the same finished job; Last-Event-ID resumes on either.
    let (on_a, on_b) = (a.job(&id).await, b.job(&id).await);
    assert_eq!(on_a["status"], "succeeded");
    assert_eq!(on_a, on_b);
    assert_eq!(on_b["result"], result);
    let last = (events.len() - 2).to_string();
    let res = a
        .send(
            Method::GET,
            &format!("/v1/jobs/{id}/events"),
            &[("last-event-id", &last)],
            None,
        )
        .await;
    let rest = Reader::new(res).all().await;
    assert_eq!(sse::names(&rest), ["result"]);

    // Another API key does not see it, on either replica.
    for r in [&a, &b] {
        let res = r
            .client
            .get(r.url(&format!("/v1/jobs/{id}")))
            .bearer_auth("other-key")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
    }
    assert_eq!(calls(&model).await, 2, "the summary and its short summary");
}

#[tokio::test]
async fn an_idempotent_retry_sent_to_the_other_replica_pays_once() {
    let Some(redis) = RedisServer::start("an_idempotent_retry…") else {
        return;
    };
    let model = slow_model(Duration::from_millis(1500), "paid once").await;
    let (a, b) = two_replicas(&redis, &model_base(&model)).await;
    let key = [("idempotency-key", "\"retry-1\"")];
    let first = {
        let (url, client) = (a.url("/v1/summarize"), a.client.clone());
        tokio::spawn(async move {
            let res = client
                .post(url)
                .bearer_auth(KEY)
                .header("idempotency-key", "\"retry-1\"")
                .json(&prompt_body("pay once"))
                .send()
                .await
                .unwrap();
            (res.status(), res.text().await.unwrap())
        })
    };
    until(
        Duration::from_secs(10),
        "the first call reaches the model",
        || async { calls(&model).await == 1 },
    )
    .await;
    // The retry lands on the other replica while the first still runs, and waits.
    let res = b
        .send(
            Method::POST,
            "/v1/summarize",
            &key,
            Some(&prompt_body("pay once")),
        )
        .await;
    assert_eq!(res.status(), 200);
    let retried = res.text().await.unwrap();
    let (status, original) = first.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(retried, original);
    assert_eq!(
        calls(&model).await,
        2,
        "one summary call and one short call for both"
    );
    // The same key with another body is refused, on either replica.
    let res = b
        .send(
            Method::POST,
            "/v1/summarize",
            &key,
            Some(&prompt_body("other")),
        )
        .await;
    assert_eq!(res.status(), 422);
    let problem: Value = res.json().await.unwrap();
    assert_eq!(
        problem["type"],
        "urn:compactd:problem:idempotency-key-reused"
    );
}

#[tokio::test]
async fn delete_on_the_other_replica_cancels_the_work() {
    let Some(redis) = RedisServer::start("delete_on_the_other_replica…") else {
        return;
    };
    let (port, arrived, closed) = upstreams::silent_upstream().await;
    let base = format!("http://127.0.0.1:{port}/v1");
    let (a, b) = two_replicas(&redis, &base).await;
    let id = start_job(&a, "cancel me", None).await;
    arrived.await.expect("the model call started on A");

    let res = b
        .send(Method::DELETE, &format!("/v1/jobs/{id}"), &[], None)
        .await;
    assert_eq!(res.status(), 200);
    let view: Value = res.json().await.unwrap();
    assert_eq!(view["status"], "cancelled");
    assert_eq!(view["error"]["type"], "urn:compactd:problem:job-cancelled");
    assert!(
        closed.await.unwrap(),
        "the model call on A was closed when B cancelled"
    );
    let on_a = a.job(&id).await;
    assert_eq!(on_a["status"], "cancelled");
    let res = a
        .send(Method::GET, &format!("/v1/jobs/{id}/events"), &[], None)
        .await;
    let items = Reader::new(res).all().await;
    assert_eq!(sse::names(&items).last(), Some(&"error"));
}

#[tokio::test]
async fn a_replica_killed_mid_job_leaves_it_failed_as_lost_within_the_lease() {
    let Some(redis) = RedisServer::start("a_replica_killed_mid_job…") else {
        return;
    };
    let (port, arrived, _closed) = upstreams::silent_upstream().await;
    let base = format!("http://127.0.0.1:{port}/v1");
    let (mut a, b) = two_replicas(&redis, &base).await;
    let id = start_job(&a, "lost", Some("lost-1")).await;
    arrived.await.expect("the model call started on A");
    assert_eq!(b.job(&id).await["status"], "running");

    a.child.kill().unwrap(); // SIGKILL: no shutdown path runs.
    a.child.wait().unwrap();
    let killed = Instant::now();
    // Follow on B: the stream ends with the job-lost problem.
    let res = b
        .send(Method::GET, &format!("/v1/jobs/{id}/events"), &[], None)
        .await;
    let items = Reader::new(res).all().await;
    let ended = killed.elapsed();
    let last = items.last().unwrap();
    assert_eq!(last.name(), "error", "{items:?}");
    assert_eq!(last.json()["type"], "urn:compactd:problem:job-lost");
    // The lease, plus one follower poll (half a lease) and some slack for a busy machine.
    assert!(
        ended < Duration::from_millis(LEASE_MS * 4),
        "ended after {ended:?}"
    );
    let view = b.job(&id).await;
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(view["error"]["status"], 503);
    // The key was forgotten with the lost job: the same request with it runs again.
    let again = start_job(&b, "lost", Some("lost-1")).await;
    assert_ne!(again, id);
}

#[tokio::test]
async fn the_summary_cache_is_shared_by_the_replicas() {
    let Some(redis) = RedisServer::start("the_summary_cache_is_shared…") else {
        return;
    };
    let model = slow_model(Duration::ZERO, "cached once").await;
    let (a, b) = two_replicas(&redis, &model_base(&model)).await;
    let first = a.summarize("same").await;
    let second = b.summarize("same").await;
    assert_eq!(second["summary"], first["summary"]);
    assert_eq!(
        calls(&model).await,
        2,
        "B answered both calls from the shared cache"
    );
}

#[tokio::test]
async fn without_redis_readiness_and_jobs_fail_fast_and_compactions_answer() {
    let password = "hunter2-redis-password";
    let Some(mut redis) = RedisServer::start_with("without_redis…", Some(password)) else {
        return;
    };
    let model = slow_model(Duration::ZERO, "still here").await;
    let a = Replica::start(&redis.url(), &model_base(&model)).await;
    let ready = a.send(Method::GET, "/readyz", &[], None).await;
    assert_eq!(ready.status(), 200, "the password reaches Redis");
    let config: Value = a
        .send(Method::GET, "/v1/config", &[], None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(config["state"], "redis");
    assert!(!config.to_string().contains(password));

    redis.stop();
    let ready = a.send(Method::GET, "/readyz", &[], None).await;
    assert_eq!(ready.status(), 503);
    let p: Value = ready.json().await.unwrap();
    assert_eq!(p["type"], "urn:compactd:problem:state-unavailable");

    let res = a
        .send(
            Method::POST,
            "/v1/summarize",
            &[("prefer", "respond-async")],
            Some(&prompt_body("a job")),
        )
        .await;
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    let p: Value = res.json().await.unwrap();
    assert_eq!(p["type"], "urn:compactd:problem:state-unavailable");
    let res = a
        .send(
            Method::GET,
            "/v1/jobs/0123456789abcdef0123456789abcdef",
            &[],
            None,
        )
        .await;
    assert_eq!(res.status(), 503);

    // A plain compaction answers: the shared cache is a miss, the model is asked.
    let v = a.summarize("plain").await;
    assert_eq!(v["summary"], "still here");
    let metrics = a
        .send(Method::GET, "/metrics", &[], None)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("compactd_state_errors_total{op=\"begin\"}"),
        "{metrics}"
    );
    // The outage was logged (once: rate-limited), and the URL's password never was.
    let log = std::fs::read_to_string(&a.log).unwrap();
    assert!(log.contains("the shared state (Redis) failed"), "{log}");
    assert!(!log.contains(password), "{log}");
}

#[tokio::test]
async fn finished_jobs_and_their_keys_expire_after_the_ttl() {
    let Some(redis) = RedisServer::start("finished_jobs_expire…") else {
        return;
    };
    let model = slow_model(Duration::ZERO, "short-lived").await;
    let a = Replica::start_with(
        &redis.url(),
        &model_base(&model),
        &[("COMPACTD_JOB_TTL_SECS", "1")],
    )
    .await;
    let id = start_job(&a, "ttl", Some("ttl-1")).await;
    until(Duration::from_secs(10), "the job succeeds", || async {
        a.job(&id).await["status"] == "succeeded"
    })
    .await;
    until(Duration::from_secs(10), "the record expires", || async {
        a.send(Method::GET, &format!("/v1/jobs/{id}"), &[], None)
            .await
            .status()
            == 404
    })
    .await;
    // Its key went with it: the same key runs a new job.
    let again = start_job(&a, "ttl", Some("ttl-1")).await;
    assert_ne!(again, id);
}

#[tokio::test]
async fn identical_requests_on_two_replicas_share_one_upstream_call() {
    let Some(redis) = RedisServer::start("identical_requests_on_two_replicas…") else {
        return;
    };
    let model = slow_model(Duration::from_millis(1000), "one flight").await;
    let (a, b) = two_replicas(&redis, &model_base(&model)).await;
    let same = prompt_body("at the same moment");
    let (on_a, on_b) = tokio::join!(
        a.send(Method::POST, "/v1/summarize", &[], Some(&same)),
        b.send(Method::POST, "/v1/summarize", &[], Some(&same)),
    );
    assert_eq!((on_a.status().as_u16(), on_b.status().as_u16()), (200, 200));
    let (on_a, on_b): (Value, Value) = (on_a.json().await.unwrap(), on_b.json().await.unwrap());
    assert_eq!(on_a["summary"], "one flight");
    assert_eq!(on_b["summary"], "one flight");
    assert_eq!(
        calls(&model).await,
        2,
        "one replica called, the other waited"
    );
}

#[tokio::test]
async fn leaving_a_followed_job_on_the_other_replica_does_not_cancel_it() {
    let Some(redis) = RedisServer::start("leaving_a_followed_job…") else {
        return;
    };
    let model = slow_model(Duration::from_millis(1000), "kept going").await;
    let (a, b) = two_replicas(&redis, &model_base(&model)).await;
    let id = start_job(&a, "leave", None).await;
    let res = b
        .send(Method::GET, &format!("/v1/jobs/{id}/events"), &[], None)
        .await;
    let mut reader = Reader::new(res);
    let first = reader.next().await.expect("an event");
    assert_eq!(first.name(), "prepared");
    drop(reader); // The follower on B goes away mid-job.
    until(
        Duration::from_secs(10),
        "the job still succeeds",
        || async { b.job(&id).await["status"] == "succeeded" },
    )
    .await;
    assert_eq!(b.job(&id).await["result"]["summary"], "kept going");
    assert_eq!(calls(&model).await, 2, "the summary and its short summary");
}

#[tokio::test]
async fn the_shared_store_evicts_the_oldest_finished_jobs_by_count_and_bytes() {
    // Results of a little over 600 bytes: two finished jobs at most, or about two jobs'
    // worth of bytes (each holds its progress events and its result).
    for ceiling in [
        ("COMPACTD_JOBS_MAX", "2"),
        ("COMPACTD_JOBS_MAX_BYTES", "4000"),
    ] {
        let Some(redis) = RedisServer::start("the_shared_store_evicts…") else {
            return;
        };
        let model = slow_model(Duration::ZERO, &"s".repeat(600)).await;
        let base = model_base(&model);
        let a = Replica::start_with(&redis.url(), &base, &[ceiling]).await;
        evicts_the_oldest(&a, ceiling.0).await;
    }
}

async fn finished_job(replica: &Replica, text: &str, key: Option<&str>) -> String {
    let id = start_job(replica, text, key).await;
    until(Duration::from_secs(10), "the job succeeds", || async {
        replica.job(&id).await["status"] == "succeeded"
    })
    .await;
    id
}

async fn evicts_the_oldest(replica: &Replica, ceiling: &str) {
    let mut ids = Vec::new();
    for n in 0..4 {
        let key = format!("evict-{n}");
        ids.push((
            finished_job(replica, &format!("job {n}"), Some(&key)).await,
            key,
        ));
    }
    // The newest two stay; the older ones answer 410 to their owner, on every route.
    for (id, _) in &ids[2..] {
        assert_eq!(replica.job(id).await["status"], "succeeded", "{ceiling}");
    }
    for (id, _) in &ids[..2] {
        for path in [format!("/v1/jobs/{id}"), format!("/v1/jobs/{id}/events")] {
            let res = replica.send(Method::GET, &path, &[], None).await;
            assert_eq!(res.status(), 410, "{ceiling} {path}");
            let p: Value = res.json().await.unwrap();
            assert_eq!(p["type"], "urn:compactd:problem:job-evicted");
        }
        // Another client never learns of the eviction: 404.
        let res = replica
            .client
            .get(replica.url(&format!("/v1/jobs/{id}")))
            .bearer_auth("other-key")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{ceiling}");
    }
    // An evicted job's Idempotency-Key went with it: the same key runs a new job.
    let (old, key) = &ids[0];
    let again = finished_job(replica, "again", Some(key)).await;
    assert_ne!(&again, old);
}
