//! Progress as Server-Sent Events: `Accept: text/event-stream` on the
//! summarizing endpoints (`/v1/compact`, `/v1/summarize`, `/v1/branch-summary`,
//! `/v1/hermes/compress`).
//!
//! A handler does everything that can fail early (body, options, the plan) first: those
//! errors are ordinary HTTP errors. What is left, the summarizer stage, is a [`Work`]: a
//! future that reports to a [`ProgressSink`] and ends with the JSON bytes of the plain
//! answer. `respond::deliver` either awaits it (a plain answer), makes it a job (`jobs`), or
//! runs it on its own task here ([`events`]) and streams `prepared`, `summarizing`, `retry`, `fallback`, `delta`, then `result` (exactly the
//! bytes the plain request would get) or `error` (a problem document). Every event has a
//! sequential `id`.
//!
//! Design decisions:
//! * The work runs on a spawned task so the stream can send heartbeats (a comment after
//!   `heartbeat_ms` of silence, axum's keep-alive) while it waits; the task is aborted
//!   when the stream is dropped, so a client that disconnects cancels the work (and its
//!   upstream requests).
//! * The task keeps the request's place under the concurrency limit ([`Permit`]) and
//!   its deadline (`request_timeout_secs`), which the guard can no longer enforce once
//!   the headers are sent.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::summarize::{ProgressEvent, ProgressSink};

use super::guard::Permit;
use super::problem::ApiError;
use super::AppState;

/// The summarizer stage of a request: reports to the sink, ends with the answer's JSON.
pub(super) type Work = Pin<Box<dyn Future<Output = Result<Vec<u8>, ApiError>> + Send>>;

/// How the client wants the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// One JSON answer when the work is done.
    Plain,
    /// Server-Sent Events while it runs.
    Events,
}

impl Delivery {
    /// `Accept: text/event-stream` (a media range of exactly that type, not `q=0`).
    pub(super) fn of(headers: &HeaderMap) -> Delivery {
        let events = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|range| {
                let mut params = range.split(';').map(str::trim);
                let media = params.next().unwrap_or("");
                media.eq_ignore_ascii_case("text/event-stream")
                    && !params.any(|p| {
                        p.split_once('=').is_some_and(|(k, v)| {
                            k.trim().eq_ignore_ascii_case("q")
                                && v.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
                        })
                    })
            });
        if events {
            Delivery::Events
        } else {
            Delivery::Plain
        }
    }
}

/// The JSON of a plain answer (what `Json(value)` would send).
pub(super) fn json_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(value).map_err(|e| ApiError::Internal(e.to_string()))
}

/// What the work's task sends the stream.
enum Item {
    Progress(ProgressEvent),
    Done(Result<Vec<u8>, ApiError>),
}

/// Forwards progress to the stream. Unbounded: a compaction reports a handful of events
/// per summarizer call, plus `delta`s throttled to four a second while a model writes,
/// and the task ends with the stream.
struct ChannelSink(mpsc::UnboundedSender<Item>);

impl ProgressSink for ChannelSink {
    fn emit(&self, event: ProgressEvent) {
        let _ = self.0.send(Item::Progress(event));
    }
}

/// Aborts the work when the stream is dropped (the client went away).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs the work on its own task and streams its events (see the module documentation).
pub(super) fn events(
    state: &AppState,
    permit: Option<Permit>,
    work: impl FnOnce(Arc<dyn ProgressSink>) -> Work,
) -> Response {
    let (tx, rx) = mpsc::unbounded_channel();
    let run = work(Arc::new(ChannelSink(tx.clone())));
    let timeout = state.config.request_timeout;
    let task = tokio::spawn(async move {
        let _permit = permit;
        let result = tokio::time::timeout(timeout, run)
            .await
            .unwrap_or(Err(ApiError::RequestTimeout));
        let _ = tx.send(Item::Done(result));
    });
    let stream = futures_util::stream::unfold(
        (rx, AbortOnDrop(task), 0u64, false),
        |(mut rx, task, id, done)| async move {
            if done {
                return None;
            }
            let (event, done) = match rx.recv().await {
                Some(Item::Progress(e)) => (progress_event(&e), false),
                Some(Item::Done(Ok(json))) => (
                    Event::default()
                        .event("result")
                        .data(String::from_utf8_lossy(&json)),
                    true,
                ),
                Some(Item::Done(Err(e))) => (error_event(&e), true),
                // The task ended without an answer: it panicked.
                None => (
                    error_event(&ApiError::Internal(
                        "the work ended without an answer".into(),
                    )),
                    true,
                ),
            };
            let event = event.id(id.to_string());
            Some((Ok::<_, Infallible>(event), (rx, task, id + 1, done)))
        },
    );
    let mut res = Sse::new(stream)
        .keep_alive(
            KeepAlive::new()
                .interval(state.config.heartbeat)
                .text("heartbeat"),
        )
        .into_response();
    // Proxies (nginx) must pass events on as they come.
    res.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

/// A progress event: its name, and its JSON as data.
pub(super) fn progress_event(e: &ProgressEvent) -> Event {
    let data = serde_json::to_string(e).unwrap_or_else(|_| "{}".into());
    Event::default().event(e.name()).data(data)
}

/// An `error` event: the problem document the plain request would get.
pub(super) fn error_event(e: &ApiError) -> Event {
    if let ApiError::Internal(msg) = e {
        tracing::error!(error = %msg, "internal error");
    }
    let data = serde_json::to_string(&e.problem()).unwrap_or_else(|_| "{}".into());
    Event::default().event("error").data(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> Delivery {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        Delivery::of(&h)
    }

    #[test]
    fn event_streams_are_asked_for_by_media_type() {
        assert_eq!(accept("text/event-stream"), Delivery::Events);
        assert_eq!(
            accept("application/json, Text/Event-Stream;q=0.5"),
            Delivery::Events
        );
        assert_eq!(accept("text/event-stream;q=0"), Delivery::Plain);
        assert_eq!(accept("application/json"), Delivery::Plain);
        assert_eq!(accept("*/*"), Delivery::Plain);
        assert_eq!(Delivery::of(&HeaderMap::new()), Delivery::Plain);
    }
}
