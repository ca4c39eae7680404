//! Streamed answers: every candidate asks for a stream unless `stream =
//! false`, against the fakes that stream as OpenAI and Anthropic do
//! (`tests/support/streaming.rs`). The answer, usage, reasoning tokens and warnings are
//! those of the plain request; `delta` events count the tokens as they come, throttled;
//! a stream that falls silent is abandoned as `stalled` and retried, then the next
//! candidate; an error event mid-stream and a stream cut before its end are retried; a
//! server that refuses `stream_options` is asked plainly from then on.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use compactd::config::{FallbackPolicy, LlmConfig, ModelConfig, ModelKind, SummarizerChoice};
use compactd::summarize::{
    Mode, ProgressEvent, ProgressSink, Silent, Summarize, SummarizeError, SummarizerKind, Summary,
    SummaryRequest, DELTA_INTERVAL,
};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use crate::helpers::*;
use crate::model_servers::{serve, AnthropicServer, OpenAiServer};
use crate::upstreams::{config, KEY};

/// The events of a call, with the time each arrived.
#[derive(Default)]
struct Log(Mutex<Vec<(Instant, ProgressEvent)>>);

impl ProgressSink for Log {
    fn emit(&self, event: ProgressEvent) {
        self.0.lock().unwrap().push((Instant::now(), event));
    }
}

impl Log {
    fn events(&self) -> Vec<ProgressEvent> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, e)| e.clone())
            .collect()
    }

    fn names(&self) -> Vec<&'static str> {
        self.events().iter().map(ProgressEvent::name).collect()
    }

    /// The deltas as (when, attempt, outputTokens, reasoningTokens, estimated).
    fn deltas(&self) -> Vec<(Instant, u32, u64, u64, bool)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(t, e)| match e {
                ProgressEvent::Delta {
                    attempt,
                    output_tokens,
                    reasoning_tokens,
                    estimated,
                    ..
                } => Some((*t, *attempt, *output_tokens, *reasoning_tokens, *estimated)),
                _ => None,
            })
            .collect()
    }

    fn retry_reasons(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                ProgressEvent::Retry { reason, .. } => Some(reason),
                _ => None,
            })
            .collect()
    }
}

fn candidate(name: &str, kind: ModelKind, model: &str, base_url: String) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        kind,
        model: model.into(),
        base_url,
        context_window: 200_000,
        api_key: Some(KEY.into()),
        options: Default::default(),
    }
}

fn llm(models: Vec<ModelConfig>) -> LlmConfig {
    let mut llm = config(models);
    if llm.models[0].kind == ModelKind::Anthropic {
        llm.summarizer = SummarizerChoice::Anthropic;
    }
    llm
}

/// The same call streamed (default options) and plain (`stream = false`), each on an
/// engine of its own (no shared cache), with the streamed call's events.
async fn both(c: ModelConfig, req: &SummaryRequest) -> (Summary, Summary, Log) {
    let log = Log::default();
    let streamed = engine(&llm(vec![c.clone()]))
        .summarize(req, Mode::WithFallback, &log)
        .await
        .unwrap();
    let mut plain = c;
    plain.options.stream = Some(false);
    let plain = engine(&llm(vec![plain]))
        .summarize(req, Mode::WithFallback, &Silent)
        .await
        .unwrap();
    (streamed, plain, log)
}

/// A fake server answering every POST (to `at`, when given) with `model`.
async fn serving(model: impl wiremock::Respond + 'static, at: Option<&str>) -> MockServer {
    let server = MockServer::start().await;
    let mut mock = Mock::given(method("POST"));
    if let Some(at) = at {
        mock = mock.and(path(at));
    }
    mock.respond_with(model).mount(&server).await;
    server
}

fn body(r: &wiremock::Request) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

/// The estimates only grow, and the last count is the server's (which may differ from
/// the last estimate either way).
fn assert_counts_grow_to(deltas: &[(Instant, u32, u64, u64, bool)], last: (u64, u64)) {
    assert!(!deltas.is_empty());
    for pair in deltas[..deltas.len() - 1].windows(2) {
        assert!(pair[0].2 <= pair[1].2, "{deltas:?}");
    }
    let &(_, _, output, reasoning, estimated) = deltas.last().unwrap();
    assert_eq!((output, reasoning, estimated), (last.0, last.1, false));
    assert!(
        deltas[..deltas.len() - 1].iter().all(|d| d.4),
        "estimated until the end"
    );
}

