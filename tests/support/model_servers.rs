//! Fake model servers with the real servers' rules, as `wiremock` responders: they
//! validate what compactd sends the way OpenAI, Anthropic, vLLM and Ollama do, answer
//! with their real error JSON, count prompt tokens with a "tokenizer" that is less
//! generous than compactd's chars/4 estimate (3 characters a token, as for code), and
//! either refuse a prompt larger than their window or cut it silently (Ollama).
//! Included with `#[path = "../support/model_servers.rs"] mod model_servers;`.
//!
//! A request with `"stream": true` is answered as the real servers stream (see
//! `streaming.rs` beside this file): errors are ordinary HTTP error bodies before any
//! stream; a 200 is `text/event-stream`. Under wiremock the events arrive at once (and
//! a stall is silence before the response head); [`serve`] runs a fake on its own HTTP
//! server that paces the events and can fall silent in the middle of a stream.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use wiremock::{Request, Respond, ResponseTemplate};

#[path = "streaming.rs"]
mod streaming;
pub use streaming::*;

/// A fake model's way of writing its answer from its prompt.
pub type Author = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Characters per token of the fakes' tokenizer (compactd estimates 4).
pub const CHARS_PER_TOKEN: u64 = 3;

/// Tokens of every message's text, by the fakes' tokenizer.
fn prompt_tokens(messages: &[&str]) -> u64 {
    let chars: u64 = messages.iter().map(|m| m.chars().count() as u64).sum();
    chars.div_ceil(CHARS_PER_TOKEN) + 4 * messages.len() as u64
}

/// What a server does with a prompt larger than its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// 400 `context_length_exceeded` (OpenAI, vLLM, Azure).
    Refuse,
    /// Keeps the last `window` tokens and answers 200 with a small prompt count (Ollama
    /// with a context length below the prompt).
    Truncate,
}

/// An OpenAI-compatible `/chat/completions`.
#[derive(Clone)]
pub struct OpenAiServer {
    pub window: u64,
    pub overflow: Overflow,
    /// A reasoning model (o-series, gpt-5): `max_tokens` and a non-default `temperature`
    /// are refused, `reasoning_effort` is checked, reasoning tokens are reported.
    pub reasoning: bool,
    /// An older server (or Azure api-version) that does not know `max_completion_tokens`.
    pub legacy: bool,
    pub answer: String,
    /// Writes the answer from the request's last message instead (a model that reads
    /// its prompt); `answer` when `None`.
    pub author: Option<Author>,
    /// The `finish_reason` of an answer (`length`: cut at the output cap).
    pub finish_reason: &'static str,
    /// Answers given (200s).
    pub answered: Arc<AtomicUsize>,
    /// What a streamed answer does (shared by the clones a test keeps).
    pub stream: StreamScript,
    /// An older vLLM or a proxy: `stream_options` is an extra field it refuses.
    pub refuses_stream_options: bool,
}

impl OpenAiServer {
    pub fn new(window: u64) -> Self {
        OpenAiServer {
            window,
            overflow: Overflow::Refuse,
            reasoning: false,
            legacy: false,
            answer: "## Goal\nSummarized.".into(),
            author: None,
            finish_reason: "stop",
            answered: Arc::new(AtomicUsize::new(0)),
            stream: StreamScript::default(),
            refuses_stream_options: false,
        }
    }

    /// Answers what `author` writes from the prompt (the last message's text).
    pub fn writing(mut self, author: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.author = Some(Arc::new(author));
        self
    }

    pub fn refusing_stream_options(mut self) -> Self {
        self.refuses_stream_options = true;
        self
    }

    pub fn reasoning(mut self) -> Self {
        self.reasoning = true;
        self
    }

    pub fn legacy(mut self) -> Self {
        self.legacy = true;
        self
    }

    pub fn truncating(mut self) -> Self {
        self.overflow = Overflow::Truncate;
        self
    }
}

