//! One attempt: one HTTP exchange with one candidate.
//!
//! The request is built for the candidate's wire format and sent to its endpoint; the
//! answer is read up to [`MAX_RESPONSE_BYTES`] and classified: a summary ([`Answer`]) or a
//! [`Failure`] that says whether another attempt could succeed (both in `outcome`).
//! Retrying, the deadline and the fallback are the engine's business, not this file's.
//!
//! A candidate that streams (the default) asks for a stream; errors still come as
//! ordinary HTTP error bodies before any stream starts, and are read here as before; a
//! 200 with a `text/event-stream` body is read by `streaming.rs`, one with a JSON body
//! (a server that ignored `stream`) as a plain answer. While streaming, the wait for the
//! response's head is bounded by the stall time too.

use std::time::{Duration, SystemTime};

use super::candidates::Candidate;
use super::outcome::{Answer, Failure, StreamedTokens, MAX_QUOTED_CHARS, MAX_RESPONSE_BYTES};
use super::{anthropic, openai, overflow, retry, streaming, truncate, ModelKind, Secrets};
use crate::summarize::SummaryRequest;

/// One HTTP exchange, bounded by `timeout`; a streamed answer also by `stall` (the
/// longest silence, `None`: none), its counts going to `report` as they arrive.
/// Upstream error messages are scrubbed of every key in `secrets` before they are kept.
pub(super) async fn send(
    client: &reqwest::Client,
    c: &Candidate,
    req: &SummaryRequest,
    timeout: Duration,
    stall: Option<Duration>,
    report: &mut (dyn FnMut(StreamedTokens) + Send),
    secrets: &Secrets,
) -> Result<Answer, Failure> {
    let mut builder = client.post(c.endpoint.clone());
    let o = &c.options;
    let stream = c.streams();
    let stall = stall.filter(|_| stream);
    builder = match c.kind {
        ModelKind::Openai | ModelKind::AzureOpenai => {
            let knobs = openai::Knobs {
                stream,
                completion_tokens: c.completion_tokens(),
                temperature: c.temperature(),
                top_p: o.top_p,
                reasoning_effort: o.reasoning_effort.as_deref(),
                max_output: o.max_output_tokens,
            };
            builder.json(&openai::body(&c.model, req, knobs))
        }
        ModelKind::Anthropic => {
            let knobs = anthropic::Knobs {
                stream,
                thinking_budget: o.thinking_budget,
                temperature: c.temperature(),
                top_p: o.top_p,
                max_output: o.max_output_tokens,
            };
            builder
                .header("anthropic-version", anthropic::VERSION)
                .json(&anthropic::body(&c.model, req, knobs))
        }
    };
    for (name, value) in &c.headers {
        builder = builder.header(name.clone(), value.clone());
    }
    if let Some((name, value)) = &c.auth {
        builder = builder.header(name.clone(), value.clone());
    }
    let exchange = async {
        let sent = builder.send();
        let sent = match stall {
            Some(d) => tokio::time::timeout(d, sent)
                .await
                .map_err(|_| Failure::Stalled(d))?,
            None => sent.await,
        };
        let mut response = sent.map_err(Failure::from_reqwest)?;
        let status = response.status();
        let retry_after = retry::retry_after(response.headers(), SystemTime::now());
        if response.content_length().unwrap_or(0) > MAX_RESPONSE_BYTES {
            return Err(Failure::TooLarge);
        }
        if stream && status.is_success() && streaming::is_event_stream(&response) {
            return streaming::read(response, c.kind, stall, report, secrets).await;
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(Failure::from_reqwest)? {
            if (body.len() + chunk.len()) as u64 > MAX_RESPONSE_BYTES {
                return Err(Failure::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let message =
                || error_message(&body).map(|m| truncate(&secrets.scrub(&m), MAX_QUOTED_CHARS));
            if let Some(limit) = overflow::detect(status.as_u16(), &body) {
                return Err(Failure::ContextOverflow {
                    code: status.as_u16(),
                    limit,
                    message: message(),
                });
            }
            return Err(Failure::Status {
                code: status.as_u16(),
                retry_after,
                message: message(),
            });
        }
        match c.kind {
            ModelKind::Openai | ModelKind::AzureOpenai => openai::parse(&body),
            ModelKind::Anthropic => anthropic::parse(&body),
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Failure::Timeout(timeout)),
    }
}

/// The `error.message` (or `error`, or `message`) of an upstream error body, on one line
/// (to be scrubbed of keys, then shortened).
fn error_message(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(|m| m.as_str())
        .or_else(|| error.and_then(|e| e.as_str()))
        .or_else(|| v.get("message").and_then(|m| m.as_str()))?;
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    (!message.is_empty()).then_some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_short() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Rate   limit\nreached","type":"x"}}"#)
                .as_deref(),
            Some("Rate limit reached")
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(error_message(b"<html>"), None);
    }
}
