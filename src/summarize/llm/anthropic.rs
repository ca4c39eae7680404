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

use serde::{Deserialize, Serialize};

use super::outcome::{Answer, Failure};
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

#[derive(Deserialize, Default)]
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
    match r.stop_reason.as_deref() {
        None | Some("end_turn") | Some("stop_sequence") => {}
        Some(other) => {
            return Err(Failure::Stopped {
                field: "stop_reason",
                value: other.chars().take(32).collect(),
            })
        }
    }
    let text = r
        .content
        .into_iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text)
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    if text.is_empty() {
        return Err(Failure::Empty);
    }
    let u = r.usage.unwrap_or_default();
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
        };
        assert_eq!(
            serde_json::to_string(&body("m", &req, Knobs::default())).unwrap(),
            r#"{"model":"m","system":"sys","messages":[{"role":"user","content":"p"}],"max_tokens":100}"#
        );
        let thinking = Knobs {
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
