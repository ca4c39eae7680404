//! The OpenAI chat-completions facade (`POST /v1/chat/completions`): from an OpenAI
//! request to the prompt it renders (`remote::Rendered`), summarized like any other.
//!
//! Design decisions:
//!
//! * **System messages are the system prompt.** `system` and `developer` messages (OpenAI's
//!   newer name for the same thing) are joined with a blank line. With none, the system
//!   prompt is *empty*, not compactd's summarization prompt as on `/v1/summarize`: a
//!   chat-completions client sends the whole instruction in its messages, and hermes-agent
//!   (one user message, no system message) writes its prompt for a model that sees nothing
//!   else. Adding a system prompt of ours would change what its prompt was written for
//!   (compactd's own hermes routes send none either). An empty system prompt is not sent
//!   upstream at all.
//! * **The other messages are the prompt.** One message: its text, verbatim (the common
//!   case: oh-my-pi and hermes send their whole prompt as one user message). Several: each
//!   as `[Role]: text` (the role capitalized, as pi serializes conversations), separated by a
//!   blank line, so the model still sees who said what. Messages without text (an
//!   assistant message with only `tool_calls`) are left out.
//! * **Content** is a string or a list of parts; text parts (`text`, `input_text`,
//!   `output_text`) are joined with a newline. Any other part (an image, audio) is refused
//!   with a pointer to it: a summarizer that silently dropped it would summarize a
//!   different conversation than the one sent.
//! * **Output budget:** `max_completion_tokens`, else `max_tokens` (deprecated by OpenAI
//!   but what most clients send), else the remoteEndpoint default (⌊0.8 × reserveTokens⌋).
//! * Every other field (`temperature`, `tools`, `n`, `user`, …) is accepted and ignored:
//!   the configured candidates decide how the summary is written.

use serde::Deserialize;

#[cfg(test)]
use crate::summarize::SummaryRequest;
use compactd_core::session::{InputError, Violation};

use super::remote::Rendered;
#[cfg(test)]
use super::remote::{request, Facade};