#[tokio::test]
async fn an_openai_stream_gives_the_plain_answer_usage_and_reasoning_tokens() {
    let model = OpenAiServer::new(200_000).reasoning();
    let streamed_count = model.stream.streamed.clone();
    let server = serving(model, Some("/v1/chat/completions")).await;
    let c = candidate(
        "openai",
        ModelKind::Openai,
        "o4-mini",
        format!("{}/v1", server.uri()),
    );
    let (streamed, plain, log) = both(c, &request("the conversation")).await;
    assert_eq!(streamed.summarizer, SummarizerKind::Llm);
    assert_eq!(streamed.text, "## Goal\nSummarized.");
    assert_eq!(
        (&streamed.text, &streamed.usage, &streamed.warnings),
        (&plain.text, &plain.usage, &plain.warnings)
    );
    assert_eq!(streamed.usage.reasoning, 64);
    assert_eq!(
        streamed_count.load(Ordering::SeqCst),
        1,
        "one streamed answer"
    );
    let sent = requests(&server).await;
    let (first, second) = (body(&sent[0]), body(&sent[1]));
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"]["include_usage"], true);
    assert_eq!(second["stream"], false);
    assert!(second.get("stream_options").is_none(), "{second}");

    assert_eq!(
        log.names(),
        ["summarizing"]
            .into_iter()
            .chain(std::iter::repeat_n("delta", log.deltas().len()))
            .collect::<Vec<_>>()
    );
    // The server's count at the end: 20 answer tokens and 64 of reasoning.
    assert_counts_grow_to(&log.deltas(), (84, 64));
    let ProgressEvent::Delta { model, attempt, .. } = &log.events()[1] else {
        unreachable!()
    };
    assert_eq!((model.as_str(), *attempt), ("openai/o4-mini", 1));
}

#[tokio::test]
async fn an_anthropic_stream_with_thinking_gives_the_plain_answer_and_usage() {
    let model = AnthropicServer::new(200_000, 64_000);
    let streamed_count = model.stream.streamed.clone();
    let server = serving(model, Some("/v1/messages")).await;
    let mut c = candidate(
        "anthropic",
        ModelKind::Anthropic,
        "claude-sonnet-4-5",
        server.uri(),
    );
    c.options.thinking_budget = Some(2048);
    c.options.max_output_tokens = Some(16_000);
    let (streamed, plain, log) = both(c, &request("the conversation")).await;
    assert_eq!(streamed.text, "## Goal\nThought it through.");
    assert!(!streamed.text.contains("THINKING"), "{}", streamed.text);
    assert_eq!(
        (&streamed.text, &streamed.usage, &streamed.warnings),
        (&plain.text, &plain.usage, &plain.warnings)
    );
    assert_eq!(
        (streamed.usage.output, streamed.usage.reasoning),
        (300, 0),
        "Anthropic reports no separate thinking count, streamed or not"
    );
    assert_eq!(streamed_count.load(Ordering::SeqCst), 1);
    let sent = requests(&server).await;
    assert_eq!(body(&sent[0])["stream"], true);
    assert!(body(&sent[1]).get("stream").is_none());
    // The thinking is counted while it streams (an estimate); the total is the server's.
    let deltas = log.deltas();
    assert!(deltas.iter().any(|d| d.3 > 0), "{deltas:?}");
    let thinking = deltas.last().unwrap().3;
    assert_counts_grow_to(&deltas, (300, thinking));
}

#[tokio::test]
async fn a_streamed_answer_carries_the_same_truncation_warning() {
    let server = serving(OpenAiServer::new(4_096).truncating(), None).await;
    let c = candidate(
        "local",
        ModelKind::Openai,
        "qwen2.5-coder:7b",
        format!("{}/v1", server.uri()),
    );
    let big = "fn main() { let x = compute(1); }\n".repeat(1_500);
    let (streamed, plain, _) = both(c, &request(&big)).await;
    assert_eq!(streamed.warnings.len(), 1, "{streamed:?}");
    assert_eq!(streamed.warnings, plain.warnings);
    assert_eq!(streamed.usage, plain.usage);
}

#[tokio::test]
async fn a_streamed_answer_cut_at_the_output_cap_fails_as_a_plain_one() {
    let mut model = OpenAiServer::new(200_000);
    model.finish_reason = "length";
    let server = serving(model, None).await;
    let mut messages = Vec::new();
    for stream in [None, Some(false)] {
        let mut c = candidate(
            "local",
            ModelKind::Openai,
            "m",
            format!("{}/v1", server.uri()),
        );
        c.options.stream = stream;
        let mut cfg = llm(vec![c]);
        cfg.fallback = FallbackPolicy::None;
        let e = engine(&cfg)
            .summarize(&request("p"), Mode::WithFallback, &Silent)
            .await
            .unwrap_err();
        let SummarizeError::Upstream(m) = e else {
            panic!("{e:?}")
        };
        messages.push(m);
    }
    assert!(
        messages[0].contains("answer cut off (finish_reason \"length\")"),
        "{messages:?}"
    );
    assert_eq!(messages[0], messages[1]);
}

