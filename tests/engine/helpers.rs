//! What every engine test uses: requests, the fallback, engines, canned answers.

use std::sync::{Arc, Mutex};

use compactd::config::LlmConfig;
use compactd::summarize::llm::{Engine, Fallback};
use compactd::summarize::{RequestKind, SummarizerKind, Summary, SummaryRequest, Usage};
use serde_json::{json, Value};
use wiremock::{MockServer, ResponseTemplate};

pub const EXTRACTIVE_TEXT: &str = "## Goal\nextractive summary";

/// A log writer appending to a shared buffer.
pub struct LogSink(pub Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn request(prompt: &str) -> SummaryRequest {
    SummaryRequest {
        kind: RequestKind::History,
        system_prompt: "You summarize.".into(),
        prompt: prompt.into(),
        max_tokens: 512,
        strategy: None,
        model: None,
        ledger: None,
    }
}

pub fn fallback() -> Fallback {
    Arc::new(|_req: &SummaryRequest| Summary {
        text: EXTRACTIVE_TEXT.into(),
        usage: Usage::default(),
        model: "extractive".into(),
        summarizer: SummarizerKind::Extractive,
        retries: 0,
        cached: false,
        moa: None,
        warnings: Vec::new(),
    })
}

pub fn engine(config: &LlmConfig) -> Engine {
    Engine::new(config, fallback()).expect("engine")
}

pub fn openai_answer(content: Value, finish_reason: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                  "prompt_tokens_details": {"cached_tokens": 400}}
    }))
}

pub fn openai_ok(text: &str) -> ResponseTemplate {
    openai_answer(json!(text), "stop")
}

pub fn anthropic_answer(stop_reason: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "## Goal\nfirst"}, {"type": "text", "text": "second"}],
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 900, "output_tokens": 60,
                  "cache_read_input_tokens": 30, "cache_creation_input_tokens": 10}
    }))
}

pub async fn requests(server: &MockServer) -> Vec<wiremock::Request> {
    server.received_requests().await.expect("recording is on")
}

/// A port with nothing listening.
pub async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// `req` for the configured model named `model` (`None`: the default).
pub fn named(req: SummaryRequest, model: Option<&str>) -> SummaryRequest {
    SummaryRequest {
        model: model.map(str::to_string),
        ..req
    }
}
