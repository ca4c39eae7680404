//! Jobs: compactions that outlive their connection, and Idempotency-Key.
//!
//! `Prefer: respond-async` on a summarizing endpoint answers `202 Accepted` with
//! `Location: /v1/jobs/{id}` once the request is planned; `GET /v1/jobs/{id}` shows the
//! job, `GET /v1/jobs/{id}/events` replays its events and follows it live,
//! `DELETE /v1/jobs/{id}` cancels it. An `Idempotency-Key` (draft-ietf-httpapi-
//! idempotency-key-header) makes any such request a job: the same key with the same
//! request (path, query and body) joins it — as a 202, an event stream, or the plain
//! answer when it is done, whichever the retry asks for — and the same key with another
//! request is a 422.
//!
//! Design decisions:
//! * A job takes over the request's place under `COMPACTD_MAX_CONCURRENCY` (the guard's
//!   [`Permit`]) and holds it until it ends, so jobs and requests share one limit and a
//!   full server answers 503 with `Retry-After` before any job is created: there is no
//!   queue to grow (a job is `running` as soon as it exists; `queued` is never shown by
//!   this in-process store).
//! * A job keeps the request deadline (`COMPACTD_REQUEST_TIMEOUT_SECS`): it outlives the
//!   connection, not the service's bounds.
//! * Nothing is stored before planning succeeded: a bad body is a plain error, with or
//!   without `Prefer` or a key, and is not remembered under the key.
//! * Jobs are visible only to the API key that created it (its SHA-256 digest is kept,
//!   never the key); anyone else gets 404, as for an unknown id.
//! * The records, events and keys live in `crate::state::Jobs`: in this process, or in
//!   Redis so that every replica can read, follow and cancel a job (see `state`). The
//!   runner reads its work's progress from a channel and logs it in order; it
//!   [`Jobs::hold`]s the job meanwhile and drops the work when another replica (or a
//!   `DELETE` here) ended it.
//! * The store failing is a 503 `state-unavailable` with `Retry-After` before anything
//!   starts; a follower whose store fails mid-stream is closed (reconnect with
//!   `Last-Event-ID`).

use std::collections::VecDeque;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use sha2::Digest;

use crate::summarize::{ProgressEvent, ProgressSink};
use crate::telemetry::metric;

use super::guard::Permit;
use super::problem::{ApiError, Problem};
use super::stream::{Delivery, Work};
use super::AppState;
pub use crate::state::{Begin, Jobs, Logged, Outcome, Owner, Snapshot, Status, Waiter};

/// How a summarizing request wants to be answered, read from its headers.
#[derive(Debug, Clone)]
pub(super) struct Intent {
    pub delivery: Delivery,
    /// `Prefer: respond-async`.
    pub respond_async: bool,
    pub idempotency_key: Option<String>,
    pub owner: Owner,
    /// Path and query: the operation, and part of the request's fingerprint.
    pub target: String,
    /// SHA-256 of the target and the body (only computed with a key).
    pub fingerprint: Option<[u8; 32]>,
}

impl Intent {
    /// A plain answer, whatever the headers said.
    pub fn plain() -> Self {
        Intent {
            delivery: Delivery::Plain,
            respond_async: false,
            idempotency_key: None,
            owner: Owner::default(),
            target: String::new(),
            fingerprint: None,
        }
    }

    /// Whether the work runs as a job.
    pub fn is_job(&self) -> bool {
        self.respond_async || self.idempotency_key.is_some()
    }

    /// Remembers the body's fingerprint when a key will need it.
    pub fn with_body(mut self, body: &[u8]) -> Self {
        if self.idempotency_key.is_some() {
            let mut h = sha2::Sha256::new();
            h.update(self.target.as_bytes());
            h.update([0]);
            h.update(body);
            self.fingerprint = Some(h.finalize().into());
        }
        self
    }

    fn operation(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Intent {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let headers = &parts.headers;
        Ok(Intent {
            delivery: Delivery::of(headers),
            respond_async: prefers_async(headers),
            idempotency_key: idempotency_key(headers)?,
            owner: parts.extensions.get::<Owner>().copied().unwrap_or_default(),
            target: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string()),
            fingerprint: None,
        })
    }
}

/// `Prefer: respond-async` (RFC 7240; other preferences are ignored).
fn prefers_async(headers: &HeaderMap) -> bool {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| {
            p.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("respond-async"))
        })
}

