//! The Anthropic Messages API: `POST {base}/v1/messages`.
//!
//! With a thinking budget the request carries `thinking: {type: "enabled",
//! budget_tokens}` and `max_tokens` holds the thinking and the answer: the budget plus
//! the request's output budget, capped by the candidate's `max_output_tokens` (the
//! configuration checked that it exceeds the budget, so `max_tokens` > `budget_tokens`
//! always, as Anthropic requires). No `temperature` goes with thinking (refused by the
//! configuration). Thinking blocks (`thinking`, `redacted_thinking`) are never the
//! summary; Anthropic counts thinking in `output_tokens` and reports no separate number,
//! so `usage.reasoning` stays 0.
//!
//! Streaming (`"stream": true`, the default; a candidate's `stream = false` turns it
//! off) is read by [`Streamed`]: `message_start` (the input usage), per content block
//! `content_block_start`, `content_block_delta`s (`text_delta`, `thinking_delta`,
//! `signature_delta`) and `content_block_stop`, then `message_delta` (the `stop_reason`
//! and the output usage), `message_stop`; `ping`s keep the connection alive and unknown
//! events are ignored, as Anthropic asks. An `error` event (`overloaded_error`, …) breaks
//! the stream off: it becomes the failure the same error would be as an HTTP status
//! (`overloaded_error` 529, retried). The answer is judged exactly as a plain one.

use serde::{Deserialize, Serialize};

use super::outcome::{Answer, Failure, StreamedTokens};
use crate::summarize::{SummaryRequest, Usage};

/// The `anthropic-version` header sent with every request.
pub(super) const VERSION: &str = "2023-06-01";

/// `max_tokens` for a request that sets no cap when the candidate sets no
/// `max_output_tokens`: Anthropic requires the field.
const UNCAPPED_MAX_TOKENS: u64 = crate::config::DEFAULT_ANTHROPIC_MAX_TOKENS;

/// The request body, borrowing the prompts. No `cache_control`: a one-off request gains
/// nothing from a prompt-cache write and would pay for it.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: [Message<'a>; 1],
    max_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Debug, Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u64,
}

/// What the candidate adds to a request.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Knobs {
    /// Ask for a stream of events.
    pub stream: bool,
    pub thinking_budget: Option<u64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// The candidate's `max_output_tokens`.
    pub max_output: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

pub(super) fn body<'a>(model: &'a str, req: &'a SummaryRequest, knobs: Knobs) -> Body<'a> {
    let cap = knobs.max_output.unwrap_or(UNCAPPED_MAX_TOKENS);
    let max_tokens = match (req.max_tokens, knobs.thinking_budget) {
        (0, _) => cap,
        (n, None) => n.min(knobs.max_output.unwrap_or(u64::MAX)),
        (n, Some(budget)) => n
            .saturating_add(budget)
            .min(knobs.max_output.unwrap_or(u64::MAX)),
    };
    Body {
        model,
        system: (!req.system_prompt.is_empty()).then_some(req.system_prompt.as_str()),
        messages: [Message {
            role: "user",
            content: &req.prompt,
        }],
        max_tokens,
        thinking: knobs.thinking_budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        temperature: knobs
            .temperature
            .filter(|_| knobs.thinking_budget.is_none()),
        top_p: knobs.top_p,
        stream: knobs.stream,
    }
}

#[derive(Deserialize)]
struct Response {
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize, Default, Clone)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

/// A 200 answer: the text blocks joined with newlines, which must be complete and
/// non-empty.
pub(super) fn parse(bytes: &[u8]) -> Result<Answer, Failure> {
    let r: Response = serde_json::from_slice(bytes).map_err(Failure::unparsable)?;
    let text = r
        .content
        .into_iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text)
        .collect::<Vec<_>>()
        .join("\n");
    answer(r.stop_reason.as_deref(), &text, r.usage.unwrap_or_default())
}

/// A finished answer, streamed or not: its stop reason checked, not empty.
fn answer(stop_reason: Option<&str>, text: &str, u: WireUsage) -> Result<Answer, Failure> {
    match stop_reason {
        None | Some("end_turn") | Some("stop_sequence") => {}
        Some(other) => {
            return Err(Failure::Stopped {
                field: "stop_reason",
                value: other.chars().take(32).collect(),
            })
        }
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(Failure::Empty);
    }
    let usage = Usage {
        input: u.input_tokens.unwrap_or(0),
        output: u.output_tokens.unwrap_or(0),
        cache_read: u.cache_read_input_tokens.unwrap_or(0),
        cache_write: u.cache_creation_input_tokens.unwrap_or(0),
        total_tokens: 0,
        reasoning: 0,
    };
    Ok(Answer {
        text: text.to_string(),
        usage: Usage {
            total_tokens: usage.input + usage.output + usage.cache_read + usage.cache_write,
            ..usage
        },
    })
}

