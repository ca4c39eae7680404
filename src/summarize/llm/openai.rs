//! The OpenAI-compatible wire format: `POST {base}/chat/completions` (Azure OpenAI's
//! deployments speak it too).
//!
//! The output cap goes in `max_tokens`, or in `max_completion_tokens` for OpenAI's
//! reasoning models (which refuse `max_tokens`; the candidate decides which, see
//! `candidates.rs`). The answer's reasoning text (`reasoning_content`, `reasoning`) is
//! never taken as the summary; its token count (`completion_tokens_details.
//! reasoning_tokens`) is reported as `usage.reasoning`.

use serde::{Deserialize, Serialize};

use super::outcome::{Answer, Failure};
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
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
}

/// What the candidate adds to a request.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Knobs<'a> {
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
        stream: false,
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
    match choice.finish_reason.as_deref() {
        None | Some("stop") | Some("end_turn") | Some("eos") => {}
        Some(other) => {
            return Err(Failure::Stopped {
                field: "finish_reason",
                value: other.chars().take(32).collect(),
            })
        }
    }
    let text = match choice.message.and_then(|m| m.content) {
        Some(Content::Text(t)) => t,
        Some(Content::Parts(parts)) => parts
            .into_iter()
            .filter(|p| matches!(p.kind.as_deref(), None | Some("text") | Some("output_text")))
            .filter_map(|p| p.text)
            .collect::<Vec<_>>()
            .join("\n"),
        None => String::new(),
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(Failure::Empty);
    }
    Ok(Answer {
        text: text.to_string(),
        usage: usage(r.usage.unwrap_or_default()),
    })
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
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, Knobs::default())).unwrap(),
            r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"p"}],"max_tokens":100,"stream":false}"#
        );
        let knobs = Knobs {
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