/// The `Idempotency-Key`: a Structured Fields string (`"…"`), or the bare token many
/// clients send; 1–255 visible ASCII characters (0x21–0x7e: a space, which an sf-string
/// could hold, is refused too, as `docs/api.md` says, so a key survives every logger and
/// proxy unchanged).
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let raw = v.to_str().unwrap_or("").trim();
    let key = raw
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .unwrap_or(raw);
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::InvalidIdempotencyKey);
    }
    Ok(Some(key.to_string()))
}

/// Runs `work` as a job (or joins the one its key names) and answers as the request asked.
pub(super) async fn run(
    state: &AppState,
    intent: Intent,
    permit: Option<Permit>,
    work: impl FnOnce(Arc<dyn ProgressSink>) -> Work,
) -> Response {
    let key = intent.idempotency_key.as_deref().zip(intent.fingerprint);
    let begun = match state
        .jobs
        .begin(intent.owner, intent.operation(), key)
        .await
    {
        Ok(b) => b,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let id = match begun {
        Begin::Mismatch => return ApiError::IdempotencyKeyReused.into_response(),
        Begin::Existing(id) => {
            metrics::counter!(metric::JOBS_JOINED.name).increment(1);
            id
        }
        Begin::New(id) => {
            spawn(state, &id, permit, work);
            id
        }
    };
    if intent.respond_async {
        let snapshot = match state.jobs.get(intent.owner, &id).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                return missing(&state.jobs, intent.owner, &id)
                    .await
                    .into_response()
            }
            Err(e) => return ApiError::from(e).into_response(),
        };
        let location = format!("/v1/jobs/{id}");
        let mut res = (StatusCode::ACCEPTED, Json(view(&snapshot))).into_response();
        let h = res.headers_mut();
        h.insert(
            header::LOCATION,
            HeaderValue::from_str(&location).expect("hex id"),
        );
        h.insert(
            "preference-applied",
            HeaderValue::from_static("respond-async"),
        );
        return res;
    }
    match intent.delivery {
        Delivery::Events => follow(state, intent.owner, &id, 0).await,
        Delivery::Plain => wait(state, intent.owner, &id).await,
    }
}

/// Hands a job's progress to its runner, which logs it in order.
struct JobSink {
    tx: tokio::sync::mpsc::UnboundedSender<Logged>,
}

impl ProgressSink for JobSink {
    fn emit(&self, event: ProgressEvent) {
        let data = serde_json::to_string(&event).unwrap_or_else(|_| "{}".into());
        // The runner is gone only once the job has ended: nothing to log then.
        let _ = self.tx.send(Logged::new(event.name(), data));
    }
}

fn spawn(
    state: &AppState,
    id: &str,
    permit: Option<Permit>,
    work: impl FnOnce(Arc<dyn ProgressSink>) -> Work,
) {
    let jobs = Arc::clone(&state.jobs);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = work(Arc::new(JobSink { tx }));
    let timeout = state.config.request_timeout;
    let job = id.to_string();
    metrics::counter!(metric::JOBS.name).increment(1);
    tokio::spawn(async move {
        let _permit = permit;
        let work = async {
            let run = tokio::time::timeout(timeout, run);
            tokio::pin!(run);
            let result = loop {
                tokio::select! {
                    biased;
                    Some(event) = rx.recv() => log(&jobs, &job, event).await,
                    r = &mut run => break r.unwrap_or(Err(ApiError::RequestTimeout)),
                }
            };
            // What the work emitted last is logged before its outcome.
            while let Ok(event) = rx.try_recv() {
                log(&jobs, &job, event).await;
            }
            result
        };
        let result = tokio::select! {
            r = work => r,
            // Ended elsewhere (cancelled, lost): the work is dropped, its calls closed.
            () = jobs.hold(&job) => return,
        };
        let (status, http, event) = match result {
            Ok(json) => (
                Status::Succeeded,
                200,
                Logged::ending(Outcome::Result, String::from_utf8_lossy(&json).as_ref()),
            ),
            Err(e) => (Status::Failed, e.status().as_u16(), error_logged(&e)),
        };
        let outcome = status.as_str();
        // A store that fails now loses the outcome: retried briefly, then the job ends
        // as its lease says (`job-lost` with Redis).
        for _ in 0..3 {
            match jobs.finish(&job, status, http, event.clone()).await {
                Ok(true) => {
                    metrics::counter!(metric::JOBS_FINISHED.name, "status" => outcome).increment(1);
                    break;
                }
                Ok(false) => break,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            }
        }
    });
}

/// Logs one progress event; a store that fails drops it (counted where it failed).
/// The error for a job the owner cannot read: 410 when it was evicted, else 404.
async fn missing(jobs: &Jobs, owner: Owner, id: &str) -> ApiError {
    if jobs.evicted(owner, id).await {
        ApiError::JobEvicted
    } else {
        ApiError::JobNotFound
    }
}