/// One streamed event's data, by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: StreamError,
    },
    /// `ping`, `content_block_stop`, and events added later.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    /// `signature_delta`, `input_json_delta`, …
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct StreamError {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<String>,
}

/// The HTTP status Anthropic gives the same error before a stream starts.
fn status_of(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        // `api_error` and anything new: a server error, retried.
        _ => 500,
    }
}

/// A streamed answer as it arrives (see the module documentation).
#[derive(Default)]
pub(super) struct Streamed {
    /// The content blocks by index: their kind and text.
    blocks: Vec<(String, String)>,
    text_units: u64,
    thinking_units: u64,
    usage: WireUsage,
    stop_reason: Option<String>,
    /// `message_delta` arrived with the output count.
    counted: bool,
    /// `message_stop` arrived: nothing more is read.
    pub(super) done: bool,
}

impl Streamed {
    /// One event's data (its `type` names it; the `event:` line says the same).
    pub(super) fn on_data(&mut self, data: &str) -> Result<(), Failure> {
        let event: StreamEvent = serde_json::from_str(data).map_err(Failure::unparsable)?;
        match event {
            StreamEvent::MessageStart { message } => {
                // Its `output_tokens` is a placeholder (1): the count comes at the end.
                let u = message.usage.unwrap_or_default();
                self.usage = WireUsage {
                    output_tokens: None,
                    ..u
                };
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                if self.blocks.len() <= index {
                    self.blocks.resize(index + 1, Default::default());
                }
                let text = content_block.text.unwrap_or_default();
                self.text_units += utf16(&text);
                self.blocks[index] = (content_block.kind, text);
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => {
                    self.text_units += utf16(&text);
                    if let Some((_, t)) = self.blocks.get_mut(index) {
                        t.push_str(&text);
                    }
                }
                BlockDelta::ThinkingDelta { thinking } => self.thinking_units += utf16(&thinking),
                BlockDelta::Other => {}
            },
            StreamEvent::MessageDelta { delta, usage } => {
                self.stop_reason = delta.stop_reason;
                // Cumulative counts; newer versions repeat the input ones here.
                if let Some(u) = usage {
                    self.counted |= u.output_tokens.is_some();
                    self.usage = WireUsage {
                        input_tokens: u.input_tokens.or(self.usage.input_tokens),
                        output_tokens: u.output_tokens.or(self.usage.output_tokens),
                        cache_read_input_tokens: u
                            .cache_read_input_tokens
                            .or(self.usage.cache_read_input_tokens),
                        cache_creation_input_tokens: u
                            .cache_creation_input_tokens
                            .or(self.usage.cache_creation_input_tokens),
                    };
                }
            }
            StreamEvent::MessageStop => self.done = true,
            StreamEvent::Error { error } => {
                return Err(Failure::Interrupted {
                    code: status_of(&error.kind),
                    kind: error.kind.chars().take(64).collect(),
                    // Scrubbed of keys and shortened by the reader.
                    message: error.message,
                });
            }
            StreamEvent::Other => {}
        }
        Ok(())
    }

    /// The tokens written so far: estimated until `message_delta` gives the count
    /// (which includes the thinking; its share stays an estimate).
    pub(super) fn written(&self) -> StreamedTokens {
        let thinking = self.thinking_units.div_ceil(4);
        let server = self
            .usage
            .output_tokens
            .filter(|_| self.counted)
            .map(|o| (o, thinking.min(o)));
        StreamedTokens::count(self.text_units, self.thinking_units, server)
    }

    /// The stream ended: the answer, judged as a plain one. A stream that ended before
    /// `message_stop` and without a stop reason was cut (a transport failure: retried).
    pub(super) fn finish(self) -> Result<Answer, Failure> {
        if !self.done && self.stop_reason.is_none() {
            return Err(Failure::Transport(
                "the stream ended before the answer was complete".into(),
            ));
        }
        let text = self
            .blocks
            .into_iter()
            .filter(|(kind, _)| kind == "text")
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join("\n");
        answer(self.stop_reason.as_deref(), &text, self.usage)
    }
}

