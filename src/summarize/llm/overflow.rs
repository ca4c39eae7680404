//! Recognizing an upstream answer that says the request did not fit the model's
//! context window.
//!
//! Servers say it differently, all with a 4xx (llama.cpp once used 500):
//!
//! * OpenAI, Azure OpenAI: `error.code` `context_length_exceeded`, "This model's maximum
//!   context length is 128000 tokens. However, your messages resulted in …";
//! * vLLM, OpenRouter and other OpenAI-compatible servers: the same "maximum context
//!   length is N tokens" wording (vLLM also for a `max_tokens` too large for what is left);
//! * Anthropic: `invalid_request_error` "prompt is too long: 208310 tokens > 200000
//!   maximum";
//! * llama.cpp's server: `error.type` `exceed_context_size_error`, "the request exceeds
//!   the available context size…", with `n_ctx`;
//! * Ollama cuts a long prompt silently instead (see `truncation.rs`), and answers
//!   "input length exceeds the context length" where it does refuse;
//! * a 413 (request too large): splitting helps there too.
//!
//! Design decision: a recognized overflow is its own [`Failure`](super::outcome::Failure)
//! (not a plain 400), so the engine can shrink the window it assumes for the candidate
//! and the pipelines that fold the history can split the request and try again. The
//! window the server names, when it names one, bounds the new assumption.

use crate::summarize::SummaryRequest;

/// Lower-case phrases that mean "the request is larger than the context window".
const PHRASES: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "context length exceeded",
    "exceeds the context length",
    "exceeds maximum context length",
    "prompt is too long",
    "exceeds the available context size",
    "exceed_context_size_error",
    "exceeds the context window",
    "input is too long",
    "too many input tokens",
    "reduce the length of the messages",
];

/// Whether a non-2xx answer says the request did not fit; `Some(limit)` then, with the
/// window the server named (tokens) when it named one.
pub(super) fn detect(status: u16, body: &[u8]) -> Option<Option<u64>> {
    if !matches!(status, 400 | 413 | 422 | 500) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let error = v.get("error").unwrap_or(&v);
    let n_ctx = error.get("n_ctx").and_then(|n| n.as_u64());
    let text = String::from_utf8_lossy(body).to_lowercase();
    let said = PHRASES.iter().any(|p| text.contains(p));
    if !said && status != 413 {
        return None;
    }
    Some(n_ctx.or_else(|| named_limit(&text)))
}

/// The window a message names: "maximum context length is N tokens" (OpenAI, vLLM),
/// "… tokens > N maximum" (Anthropic), "maximum context length of N" (others).
fn named_limit(text: &str) -> Option<u64> {
    for marker in ["maximum context length is ", "maximum context length of "] {
        if let Some(i) = text.find(marker) {
            return number_at(&text[i + marker.len()..]);
        }
    }
    if let Some(i) = text.find(" maximum") {
        let before = &text[..i];
        let start = before.rfind("> ")?;
        return number_at(&before[start + 2..]);
    }
    None
}

fn number_at(s: &str) -> Option<u64> {
    let digits: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&n| n > 0)
}

/// Tokens of a request as sent (system prompt, prompt and output budget), by the chars/4
/// estimate the pipelines budget with.
pub(super) fn sent_tokens(req: &SummaryRequest) -> u64 {
    let units = compactd_core::session::text::utf16_len(&req.system_prompt)
        + compactd_core::session::text::utf16_len(&req.prompt);
    (units as u64).div_ceil(4).saturating_add(req.max_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_wordings() {
        let openai = br#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130612 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(detect(400, openai), Some(Some(128_000)));
        let anthropic = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        assert_eq!(detect(400, anthropic), Some(Some(200_000)));
        let llama = br#"{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#;
        assert_eq!(detect(400, llama), Some(Some(8192)));
        assert_eq!(detect(500, llama), Some(Some(8192)));
        let vllm = br#"{"object":"error","message":"This model's maximum context length is 4,096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(detect(400, vllm), Some(Some(4096)));
        let ollama = br#"{"error":{"message":"input length exceeds the context length","type":"api_error"}}"#;
        assert_eq!(detect(400, ollama), Some(None));
        assert_eq!(
            detect(413, b"<html>Request Entity Too Large</html>"),
            Some(None)
        );
    }

    #[test]
    fn other_failures_are_not_overflows() {
        let rate = br#"{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}"#;
        assert_eq!(detect(429, rate), None);
        let param = br#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
        assert_eq!(detect(400, param), None);
        assert_eq!(detect(400, b"bad request"), None);
        assert_eq!(detect(200, b"maximum context length"), None);
    }
}