/// An OpenAI chat-completions request; fields compactd does not use are ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ChatRequest {
    /// A configured model name (see `GET /v1/models`); absent or unknown: the default
    /// candidates.
    #[serde(default)]
    pub model: Option<String>,
    /// `system` / `developer` messages form the system prompt, the others the prompt.
    pub messages: Vec<ChatMessage>,
    /// Output budget (deprecated by OpenAI in favour of `max_completion_tokens`).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Output budget; wins over `max_tokens`.
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    /// Answer as `text/event-stream` of `chat.completion.chunk` events.
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// compactd's extension: `single` or `moa` (Mixture-of-Agents) [the `[moa]` default,
    /// else `single`; a configured `model` named alone is `single`].
    #[serde(default)]
    pub strategy: Option<crate::config::Strategy>,
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` (and no choices) before `[DONE]`.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One message. `content` is a string, a list of text parts, or null.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub content: serde_json::Value,
}

impl ChatRequest {
    pub fn streams(&self) -> bool {
        self.stream == Some(true)
    }

    pub fn includes_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
    }

    /// The prompt as rendered: the system messages, and the others as the prompt.
    pub fn rendered(&self) -> Result<Rendered, InputError> {
        let mut system = Vec::new();
        let mut turns = Vec::new();
        for (i, m) in self.messages.iter().enumerate() {
            let text = message_text(i, &m.content)?;
            if text.trim().is_empty() {
                continue;
            }
            match m.role.as_str() {
                "system" | "developer" => system.push(text),
                role => turns.push((role, text)),
            }
        }
        let prompt = match turns.as_slice() {
            [] => {
                return Err(invalid(
                    "/messages",
                    "no user message carries text: nothing to summarize",
                ))
            }
            [(_, text)] => text.clone(),
            many => many
                .iter()
                .map(|(role, text)| format!("[{}]: {text}", capitalized(role)))
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        Ok(Rendered {
            system_prompt: system.join("\n\n"),
            prompt,
            max_tokens: self.max_completion_tokens.or(self.max_tokens),
            model: self.model.clone(),
            strategy: self.strategy,
        })
    }

    /// The summarizer request; `default_max_tokens` when the request sets no budget.
    #[cfg(test)]
    fn summary_request(&self, default_max_tokens: u64) -> Result<SummaryRequest, InputError> {
        let rendered = self.rendered()?;
        Ok(request(
            rendered,
            Facade::ChatCompletions,
            "",
            default_max_tokens,
        ))
    }
}

/// The text of message `i`'s content: a string, text parts joined by newlines, or
/// nothing for null.
fn message_text(i: usize, content: &serde_json::Value) -> Result<String, InputError> {
    use serde_json::Value;
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                let pointer = format!("/messages/{i}/content/{j}");
                let kind = part.get("type").and_then(Value::as_str);
                match (kind, part.get("text")) {
                    (Some("text" | "input_text" | "output_text"), Some(Value::String(t))) => {
                        texts.push(t.as_str())
                    }
                    (Some("text" | "input_text" | "output_text"), _) => {
                        return Err(invalid(
                            &format!("{pointer}/text"),
                            "a text part needs a string `text`",
                        ))
                    }
                    (Some(other), _) => {
                        return Err(invalid(
                            &format!("{pointer}/type"),
                            &format!(
                                "only text parts can be summarized, not `{}`",
                                compactd_core::session::truncate_for_message(other)
                            ),
                        ))
                    }
                    (None, _) => {
                        return Err(invalid(
                            &pointer,
                            "a content part is an object with a string `type`",
                        ))
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(invalid(
            &format!("/messages/{i}/content"),
            "content is a string, a list of text parts, or null",
        )),
    }
}

fn capitalized(role: &str) -> String {
    let mut chars = role.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn invalid(pointer: &str, message: &str) -> InputError {
    InputError::invalid(Violation {
        pointer: pointer.into(),
        message: message.into(),
        line: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(body: serde_json::Value) -> ChatRequest {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn one_user_message_is_the_prompt_verbatim_with_no_system_prompt() {
        let r = request(
            json!({"model": "x", "messages": [{"role": "user", "content": "Summarize: a"}]}),
        )
        .summary_request(13_107)
        .unwrap();
        assert_eq!(r.prompt, "Summarize: a");
        assert_eq!(r.system_prompt, "");
        assert_eq!(r.max_tokens, 13_107);
    }

    #[test]
    fn system_messages_join_and_several_turns_are_labelled() {
        let r = request(json!({
            "messages": [
                {"role": "system", "content": "S1"},
                {"role": "developer", "content": [{"type": "text", "text": "S2"}]},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}]},
                {"role": "assistant", "content": null, "tool_calls": []},
                {"role": "assistant", "content": "c"}
            ],
            "max_tokens": 50,
            "max_completion_tokens": 70,
            "temperature": 0.2
        }))
        .summary_request(1)
        .unwrap();
        assert_eq!(r.system_prompt, "S1\n\nS2");
        assert_eq!(r.prompt, "[User]: a\nb\n\n[Assistant]: c");
        assert_eq!(r.max_tokens, 70);
    }

    #[test]
    fn max_tokens_is_used_and_zero_becomes_one() {
        let r = request(json!({"messages": [{"role": "user", "content": "p"}], "max_tokens": 0}));
        assert_eq!(r.summary_request(9).unwrap().max_tokens, 1);
        let r = request(json!({"messages": [{"role": "user", "content": "p"}], "max_tokens": 40}));
        assert_eq!(r.summary_request(9).unwrap().max_tokens, 40);
    }

    #[test]
    fn non_text_parts_and_textless_requests_are_refused_with_a_pointer() {
        let cases = [
            (
                json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]}]),
                "/messages/0/content/1/type",
            ),
            (
                json!([{"role": "user", "content": [{"type": "text"}]}]),
                "/messages/0/content/0/text",
            ),
            (
                json!([{"role": "user", "content": [7]}]),
                "/messages/0/content/0",
            ),
            (
                json!([{"role": "user", "content": 7}]),
                "/messages/0/content",
            ),
            (json!([{"role": "system", "content": "only"}]), "/messages"),
            (json!([{"role": "user", "content": "  "}]), "/messages"),
            (json!([]), "/messages"),
        ];
        for (messages, pointer) in cases {
            let e = request(json!({"messages": messages}))
                .summary_request(1)
                .unwrap_err();
            let InputError::Invalid(v) = e else {
                panic!("{e:?}")
            };
            assert_eq!(v[0].pointer, pointer, "{messages}");
        }
    }

    #[test]
    fn stream_flags() {
        let r = request(
            json!({"messages": [], "stream": true, "stream_options": {"include_usage": true}}),
        );
        assert!(r.streams() && r.includes_usage());
        let r = request(json!({"messages": [], "stream": null, "stream_options": null}));
        assert!(!r.streams() && !r.includes_usage());
    }
}