#[tokio::test]
async fn a_stream_that_falls_silent_is_retried_as_stalled() {
    let model = OpenAiServer::new(200_000);
    model.stream.stalls.store(1, Ordering::SeqCst);
    let served = serve(model).await;
    let mut c = candidate(
        "local",
        ModelKind::Openai,
        "m",
        format!("{}/v1", served.uri),
    );
    c.options.stall_ms = Some(300);
    let log = Log::default();
    let s = engine(&llm(vec![c]))
        .summarize(&request("p"), Mode::WithFallback, &log)
        .await
        .unwrap();
    assert_eq!((s.summarizer, s.retries), (SummarizerKind::Llm, 1));
    assert_eq!(s.text, "## Goal\nSummarized.");
    assert_eq!(
        log.retry_reasons(),
        ["stalled: the stream sent nothing for 300 ms"]
    );
    // The stalled attempt had begun to write; the retry starts again from its own count.
    let names = log.names();
    let retry = names.iter().position(|n| *n == "retry").unwrap();
    assert_eq!(&names[..2], ["summarizing", "delta"], "{names:?}");
    assert_eq!(names[retry + 1], "summarizing", "{names:?}");
    let deltas = log.deltas();
    assert_eq!(deltas[0].1, 1);
    assert!(deltas[1..].iter().all(|d| d.1 == 2), "{deltas:?}");
    assert_eq!(served.requests.load(Ordering::SeqCst), 2);
    // The silent stream's connection was closed.
    wait_for(|| served.abandoned.load(Ordering::SeqCst) == 1).await;
}

