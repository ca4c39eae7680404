//! What one attempt gives: the model's [`Answer`], or a [`Failure`] that says whether
//! another attempt could succeed.
//!
//! Design decision: the wire formats (`openai`, `anthropic`) classify a body into these
//! types and `attempt` classifies the exchange, while `attempt` also calls the wire
//! formats; so the types live in this file of their own, below both, and the imports
//! point one way (`attempt` → wire formats → `outcome`).

use std::fmt;
use std::time::Duration;

use super::{retry, truncate};
use crate::summarize::Usage;

/// Largest upstream answer read, in bytes.
pub(super) const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;
/// Longest piece of upstream text (an error message) quoted in a log line or an error.
pub(super) const MAX_QUOTED_CHARS: usize = 200;

/// A model's answer to one attempt.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) usage: Usage,
}

/// Output tokens of an answer being streamed, so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct StreamedTokens {
    /// Everything generated, reasoning included.
    pub(super) output: u64,
    pub(super) reasoning: u64,
    /// Counted from the text (UTF-16 units / 4, compactd's estimate), not by the server.
    pub(super) estimated: bool,
}

impl StreamedTokens {
    /// From the UTF-16 units streamed so far, or the server's counts once given.
    pub(super) fn count(text_units: u64, reasoning_units: u64, server: Option<(u64, u64)>) -> Self {
        match server {
            Some((output, reasoning)) => StreamedTokens {
                output,
                reasoning,
                estimated: false,
            },
            None => {
                let reasoning = reasoning_units.div_ceil(4);
                StreamedTokens {
                    output: text_units.div_ceil(4) + reasoning,
                    reasoning,
                    estimated: true,
                }
            }
        }
    }
}

/// Why one attempt failed. The texts are short and never hold a key, a URL or a body.
#[derive(Debug)]
pub(super) enum Failure {
    /// No connection (refused, DNS, TLS).
    Connect(String),
    /// No complete answer within the per-attempt timeout.
    Timeout(Duration),
    /// The connection broke while sending or receiving (a stream that ended before the
    /// answer did is one).
    Transport(String),
    /// A streaming upstream sent nothing, not even a keep-alive, for this long (the
    /// candidate's stall time): the attempt is abandoned, like a timeout.
    Stalled(Duration),
    /// The server broke off a stream with an error event (Anthropic's `event: error`, an
    /// OpenAI-compatible `data: {"error": …}`): `code` is the HTTP status the same error
    /// has before a stream starts (`overloaded_error` 529, …), and decides retrying.
    Interrupted {
        code: u16,
        kind: String,
        message: Option<String>,
    },
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
    /// The upstream said the request exceeds the model's context window (`overflow.rs`),
    /// with the window it named, if any. Not retried as is: the engine shrinks the
    /// window it assumes for the candidate, and a caller that folds splits the request.
    ContextOverflow {
        code: u16,
        limit: Option<u64>,
        message: Option<String>,
    },
}

impl Failure {
    pub(super) fn unparsable(e: serde_json::Error) -> Failure {
        // serde's messages may quote a value from the body: keep them short.
        Failure::Unparsable(truncate(&e.to_string(), 120))
    }

    pub(super) fn from_reqwest(e: reqwest::Error) -> Failure {
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
            Failure::Connect(_)
            | Failure::Timeout(_)
            | Failure::Transport(_)
            | Failure::Stalled(_) => true,
            Failure::Status { code, .. } | Failure::Interrupted { code, .. } => {
                retry::transient_status(*code)
            }
            Failure::Stopped { .. }
            | Failure::Empty
            | Failure::Unparsable(_)
            | Failure::TooLarge
            | Failure::ContextOverflow { .. } => false,
        }
    }

    /// No access, no connection or no answer in time: hermes keeps the session
    /// unchanged on these instead of writing its fallback summary.
    pub(super) fn is_out_of_reach(&self) -> bool {
        match self {
            Failure::Connect(_)
            | Failure::Timeout(_)
            | Failure::Transport(_)
            | Failure::Stalled(_) => true,
            Failure::Status { code, .. } | Failure::Interrupted { code, .. } => {
                matches!(code, 401 | 402 | 403 | 408 | 504)
            }
            Failure::Stopped { .. }
            | Failure::Empty
            | Failure::Unparsable(_)
            | Failure::TooLarge
            | Failure::ContextOverflow { .. } => false,
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
            Failure::ContextOverflow { code, .. } => *code,
            Failure::Interrupted { code, .. } => *code,
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
            Failure::Stalled(d) => write!(
                f,
                "stalled: the stream sent nothing for {} ms",
                d.as_millis()
            ),
            Failure::Interrupted {
                kind,
                message: Some(m),
                ..
            } => write!(f, "the stream broke off with an error ({kind}: {m})"),
            Failure::Interrupted { kind, .. } => {
                write!(f, "the stream broke off with an error ({kind})")
            }
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
            Failure::ContextOverflow { message, .. } => {
                f.write_str("the request exceeds the model's context window")?;
                match message {
                    Some(m) => write!(f, " ({m})"),
                    None => Ok(()),
                }
            }
        }
    }
}