async fn log(jobs: &Jobs, id: &str, event: Logged) {
    let _ = jobs.push(id, event).await;
}

fn error_logged(e: &ApiError) -> Logged {
    if let ApiError::Internal(msg) = e {
        tracing::error!(error = %msg, "internal error");
    }
    let data = serde_json::to_string(&e.problem()).unwrap_or_else(|_| "{}".into());
    Logged::ending(Outcome::Error, data)
}

/// Waits for a job to end and answers as the plain request would have.
async fn wait(state: &AppState, owner: Owner, id: &str) -> Response {
    let mut waiter = Waiter::default();
    let mut from = 0;
    loop {
        match state
            .jobs
            .events(owner, id, from, state.jobs.poll(), &mut waiter)
            .await
        {
            Ok(Some(batch)) if batch.done => break,
            Ok(Some(batch)) => from += batch.events.len(),
            Ok(None) => return missing(&state.jobs, owner, id).await.into_response(),
            Err(e) => return ApiError::from(e).into_response(),
        }
    }
    match state.jobs.get(owner, id).await {
        Ok(Some(s)) => outcome_response(&s),
        Ok(None) => missing(&state.jobs, owner, id).await.into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The plain answer of a finished job: its result, or its problem document.
fn outcome_response(s: &Snapshot) -> Response {
    let status = StatusCode::from_u16(s.http_status.unwrap_or(500))
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (ct, body) = match &s.outcome {
        Some(o) if o.outcome() == Some(Outcome::Result) => ("application/json", o.data.to_string()),
        Some(Logged { data, .. }) => ("application/problem+json", data.to_string()),
        None => {
            return ApiError::Internal("a finished job without an outcome".into()).into_response()
        }
    };
    (status, [(header::CONTENT_TYPE, ct)], body).into_response()
}

/// A job's events from index `from`: the logged ones, then live ones until it ends. The
/// job goes on when the client leaves.
async fn follow(state: &AppState, owner: Owner, id: &str, from: usize) -> Response {
    // Held by the stream until it ends: followers are bounded like requests are.
    let Ok(permit) = Arc::clone(&state.followers).try_acquire_owned() else {
        return ApiError::TooManyFollowers.into_response();
    };
    let mut waiter = Waiter::default();
    // The first read answers 404 or 503 as an HTTP error, before the stream starts.
    let first = match state
        .jobs
        .events(owner, id, from, std::time::Duration::ZERO, &mut waiter)
        .await
    {
        Ok(Some(batch)) => batch,
        Ok(None) => return missing(&state.jobs, owner, id).await.into_response(),
        Err(e) => return ApiError::from(e).into_response(),
    };
    struct Follow {
        jobs: Arc<Jobs>,
        owner: Owner,
        id: String,
        next: usize,
        pending: VecDeque<Logged>,
        done: bool,
        waiter: Waiter,
        _permit: tokio::sync::OwnedSemaphorePermit,
    }
    let f = Follow {
        jobs: Arc::clone(&state.jobs),
        owner,
        id: id.to_string(),
        next: from,
        pending: first.events.into(),
        done: first.done,
        waiter,
        _permit: permit,
    };
    let stream = futures_util::stream::unfold(f, |mut f| async move {
        loop {
            if let Some(e) = f.pending.pop_front() {
                let event = Event::default()
                    .event(&*e.name)
                    .data(&*e.data)
                    .id(f.next.to_string());
                f.next += 1;
                return Some((Ok::<_, std::convert::Infallible>(event), f));
            }
            if f.done {
                return None;
            }
            let wait = f.jobs.poll();
            // Gone (expired) or the store failed: the stream ends; a client resumes
            // with `Last-Event-ID`.
            let batch = f
                .jobs
                .events(f.owner, &f.id, f.next, wait, &mut f.waiter)
                .await
                .ok()??;
            f.pending.extend(batch.events);
            f.done = batch.done;
        }
    });
    let mut res = Sse::new(stream)
        .keep_alive(
            KeepAlive::new()
                .interval(state.config.heartbeat)
                .text("heartbeat"),
        )
        .into_response();
    res.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

/// A job as `GET /v1/jobs/{id}` shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    /// 128 random bits, hex.
    pub id: String,
    pub status: Status,
    /// The endpoint the job answers (`/v1/compact`, …).
    pub operation: String,
    /// RFC 3339 times.
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// When the record is forgotten (`COMPACTD_JOB_TTL_SECS` after it finished).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Events logged so far (`GET /v1/jobs/{id}/events` replays them).
    pub events: usize,
    /// The newest progress event: `{"event": "summarizing", "data": {...}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub progress: Option<serde_json::Value>,
    /// The answer the plain request would have got (when `succeeded`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Box<serde_json::value::RawValue>>,
    /// The problem document (when `failed` or `cancelled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub error: Option<Box<serde_json::value::RawValue>>,
}

fn rfc3339(t: std::time::SystemTime) -> String {
    compactd_core::session::iso_timestamp(time::OffsetDateTime::from(t))
}

fn view(s: &Snapshot) -> JobView {
    let raw = |l: &Logged| serde_json::value::RawValue::from_string(l.data.to_string()).ok();
    JobView {
        id: s.id.clone(),
        status: s.status,
        operation: s.operation.clone(),
        created_at: rfc3339(s.created),
        finished_at: s.finished.map(rfc3339),
        expires_at: s.expires.map(rfc3339),
        events: s.events,
        progress: s.progress.as_ref().map(|p| {
            serde_json::json!({
                "event": &*p.name,
                "data": serde_json::from_str::<serde_json::Value>(&p.data).unwrap_or_default(),
            })
        }),
        result: s
            .outcome
            .as_ref()
            .filter(|o| o.outcome() == Some(Outcome::Result))
            .and_then(raw),
        error: s
            .outcome
            .as_ref()
            .filter(|o| o.outcome() == Some(Outcome::Error))
            .and_then(raw),
    }
}

fn owner_of(owner: Option<Extension<Owner>>) -> Owner {
    owner.map(|o| o.0).unwrap_or_default()
}

/// A job: status, the newest progress, and the result or error when done.
#[utoipa::path(
    get,
    path = "/v1/jobs/{id}",
    operation_id = "getJob",
    tag = "jobs",
    params(("id" = String, Path, description = "The job id from the `Location` of the 202")),
    responses(
        (status = 200, description = "The job", body = JobView),
        (status = 404, description = "No such job for this API key (or it expired)", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The job finished and was evicted under COMPACTD_JOBS_MAX / COMPACTD_JOBS_MAX_BYTES (`job-evicted`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_job(
    State(state): State<AppState>,
    owner: Option<Extension<Owner>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let owner = owner_of(owner);
    let Some(s) = state.jobs.get(owner, &id).await? else {
        return Err(missing(&state.jobs, owner, &id).await);
    };
    Ok(Json(view(&s)).into_response())
}

/// A job's events as Server-Sent Events: the logged ones (from after `Last-Event-ID`),
/// then live ones until `result` or `error`.
#[utoipa::path(
    get,
    path = "/v1/jobs/{id}/events",
    operation_id = "getJobEvents",
    tag = "jobs",
    params(
        ("id" = String, Path, description = "The job id"),
        ("last-event-id" = Option<u64>, Header, description = "Resume after this event id"),
    ),
    responses(
        (status = 200, description = "`text/event-stream`: the events of `/v1/compact`'s stream", content_type = "text/event-stream", body = String),
        (status = 404, description = "No such job for this API key (or it expired)", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The job finished and was evicted under COMPACTD_JOBS_MAX / COMPACTD_JOBS_MAX_BYTES (`job-evicted`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "COMPACTD_MAX_FOLLOWERS clients already follow job events (`too-many-followers`, with Retry-After)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_job_events(
    State(state): State<AppState>,
    owner: Option<Extension<Owner>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let from = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(0, |n| n.saturating_add(1));
    follow(&state, owner_of(owner), &id, from).await
}

/// Cancels a job (its model calls stop); a finished job is left as it is.
#[utoipa::path(
    delete,
    path = "/v1/jobs/{id}",
    operation_id = "cancelJob",
    tag = "jobs",
    params(("id" = String, Path, description = "The job id")),
    responses(
        (status = 200, description = "The job, now `cancelled` (or as it finished)", body = JobView),
        (status = 404, description = "No such job for this API key (or it expired)", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The job finished and was evicted under COMPACTD_JOBS_MAX / COMPACTD_JOBS_MAX_BYTES (`job-evicted`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_job(
    State(state): State<AppState>,
    owner: Option<Extension<Owner>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let cancelled = ApiError::JobCancelled;
    let owner = owner_of(owner);
    let cancel = state.jobs.cancel(
        owner,
        &id,
        error_logged(&cancelled),
        cancelled.status().as_u16(),
    );
    let Some(s) = cancel.await? else {
        return Err(missing(&state.jobs, owner, &id).await);
    };
    Ok(Json(view(&s)).into_response())
}

#[cfg(test)]
mod tests;
