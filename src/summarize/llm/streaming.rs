//! Reading a streamed answer: the `text/event-stream` body of a 200, chunk by chunk,
//! with the stall timer and the `delta` throttle.
//!
//! Design decisions:
//! * **Stall by silence.** Every read of the body waits at most the candidate's stall
//!   time; any bytes count, comments and Anthropic's `ping`s included, since they prove
//!   the connection alive. A silent stream is [`Failure::Stalled`], retried like a
//!   timeout. The attempt's own timeout (`upstream_timeout`) still bounds the whole
//!   exchange, and the call's deadline everything.
//! * **Deltas throttled here**, where the chunks arrive: the first count, then at most
//!   one every [`DELTA_INTERVAL`], and the final one when the stream ends, each only
//!   when the count changed. The caller turns a count into a `delta` event.
//! * The same limits as a plain answer: at most [`MAX_RESPONSE_BYTES`] are read.
//! * Reading stops at the end marker (`[DONE]`, `message_stop`) without waiting for the
//!   server to close the connection.

use std::time::Duration;

use tokio::time::Instant;

use super::outcome::{Answer, Failure, StreamedTokens, MAX_QUOTED_CHARS, MAX_RESPONSE_BYTES};
use super::sse::Decoder;
use super::{anthropic, openai, truncate, ModelKind, Secrets};
use crate::summarize::DELTA_INTERVAL;

/// The wire format's reader.
enum Wire {
    Openai(openai::Streamed),
    Anthropic(anthropic::Streamed),
}

impl Wire {
    fn on_data(&mut self, data: &str) -> Result<(), Failure> {
        match self {
            Wire::Openai(s) => s.on_data(data),
            Wire::Anthropic(s) => s.on_data(data),
        }
    }

    fn done(&self) -> bool {
        match self {
            Wire::Openai(s) => s.done,
            Wire::Anthropic(s) => s.done,
        }
    }

    fn written(&self) -> StreamedTokens {
        match self {
            Wire::Openai(s) => s.written(),
            Wire::Anthropic(s) => s.written(),
        }
    }

    fn finish(self) -> Result<Answer, Failure> {
        match self {
            Wire::Openai(s) => s.finish(),
            Wire::Anthropic(s) => s.finish(),
        }
    }
}

/// Whether a 200 is a stream (a server may ignore `stream: true` and answer JSON).
pub(super) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .get(..17)
                .is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
        })
}

/// Reports counts at most every [`DELTA_INTERVAL`], and only changed ones.
struct Throttle<'r> {
    report: &'r mut (dyn FnMut(StreamedTokens) + Send),
    last: Option<(Instant, StreamedTokens)>,
}

impl Throttle<'_> {
    fn offer(&mut self, w: StreamedTokens, last_one: bool) {
        if w.output == 0 {
            return;
        }
        let due = match self.last {
            None => true,
            Some((at, sent)) => sent != w && (last_one || at.elapsed() >= DELTA_INTERVAL),
        };
        if due {
            self.last = Some((Instant::now(), w));
            (self.report)(w);
        }
    }
}

/// Reads the stream of a 200 to its answer; `stall` bounds each wait for bytes (`None`:
/// unbounded), `report` gets the throttled counts. Upstream error text is scrubbed of
/// every key in `secrets`.
pub(super) async fn read(
    mut response: reqwest::Response,
    kind: ModelKind,
    stall: Option<Duration>,
    report: &mut (dyn FnMut(StreamedTokens) + Send),
    secrets: &Secrets,
) -> Result<Answer, Failure> {
    let mut wire = match kind {
        ModelKind::Openai | ModelKind::AzureOpenai => Wire::Openai(Default::default()),
        ModelKind::Anthropic => Wire::Anthropic(Default::default()),
    };
    let mut throttle = Throttle { report, last: None };
    let mut decoder = Decoder::default();
    let mut events = Vec::new();
    let mut read: u64 = 0;
    let outcome = async {
        let mut ended = false;
        while !ended && !wire.done() {
            let next = response.chunk();
            let chunk = match stall {
                Some(d) => tokio::time::timeout(d, next)
                    .await
                    .map_err(|_| Failure::Stalled(d))?,
                None => next.await,
            };
            match chunk.map_err(Failure::from_reqwest)? {
                Some(bytes) => {
                    read += bytes.len() as u64;
                    if read > MAX_RESPONSE_BYTES {
                        return Err(Failure::TooLarge);
                    }
                    decoder.feed(&bytes, &mut events);
                }
                None => {
                    decoder.finish(&mut events);
                    ended = true;
                }
            }
            for e in events.drain(..) {
                wire.on_data(&e.data)?;
                if wire.done() {
                    break;
                }
            }
            throttle.offer(wire.written(), false);
        }
        Ok(())
    }
    .await;
    match outcome {
        Ok(()) => {
            throttle.offer(wire.written(), true);
            wire.finish()
        }
        Err(Failure::Interrupted {
            code,
            kind,
            message,
        }) => Err(Failure::Interrupted {
            code,
            kind,
            message: message.map(|m| {
                let m = m.split_whitespace().collect::<Vec<_>>().join(" ");
                truncate(&secrets.scrub(&m), MAX_QUOTED_CHARS)
            }),
        }),
        Err(f) => Err(f),
    }
}