/// OpenAI's error body.
pub fn openai_error(message: &str, param: Option<&str>, code: Option<&str>) -> Reply {
    Reply::json(
        400,
        json!({
            "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
        }),
    )
}

impl Respond for OpenAiServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.reply(&request.body).template()
    }
}

impl Fake for OpenAiServer {
    fn reply(&self, request: &[u8]) -> Reply {
        let body: Value = match serde_json::from_slice(request) {
            Ok(v) => v,
            Err(_) => {
                return openai_error(
                    "We could not parse the JSON body of your request.",
                    None,
                    None,
                )
            }
        };
        let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        if let Some(o) = body.get("stream_options") {
            if self.refuses_stream_options {
                // pydantic's wording, as older vLLM answers an unknown field.
                return openai_error(
                    "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted', 'input': {'include_usage': True}}]",
                    None,
                    None,
                );
            }
            if !stream {
                return openai_error(
                    "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                    Some("stream_options"),
                    Some("invalid_value"),
                );
            }
            if o.get("include_usage").is_some_and(|v| !v.is_boolean()) {
                return openai_error(
                    "Invalid type for 'stream_options.include_usage': expected a boolean.",
                    Some("stream_options.include_usage"),
                    Some("invalid_type"),
                );
            }
        }
        if self.reasoning && body.get("max_tokens").is_some() {
            return openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                Some("max_tokens"),
                Some("unsupported_parameter"),
            );
        }
        if self.legacy && body.get("max_completion_tokens").is_some() {
            return openai_error(
                "Unrecognized request argument supplied: max_completion_tokens",
                None,
                None,
            );
        }
        if self.reasoning {
            if let Some(t) = body.get("temperature").and_then(Value::as_f64) {
                if t != 1.0 {
                    return openai_error(
                        &format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."),
                        Some("temperature"),
                        Some("unsupported_value"),
                    );
                }
            }
            if let Some(e) = body.get("reasoning_effort") {
                if !matches!(e.as_str(), Some("minimal" | "low" | "medium" | "high")) {
                    return openai_error(
                        &format!("Invalid value: {e}. Supported values are: 'minimal', 'low', 'medium', and 'high'."),
                        Some("reasoning_effort"),
                        Some("invalid_value"),
                    );
                }
            }
        } else if body.get("reasoning_effort").is_some() {
            return openai_error(
                "Unrecognized request argument supplied: reasoning_effort",
                None,
                None,
            );
        }
        let texts: Vec<&str> = body["messages"]
            .as_array()
            .map(|m| m.iter().filter_map(|m| m["content"].as_str()).collect())
            .unwrap_or_default();
        let mut prompt = prompt_tokens(&texts);
        let cap = body
            .get("max_completion_tokens")
            .or_else(|| body.get("max_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if prompt + cap > self.window {
            match self.overflow {
                Overflow::Refuse => {
                    return openai_error(
                        &format!(
                            "This model's maximum context length is {} tokens. However, you requested {} tokens ({prompt} in the messages, {cap} in the completion). Please reduce the length of the messages or completion.",
                            self.window,
                            prompt + cap
                        ),
                        Some("messages"),
                        Some("context_length_exceeded"),
                    )
                }
                Overflow::Truncate => prompt = self.window.min(prompt),
            }
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
        let answer = match &self.author {
            Some(write) => write(texts.last().copied().unwrap_or_default()),
            None => self.answer.clone(),
        };
        let reasoning = if self.reasoning { 64 } else { 0 };
        let usage = json!({"prompt_tokens": prompt, "completion_tokens": 20 + reasoning,
                           "total_tokens": prompt + 20 + reasoning,
                           "completion_tokens_details": {"reasoning_tokens": reasoning}});
        if stream {
            let include_usage = body["stream_options"]["include_usage"] == true;
            return self.stream.events(openai_stream(
                &body["model"],
                &answer,
                self.finish_reason,
                include_usage.then_some(usage),
            ));
        }
        Reply::json(
            200,
            json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": self.finish_reason,
                             "message": {"role": "assistant", "content": answer}}],
                "usage": usage
            }),
        )
    }
}

