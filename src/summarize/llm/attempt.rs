//! One attempt: one HTTP exchange with one candidate.
//!
//! The request is built for the candidate's wire format and sent to its endpoint; the
//! answer is read up to [`MAX_RESPONSE_BYTES`] and classified: a summary ([`Answer`]) or a
//! [`Failure`] that says whether another attempt could succeed. Retrying, the deadline and
//! the fallback are the engine's business, not this file's.

use std::fmt;
use std::time::{Duration, SystemTime};

use super::candidates::Candidate;
use super::{anthropic, openai, retry, truncate, ModelKind, Secrets};
use crate::summarize::{SummaryRequest, Usage};

/// Largest upstream answer read, in bytes.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;
/// Longest piece of upstream text (an error message) quoted in a log line or an error.
pub(super) const MAX_QUOTED_CHARS: usize = 200;

/// A model's answer to one attempt.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) usage: Usage,
}

/// Why one attempt failed. The texts are short and never hold a key, a URL or a body.
#[derive(Debug)]
pub(super) enum Failure {
    /// No connection (refused, DNS, TLS).
    Connect(String),
    /// No complete answer within the per-attempt timeout.
    Timeout(Duration),
    /// The connection broke while sending or receiving.
    Transport(String),
    /// A non-2xx status, with the server's requested wait and a short error message.
    Status {
        code: u16,
        retry_after: Option<Duration>,
        message: Option<String>,
    },
    /// The model stopped for another reason than finishing (output limit, filter).
    Stopped { field: &'static str, value: String },
    /// The answer held no text.
    Empty,
    /// The answer was not the expected JSON.
    Unparsable(String),
    /// The answer was larger than we read.
    TooLarge,
}

impl Failure {
    pub(super) fn unparsable(e: serde_json::Error) -> Failure {
        // serde's messages may quote a value from the body: keep them short.
        Failure::Unparsable(truncate(&e.to_string(), 120))
    }

    fn from_reqwest(e: reqwest::Error) -> Failure {
        let e = e.without_url();
        // The cause chain ("client error (Connect): tcp connect error: Connection
        // refused"); none of it holds a URL once the top level lost its own.
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text = format!("{text}: {cause_text}");
            }
            source = cause.source();
        }
        let text = truncate(&text, MAX_QUOTED_CHARS);
        if e.is_connect() {
            Failure::Connect(text)
        } else {
            Failure::Transport(text)
        }
    }

    /// Worth another attempt at the same candidate with the same request.
    pub(super) fn is_transient(&self) -> bool {
        match self {
            Failure::Connect(_) | Failure::Timeout(_) | Failure::Transport(_) => true,
            Failure::Status { code, .. } => retry::transient_status(*code),
            Failure::Stopped { .. }
            | Failure::Empty
            | Failure::Unparsable(_)
            | Failure::TooLarge => false,
        }
    }

    /// The wait the upstream asked for (`Retry-After`), if any.
    pub(super) fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status for log lines (0: no status).
    pub(super) fn status(&self) -> u16 {
        match self {
            Failure::Status { code, .. } => *code,
            _ => 0,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "cannot connect ({e})"),
            Failure::Timeout(d) => write!(f, "no answer within {} ms", d.as_millis()),
            Failure::Transport(e) => write!(f, "transport error ({e})"),
            Failure::Status {
                code,
                message: Some(m),
                ..
            } => write!(f, "HTTP {code}: {m}"),
            Failure::Status { code, .. } => write!(f, "HTTP {code}"),
            Failure::Stopped { field, value } => {
                write!(f, "answer cut off ({field} {value:?})")
            }
            Failure::Empty => f.write_str("empty answer"),
            Failure::Unparsable(e) => write!(f, "unparsable answer ({e})"),
            Failure::TooLarge => write!(f, "answer larger than {MAX_RESPONSE_BYTES} bytes"),
        }
    }
}

/// One HTTP exchange, bounded by `timeout`. Upstream error messages are scrubbed of every
/// key in `secrets` before they are kept.
pub(super) async fn send(
    client: &reqwest::Client,
    c: &Candidate,
    req: &SummaryRequest,
    timeout: Duration,
    secrets: &Secrets,
) -> Result<Answer, Failure> {
    let mut builder = client.post(c.endpoint.clone());
    builder = match c.kind {
        ModelKind::Openai => builder.json(&openai::body(&c.model, req)),
        ModelKind::Anthropic => builder
            .header("anthropic-version", anthropic::VERSION)
            .json(&anthropic::body(&c.model, req)),
    };
    if let Some((name, value)) = &c.auth {
        builder = builder.header(name.clone(), value.clone());
    }
    let exchange = async {
        let mut response = builder.send().await.map_err(Failure::from_reqwest)?;
        let status = response.status();
        let retry_after = retry::retry_after(response.headers(), SystemTime::now());
        if response.content_length().unwrap_or(0) > MAX_RESPONSE_BYTES {
            return Err(Failure::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(Failure::from_reqwest)? {
            if (body.len() + chunk.len()) as u64 > MAX_RESPONSE_BYTES {
                return Err(Failure::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(Failure::Status {
                code: status.as_u16(),
                retry_after,
                message: error_message(&body)
                    .map(|m| truncate(&secrets.scrub(&m), MAX_QUOTED_CHARS)),
            });
        }
        match c.kind {
            ModelKind::Openai => openai::parse(&body),
            ModelKind::Anthropic => anthropic::parse(&body),
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Failure::Timeout(timeout)),
    }
}

/// `{base}/chat/completions` or `{base}/v1/messages` (a base already ending in `/v1` gets
/// `/messages`), keeping the base's query (e.g. an `api-version`).
pub(super) fn endpoint(base: &reqwest::Url, kind: ModelKind) -> reqwest::Url {
    let path = base.path().trim_end_matches('/');
    let suffix = match kind {
        ModelKind::Openai => "/chat/completions",
        ModelKind::Anthropic if path.ends_with("/v1") => "/messages",
        ModelKind::Anthropic => "/v1/messages",
    };
    let mut url = base.clone();
    url.set_path(&format!("{path}{suffix}"));
    url.set_fragment(None);
    url
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
    fn endpoints() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(
            endpoint(&u("http://127.0.0.1:11434/v1/"), ModelKind::Openai).as_str(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            endpoint(
                &u("https://x.example/openai?api-version=1"),
                ModelKind::Openai
            )
            .as_str(),
            "https://x.example/openai/chat/completions?api-version=1"
        );
        assert_eq!(
            endpoint(&u("https://api.anthropic.com"), ModelKind::Anthropic).as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint(
                &u("https://proxy.example/anthropic/v1"),
                ModelKind::Anthropic
            )
            .as_str(),
            "https://proxy.example/anthropic/v1/messages"
        );
    }

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
