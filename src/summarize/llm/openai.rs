//! The OpenAI-compatible wire format: `POST {base}/chat/completions` (Azure OpenAI's
//! deployments speak it too).
//!
//! The output cap goes in `max_tokens`, or in `max_completion_tokens` for OpenAI's
//! reasoning models (which refuse `max_tokens`; the candidate decides which, see
//! `candidates.rs`). The answer's reasoning text (`reasoning_content`, `reasoning`) is
//! never taken as the summary; its token count (`completion_tokens_details.
//! reasoning_tokens`) is reported as `usage.reasoning`.
//!
//! Streaming (`stream: true`, the default; a candidate's `stream = false` turns it off):
//! the request adds `stream_options: {include_usage: true}`, and the answer is a
//! `text/event-stream` of `chat.completion.chunk`s, read by [`Streamed`]: a first chunk
//! with the role, content (and, from DeepSeek, vLLM, Ollama or OpenRouter, reasoning)
//! deltas, a chunk with the `finish_reason`, a last chunk with empty `choices` and the
//! `usage`, then `data: [DONE]`. Azure sends a first chunk with empty `choices` (its
//! prompt filter results); a server may report usage in every chunk (vLLM's
//! `continuous_usage_stats`): the last one counts. The answer is judged exactly as a
//! plain one (`finish_reason`, empty text, usage).

use serde::{Deserialize, Serialize};

use super::outcome::{Answer, Failure, StreamedTokens};
use crate::summarize::{SummaryRequest, Usage};

/// The request body, borrowing the prompts.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    /// Absent when the request sets no cap (`max_tokens` 0) and the candidate none.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    stream: bool,
    /// With `stream`: the usage in a last chunk (otherwise a stream reports none).
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// What the candidate adds to a request.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Knobs<'a> {
    /// Ask for a stream of chunks.
    pub stream: bool,
    /// The cap goes in `max_completion_tokens`.
    pub completion_tokens: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub reasoning_effort: Option<&'a str>,
    /// The candidate's `max_output_tokens`: caps the request's budget.
    pub max_output: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

pub(super) fn body<'a>(model: &'a str, req: &'a SummaryRequest, knobs: Knobs<'a>) -> Body<'a> {
    let mut messages = Vec::with_capacity(2);
    if !req.system_prompt.is_empty() {
        messages.push(Message {
            role: "system",
            content: &req.system_prompt,
        });
    }
    messages.push(Message {
        role: "user",
        content: &req.prompt,
    });
    let cap = match (req.max_tokens, knobs.max_output) {
        (0, max) => max,
        (n, max) => Some(n.min(max.unwrap_or(u64::MAX))),
    };
    Body {
        model,
        messages,
        max_tokens: cap.filter(|_| !knobs.completion_tokens),
        max_completion_tokens: cap.filter(|_| knobs.completion_tokens),
        stream: knobs.stream,
        stream_options: knobs.stream.then_some(StreamOptions {
            include_usage: true,
        }),
        temperature: knobs.temperature,
        top_p: knobs.top_p,
        reasoning_effort: knobs.reasoning_effort,
    }
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ResponseMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponseMessage {
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Deserialize)]
struct Part {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A 200 answer: the first choice's text, which must be complete and non-empty.
pub(super) fn parse(bytes: &[u8]) -> Result<Answer, Failure> {
    let r: Response = serde_json::from_slice(bytes).map_err(Failure::unparsable)?;
    let choice = r
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| Failure::Unparsable("no choices".into()))?;
    let text = choice.message.and_then(|m| m.content).map(Content::text);
    answer(
        choice.finish_reason.as_deref(),
        text.as_deref().unwrap_or(""),
        r.usage,
    )
}

/// A finished answer, streamed or not: complete (`finish_reason`), not empty.
fn answer(
    finish_reason: Option<&str>,
    text: &str,
    u: Option<WireUsage>,
) -> Result<Answer, Failure> {
    match finish_reason {
        None | Some("stop") | Some("end_turn") | Some("eos") => {}
        Some(other) => {
            return Err(Failure::Stopped {
                field: "finish_reason",
                value: other.chars().take(32).collect(),
            })
        }
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(Failure::Empty);
    }
    Ok(Answer {
        text: text.to_string(),
        usage: usage(u.unwrap_or_default()),
    })
}