fn utf16(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::RequestKind;

    #[test]
    fn body_shape() {
        let mut req = SummaryRequest {
            kind: RequestKind::History,
            system_prompt: "sys".into(),
            prompt: "p".into(),
            max_tokens: 100,
            strategy: None,
            model: None,
            ledger: None,
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, Knobs::default())).unwrap(),
            r#"{"model":"m","system":"sys","messages":[{"role":"user","content":"p"}],"max_tokens":100}"#
        );
        let thinking = Knobs {
            stream: false,
            thinking_budget: Some(2048),
            temperature: Some(0.3),
            top_p: None,
            max_output: Some(2100),
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, thinking)).unwrap(),
            r#"{"model":"m","system":"sys","messages":[{"role":"user","content":"p"}],"max_tokens":2100,"thinking":{"type":"enabled","budget_tokens":2048}}"#
        );
        req.system_prompt.clear();
        assert_eq!(
            serde_json::to_string(&body("m", &req, Knobs::default())).unwrap(),
            r#"{"model":"m","messages":[{"role":"user","content":"p"}],"max_tokens":100}"#
        );
        let streaming = Knobs {
            stream: true,
            ..Knobs::default()
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, streaming)).unwrap(),
            r#"{"model":"m","messages":[{"role":"user","content":"p"}],"max_tokens":100,"stream":true}"#
        );
    }

    fn streamed(events: &[&str]) -> (Streamed, Result<(), Failure>) {
        let mut s = Streamed::default();
        for e in events {
            if let Err(f) = s.on_data(e) {
                return (s, Err(f));
            }
        }
        (s, Ok(()))
    }

    #[test]
    fn streams_as_anthropic_sends_them() {
        let (s, ok) = streamed(&[
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmmm hmmm"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"Emw"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type": "ping"}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":" a"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"text","text":"b"}}"#,
            r#"{"type":"some_future_event","x":1}"#,
        ]);
        ok.unwrap();
        assert_eq!(
            s.written(),
            StreamedTokens {
                output: 1 + 3,
                reasoning: 3,
                estimated: true
            }
        );
        let (s, ok) = {
            let mut s = s;
            let r = s
                .on_data(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}"#)
                .and_then(|_| s.on_data(r#"{"type":"message_stop"}"#));
            (s, r)
        };
        ok.unwrap();
        assert!(s.done);
        assert_eq!(
            s.written(),
            StreamedTokens {
                output: 5,
                reasoning: 3,
                estimated: false
            }
        );
        // The same answer and usage as the plain `parses_blocks_and_usage`.
        let a = s.finish().unwrap();
        assert_eq!(a.text, "a\nb");
        assert_eq!(
            a.usage,
            Usage {
                input: 10,
                output: 5,
                cache_read: 3,
                cache_write: 2,
                total_tokens: 20,
                reasoning: 0
            }
        );
    }

    #[test]
    fn streamed_failures() {
        let (s, _) = streamed(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"half"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":100}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert!(matches!(s.finish(), Err(Failure::Stopped { .. })));
        let (s, _) = streamed(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"cut"}}"#,
        ]);
        assert!(matches!(s.finish(), Err(Failure::Transport(_))));
        let (_, e) = streamed(&[
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        let e = e.unwrap_err();
        assert!(e.is_transient(), "{e:?}");
        assert_eq!(e.status(), 529);
        assert_eq!(
            e.to_string(),
            "the stream broke off with an error (overloaded_error: Overloaded)"
        );
        let (_, e) = streamed(&[
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"no"}}"#,
        ]);
        assert!(!e.unwrap_err().is_transient());
    }

    #[test]
    fn parses_blocks_and_usage() {
        let a = parse(
            br#"{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"a"},{"type":"text","text":"b"}],
                 "stop_reason":"end_turn",
                 "usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}"#,
        )
        .unwrap();
        assert_eq!(a.text, "a\nb");
        assert_eq!(
            a.usage,
            Usage {
                input: 10,
                output: 5,
                cache_read: 3,
                cache_write: 2,
                total_tokens: 20,
                reasoning: 0
            }
        );
    }

    #[test]
    fn failures() {
        let cut =
            parse(br#"{"content":[{"type":"text","text":"half"}],"stop_reason":"max_tokens"}"#);
        assert!(matches!(cut, Err(Failure::Stopped { .. })), "{cut:?}");
        let empty = parse(br#"{"content":[],"stop_reason":"end_turn"}"#);
        assert!(matches!(empty, Err(Failure::Empty)));
        assert!(matches!(parse(b"{}"), Err(Failure::Unparsable(_))));
    }
}