/// An Anthropic `/v1/messages` that checks the extended-thinking rules and its window.
#[derive(Clone)]
pub struct AnthropicServer {
    pub window: u64,
    /// The model's largest `max_tokens`.
    pub max_output: u64,
    pub answered: Arc<AtomicUsize>,
    /// What a streamed answer does (shared by the clones a test keeps).
    pub stream: StreamScript,
}

impl AnthropicServer {
    pub fn new(window: u64, max_output: u64) -> Self {
        AnthropicServer {
            window,
            max_output,
            answered: Arc::new(AtomicUsize::new(0)),
            stream: StreamScript::default(),
        }
    }
}

/// Anthropic's error body.
pub fn anthropic_error(message: &str) -> Reply {
    Reply::json(
        400,
        json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message}
        }),
    )
}

impl Respond for AnthropicServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.reply(&request.body).template()
    }
}

impl Fake for AnthropicServer {
    fn reply(&self, request: &[u8]) -> Reply {
        let Ok(body) = serde_json::from_slice::<Value>(request) else {
            return anthropic_error(
                "There was an issue with your request. Please check your JSON body.",
            );
        };
        let Some(max_tokens) = body.get("max_tokens").and_then(Value::as_u64) else {
            return anthropic_error("max_tokens: Field required");
        };
        if max_tokens > self.max_output {
            return anthropic_error(&format!(
                "max_tokens: {max_tokens} > {}, which is the maximum allowed number of output tokens for {}",
                self.max_output,
                body["model"].as_str().unwrap_or("")
            ));
        }
        let thinking = body.get("thinking");
        if let Some(t) = thinking {
            if t["type"] != "enabled" {
                return anthropic_error("thinking.type: Input should be 'enabled' or 'disabled'");
            }
            let Some(budget) = t["budget_tokens"].as_u64() else {
                return anthropic_error("thinking.enabled.budget_tokens: Field required");
            };
            if budget < 1024 {
                return anthropic_error(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                );
            }
            if max_tokens <= budget {
                return anthropic_error("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size");
            }
            if body
                .get("temperature")
                .and_then(Value::as_f64)
                .is_some_and(|t| t != 1.0)
            {
                return anthropic_error("`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility");
            }
            if body.get("top_k").is_some() {
                return anthropic_error("`top_k` must be unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility");
            }
            if body
                .get("top_p")
                .and_then(Value::as_f64)
                .is_some_and(|p| p < 0.95)
            {
                return anthropic_error("`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility");
            }
        }
        let mut texts: Vec<&str> = body["messages"]
            .as_array()
            .map(|m| m.iter().filter_map(|m| m["content"].as_str()).collect())
            .unwrap_or_default();
        if let Some(s) = body["system"].as_str() {
            texts.push(s);
        }
        let prompt = prompt_tokens(&texts);
        if prompt + max_tokens > self.window {
            return anthropic_error(&format!(
                "prompt is too long: {} tokens > {} maximum",
                prompt + max_tokens,
                self.window
            ));
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
        let mut content = Vec::new();
        if thinking.is_some() {
            content.push(
                json!({"type": "thinking", "thinking": "THINKING-NOT-A-SUMMARY",
                                "signature": "EqQBCgIYAhIM"}),
            );
            content.push(json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}));
        }
        content.push(json!({"type": "text", "text": "## Goal\nThought it through."}));
        let usage = json!({"input_tokens": prompt, "output_tokens": 300,
                           "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0});
        if body.get("stream").and_then(Value::as_bool) == Some(true) {
            return self.stream.events(anthropic_stream(
                &body["model"],
                &content,
                "end_turn",
                &usage,
            ));
        }
        Reply::json(
            200,
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": "end_turn",
                "usage": usage
            }),
        )
    }
}