#[tokio::test]
async fn a_candidate_that_always_stalls_gives_way_to_the_next() {
    let stalling = OpenAiServer::new(200_000);
    stalling.stream.stalls.store(usize::MAX, Ordering::SeqCst);
    let stalling = serve(stalling).await;
    let fine = serve(OpenAiServer::new(200_000)).await;
    let mut first = candidate(
        "first",
        ModelKind::Openai,
        "m",
        format!("{}/v1", stalling.uri),
    );
    first.options.stall_ms = Some(200);
    let second = candidate("second", ModelKind::Openai, "m", format!("{}/v1", fine.uri));
    let mut cfg = llm(vec![first, second]);
    cfg.retries = 1;
    let log = Log::default();
    let s = engine(&cfg)
        .summarize(&request("p"), Mode::WithFallback, &log)
        .await
        .unwrap();
    assert_eq!(s.model, "second/m");
    assert_eq!(stalling.requests.load(Ordering::SeqCst), 2);
    let fallback = log
        .events()
        .into_iter()
        .find_map(|e| match e {
            ProgressEvent::Fallback { from, reason, .. } => Some((from, reason)),
            _ => None,
        })
        .unwrap();
    assert_eq!(fallback.0.as_deref(), Some("first/m"));
    assert!(
        fallback
            .1
            .contains("stalled: the stream sent nothing for 200 ms (2 attempts)"),
        "{}",
        fallback.1
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_is_retried() {
    // Anthropic's `overloaded_error` event, and an OpenAI-compatible `{"error": …}` chunk.
    let anthropic = AnthropicServer::new(200_000, 64_000);
    anthropic.stream.errors.store(1, Ordering::SeqCst);
    let openai = OpenAiServer::new(200_000);
    openai.stream.errors.store(1, Ordering::SeqCst);
    let server = serving(anthropic.clone(), Some("/v1/messages")).await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(openai.clone())
        .mount(&server)
        .await;
    let cases = [
        (
            candidate("a", ModelKind::Anthropic, "claude-x", server.uri()),
            "the stream broke off with an error (overloaded_error: Overloaded)",
            anthropic.stream.streamed.clone(),
        ),
        (
            candidate("o", ModelKind::Openai, "m", format!("{}/v1", server.uri())),
            "the stream broke off with an error (server_error: The server had an error while processing your request. Sorry about that!)",
            openai.stream.streamed.clone(),
        ),
    ];
    for (c, reason, streamed) in cases {
        let log = Log::default();
        let s = engine(&llm(vec![c]))
            .summarize(&request("p"), Mode::WithFallback, &log)
            .await
            .unwrap();
        assert_eq!(
            (s.summarizer, s.retries),
            (SummarizerKind::Llm, 1),
            "{reason}"
        );
        assert_eq!(log.retry_reasons(), [reason]);
        assert_eq!(streamed.load(Ordering::SeqCst), 2);
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_retried() {
    for kind in [ModelKind::Openai, ModelKind::Anthropic] {
        let server = MockServer::start().await;
        let streamed = match kind {
            ModelKind::Anthropic => {
                let model = AnthropicServer::new(200_000, 64_000);
                model.stream.cuts.store(1, Ordering::SeqCst);
                let streamed = model.stream.streamed.clone();
                Mock::given(method("POST"))
                    .respond_with(model)
                    .mount(&server)
                    .await;
                streamed
            }
            _ => {
                let model = OpenAiServer::new(200_000);
                model.stream.cuts.store(1, Ordering::SeqCst);
                let streamed = model.stream.streamed.clone();
                Mock::given(method("POST"))
                    .respond_with(model)
                    .mount(&server)
                    .await;
                streamed
            }
        };
        let base = match kind {
            ModelKind::Anthropic => server.uri(),
            _ => format!("{}/v1", server.uri()),
        };
        let log = Log::default();
        let s = engine(&llm(vec![candidate("c", kind, "m", base)]))
            .summarize(&request("p"), Mode::WithFallback, &log)
            .await
            .unwrap();
        assert_eq!(
            (s.summarizer, s.retries),
            (SummarizerKind::Llm, 1),
            "{kind:?}"
        );
        assert_eq!(
            log.retry_reasons(),
            ["transport error (the stream ended before the answer was complete)"]
        );
        assert_eq!(streamed.load(Ordering::SeqCst), 2);
    }
}

#[tokio::test]
async fn a_server_refusing_stream_options_is_asked_plainly_from_then_on() {
    let model = OpenAiServer::new(200_000).refusing_stream_options();
    let answered = model.answered.clone();
    let server = serving(model, None).await;
    let c = candidate(
        "vllm",
        ModelKind::Openai,
        "m",
        format!("{}/v1", server.uri()),
    );
    let engine = engine(&llm(vec![c]));
    let s = engine
        .summarize(&request("one"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!((s.summarizer, s.retries), (SummarizerKind::Llm, 0));
    let s = engine
        .summarize(&request("two"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    let streams: Vec<Value> = requests(&server)
        .await
        .iter()
        .map(|r| body(r)["stream"].clone())
        .collect();
    assert_eq!(streams, [true, false, false], "learned once");
    assert_eq!(answered.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn azure_streams_like_openai() {
    let model = OpenAiServer::new(200_000);
    let streamed = model.stream.streamed.clone();
    let server = serving(
        model,
        Some("/openai/deployments/summarizer/chat/completions"),
    )
    .await;
    let mut c = candidate("azure", ModelKind::AzureOpenai, "gpt-4o-mini", server.uri());
    c.options.deployment = Some("summarizer".into());
    c.options.api_version = Some("2024-10-21".into());
    let log = Log::default();
    let s = engine(&llm(vec![c]))
        .summarize(&request("p"), Mode::WithFallback, &log)
        .await
        .unwrap();
    assert_eq!(s.text, "## Goal\nSummarized.");
    assert_eq!(s.usage.output, 20);
    assert_eq!(streamed.load(Ordering::SeqCst), 1);
    assert_counts_grow_to(&log.deltas(), (20, 0));
}

#[tokio::test]
async fn deltas_are_throttled() {
    let mut model = OpenAiServer::new(200_000);
    model.answer = "## Goal\n".to_string() + &"Keep going. ".repeat(8);
    // 35 frames, 40 ms apart: 1.4 s at least of streaming.
    model.stream.pace = Duration::from_millis(40);
    let served = serve(model).await;
    let c = candidate(
        "local",
        ModelKind::Openai,
        "m",
        format!("{}/v1", served.uri),
    );
    let log = Log::default();
    let s = engine(&llm(vec![c]))
        .summarize(&request("p"), Mode::WithFallback, &log)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    let deltas = log.deltas();
    assert!(
        deltas.len() >= 3,
        "first, at least one between, last: {deltas:?}"
    );
    // Never two within the interval, except the final count.
    for pair in deltas[..deltas.len() - 1].windows(2) {
        assert!(pair[1].0 - pair[0].0 >= DELTA_INTERVAL, "{deltas:?}");
    }
    assert_counts_grow_to(&deltas, (20, 0));
}

/// Polls `cond` for up to 5 s.
async fn wait_for(cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met within 5 s");
}