impl Content {
    fn text(self) -> String {
        match self {
            Content::Text(t) => t,
            Content::Parts(parts) => parts
                .into_iter()
                .filter(|p| matches!(p.kind.as_deref(), None | Some("text") | Some("output_text")))
                .filter_map(|p| p.text)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// A server that fails mid-stream (vLLM, OpenAI's `server_error`).
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<Content>,
    /// DeepSeek, older vLLM.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, newer vLLM, Ollama.
    #[serde(default)]
    reasoning: Option<String>,
}

/// A streamed answer as it arrives (see the module documentation).
#[derive(Default)]
pub(super) struct Streamed {
    text: String,
    text_units: u64,
    reasoning_units: u64,
    finish_reason: Option<String>,
    usage: Option<WireUsage>,
    /// `data: [DONE]` arrived: nothing more is read.
    pub(super) done: bool,
}

impl Streamed {
    /// One event's data.
    pub(super) fn on_data(&mut self, data: &str) -> Result<(), Failure> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(Failure::unparsable)?;
        if let Some(e) = chunk.error {
            return Err(interrupted(&e));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u);
        }
        // Only `n = 1` is ever asked for: the first choice is the answer.
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(delta) = choice.delta {
                if let Some(c) = delta.content {
                    let c = c.text();
                    self.text_units += utf16(&c);
                    self.text.push_str(&c);
                }
                for r in [delta.reasoning_content, delta.reasoning].iter().flatten() {
                    self.reasoning_units += utf16(r);
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(())
    }

    /// The tokens written so far: estimated, until the server's usage arrives.
    pub(super) fn written(&self) -> StreamedTokens {
        let server = self.usage.as_ref().and_then(|u| {
            let output = u.completion_tokens?;
            let reasoning = u
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(self.reasoning_units.div_ceil(4));
            Some((output, reasoning))
        });
        StreamedTokens::count(self.text_units, self.reasoning_units, server)
    }

    /// The stream ended: the answer, judged as a plain one. A stream that ended with
    /// neither a `finish_reason` nor `[DONE]` was cut (a transport failure: retried).
    pub(super) fn finish(self) -> Result<Answer, Failure> {
        if !self.done && self.finish_reason.is_none() {
            return Err(Failure::Transport(
                "the stream ended before the answer was complete".into(),
            ));
        }
        answer(self.finish_reason.as_deref(), &self.text, self.usage)
    }
}

fn utf16(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

/// A mid-stream `{"error": …}`: its `code` when it is a status (vLLM), else a server
/// error (500, retried).
fn interrupted(e: &serde_json::Value) -> Failure {
    let field = |k: &str| e.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let code = e
        .get("code")
        .and_then(|c| c.as_u64().or_else(|| c.as_str()?.parse().ok()))
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500) as u16;
    Failure::Interrupted {
        code,
        kind: field("type")
            .unwrap_or_else(|| "error".into())
            .chars()
            .take(64)
            .collect(),
        // Scrubbed of keys and shortened by the reader.
        message: field("message").or_else(|| e.as_str().map(str::to_string)),
    }
}

/// pi's shape: cached prompt tokens are reads, not input; OpenAI reports no cache writes.
fn usage(u: WireUsage) -> Usage {
    let prompt = u.prompt_tokens.unwrap_or(0);
    let output = u.completion_tokens.unwrap_or(0);
    let cached = u
        .prompt_tokens_details
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0)
        .min(prompt);
    Usage {
        input: prompt - cached,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: u.total_tokens.unwrap_or(prompt + output),
        reasoning: u
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::RequestKind;

    #[test]
    fn body_shape() {
        let req = SummaryRequest {
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
            r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"p"}],"max_tokens":100,"stream":false}"#
        );
        let knobs = Knobs {
            stream: false,
            completion_tokens: true,
            temperature: Some(0.2),
            top_p: None,
            reasoning_effort: Some("low"),
            max_output: Some(64),
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, knobs)).unwrap(),
            r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"p"}],"max_completion_tokens":64,"stream":false,"temperature":0.2,"reasoning_effort":"low"}"#
        );
        let streaming = Knobs {
            stream: true,
            ..Knobs::default()
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, streaming)).unwrap(),
            r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"p"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    fn streamed(chunks: &[&str]) -> (Streamed, Result<(), Failure>) {
        let mut s = Streamed::default();
        for c in chunks {
            if let Err(e) = s.on_data(c) {
                return (s, Err(e));
            }
        }
        (s, Ok(()))
    }

    #[test]
    fn streams_as_openai_sends_them() {
        let (s, ok) = streamed(&[
            r#"{"id":"c","object":"chat.completion.chunk","choices":[],"prompt_filter_results":[]}"#,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think think"},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":" hé"},"finish_reason":null}],"usage":null}"#,
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
        let (s, ok) = streamed(&[
            r#"{"choices":[{"index":0,"delta":{"content":" hi "},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":60},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
            "[DONE]",
        ]);
        ok.unwrap();
        assert!(s.done);
        assert_eq!(
            s.written(),
            StreamedTokens {
                output: 7,
                reasoning: 2,
                estimated: false
            }
        );
        let a = s.finish().unwrap();
        assert_eq!(a.text, "hi");
        assert_eq!(
            a.usage,
            Usage {
                input: 40,
                output: 7,
                cache_read: 60,
                cache_write: 0,
                total_tokens: 107,
                reasoning: 2
            }
        );
    }

    #[test]
    fn streamed_failures() {
        let (s, _) = streamed(&[
            r#"{"choices":[{"index":0,"delta":{"content":"half"},"finish_reason":"length"}]}"#,
            "[DONE]",
        ]);
        assert!(matches!(s.finish(), Err(Failure::Stopped { .. })));
        let (s, _) = streamed(&[r#"{"choices":[{"index":0,"delta":{"content":"cut"}}]}"#]);
        assert!(matches!(s.finish(), Err(Failure::Transport(_))));
        let (s, _) = streamed(&[r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#]);
        assert!(matches!(s.finish(), Err(Failure::Empty)));
        let (_, e) = streamed(&[
            r#"{"error":{"object":"error","message":"boom","type":"InternalServerError","code":503}}"#,
        ]);
        let e = e.unwrap_err();
        assert!(e.is_transient(), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the stream broke off with an error (InternalServerError: boom)"
        );
        let (_, e) = streamed(&[
            r#"{"error":{"message":"bad","type":"invalid_request_error","code":"invalid_value"}}"#,
        ]);
        assert!(
            e.unwrap_err().is_transient(),
            "an unknown code is a server error"
        );
        let (_, e) = streamed(&["{not json"]);
        assert!(matches!(e, Err(Failure::Unparsable(_))));
    }

    #[test]
    fn parses_strings_parts_and_usage() {
        let a = parse(
            br#"{"choices":[{"message":{"role":"assistant","content":" hi "},"finish_reason":"stop"}],
                 "usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,
                          "prompt_tokens_details":{"cached_tokens":60}}}"#,
        )
        .unwrap();
        assert_eq!(a.text, "hi");
        assert_eq!(
            a.usage,
            Usage {
                input: 40,
                output: 7,
                cache_read: 60,
                cache_write: 0,
                total_tokens: 107,
                reasoning: 0
            }
        );
        let a = parse(
            br#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert_eq!(a.text, "a\nb");
        assert_eq!(a.usage, Usage::default());
    }

    #[test]
    fn failures() {
        let length =
            parse(br#"{"choices":[{"message":{"content":"half"},"finish_reason":"length"}]}"#);
        assert!(matches!(length, Err(Failure::Stopped { .. })), "{length:?}");
        let empty = parse(br#"{"choices":[{"message":{"content":"  "},"finish_reason":"stop"}]}"#);
        assert!(matches!(empty, Err(Failure::Empty)));
        let null = parse(br#"{"choices":[{"message":{"content":null}}]}"#);
        assert!(matches!(null, Err(Failure::Empty)));
        assert!(matches!(
            parse(br#"{"choices":[]}"#),
            Err(Failure::Unparsable(_))
        ));
        assert!(matches!(parse(b"<html>"), Err(Failure::Unparsable(_))));
    }
}
