//! `POST /v1/messages` for Anthropic's compaction requests, through the real server: the
//! answer's shape, what the summarizer is given (the whole conversation, a fed-back block
//! as the previous summary), and Anthropic's error shape.

use std::sync::{Arc, Mutex};

use compactd::config::ClientKeys;
use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy};
use compactd::summarize::{Summarize, SummaryRequest, Usage};
use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, spawn_app_with_summarizer, TestApp};

/// Answers "the summary" and keeps every request it was given.
#[derive(Default)]
struct Keeper {
    requests: Mutex<Vec<SummaryRequest>>,
}

impl Summarize for Keeper {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            self.requests.lock().unwrap().push(req.clone());
            Ok(compactd::summarize::Summary {
                usage: Usage {
                    input: 100,
                    output: 20,
                    cache_read: 7,
                    total_tokens: 127,
                    ..Usage::default()
                },
                ..crate::helpers::llm_summary("the summary", "test/keeper")
            })
        })
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        None
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "keeper"})
    }
}

fn conversation() -> Value {
    json!([
        {"role": "user", "content": "Fix the login bug in src/auth.rs"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Read the file first.", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "src/auth.rs"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn check(token: &str) -> bool { !valid(token) }"}
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "The check was inverted; fixed."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "Now add a regression test."},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/screenshot.png"}},
            {"type": "widget", "payload": "kept as text"}
        ]}
    ])
}

async fn messages(app: &TestApp, body: Value) -> reqwest::Response {
    app.post_json("/v1/messages?beta=true", &body).await
}

/// Reads an Anthropic error answer, checking its status and error type.
async fn anthropic_error(res: reqwest::Response, status: u16, kind: &str) -> String {
    assert_eq!(res.status().as_u16(), status);
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(body["request_id"].is_string(), "{body}");
    body["error"]["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_compaction_request_is_answered_with_one_compaction_block() {
    let app = spawn_app().await;
    let res = messages(
        &app,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 2000, "messages": conversation(),
               "compaction": {"type": "summarize"}, "temperature": 0, "tools": []}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert!(body["id"].as_str().unwrap().starts_with("msg_"), "{body}");
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    // An unknown model name is the client's own: the default (here extractive) answers.
    assert_eq!(body["model"], "extractive");
    assert_eq!(body["stop_reason"], "compaction");
    assert_eq!(body["stop_sequence"], Value::Null);
    assert!(body["usage"]["input_tokens"].is_u64() && body["usage"]["output_tokens"].is_u64());
    let content = body["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "compaction");
    let text = content[0]["content"].as_str().unwrap();
    // The newest request is summarized too: the block replaces every message.
    assert!(text.contains("Now add a regression test."), "{text}");
    assert!(text.contains("src/auth.rs"), "{text}");
    assert!(content[0]["signature"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
}

#[tokio::test]
async fn the_summarizer_sees_every_message_the_system_prompt_and_the_budget() {
    let keeper = Arc::new(Keeper::default());
    let app = spawn_app_with_summarizer(keeper.clone()).await;
    let res = messages(
        &app,
        json!({"model": "m", "max_tokens": 1000, "system": "You are a coding agent.",
               "messages": conversation(), "compaction": {"type": "summarize"}}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["model"], "test/keeper");
    // The checked summary: what the model's text left out of the pinned ledger (the
    // newest request) is restored under the closing section.
    let text = body["content"][0]["content"].as_str().unwrap();
    assert!(text.starts_with("the summary"), "{text}");
    assert!(text.contains("Now add a regression test."), "{text}");
    assert_eq!(body["usage"]["input_tokens"], 100);
    assert_eq!(body["usage"]["output_tokens"], 20);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 7);
    let requests = keeper.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.max_tokens, 1000);
    assert_eq!(r.model.as_deref(), Some("m"));
    for needle in [
        "Fix the login bug in src/auth.rs",
        "Read the file first.",
        "read(path=\"src/auth.rs\")",
        "!valid(token)",
        "The check was inverted; fixed.",
        "Now add a regression test.",
        "[image: https://example.com/screenshot.png]",
        "[widget block]",
        "kept as text",
        "You are a coding agent.",
    ] {
        assert!(
            r.prompt.contains(needle),
            "{needle} missing from:\n{}",
            r.prompt
        );
    }
    assert!(!r.prompt.contains("<previous-summary>"));
}

#[tokio::test]
async fn a_fed_back_block_is_the_previous_summary_and_instructions_replace_the_prompt() {
    let keeper = Arc::new(Keeper::default());
    let app = spawn_app_with_summarizer(keeper.clone()).await;
    let res = messages(
        &app,
        json!({"max_tokens": 1000, "compaction": {"type": "summarize", "instructions": "List every file named."},
               "messages": [
                   {"role": "user", "content": "dropped: the block stands for this"},
                   {"role": "assistant", "content": [{"type": "compaction", "content": "Fixed the login bug in src/auth.rs.", "signature": "sha256:x"}]},
                   {"role": "user", "content": "Update docs/login.md too."},
                   {"role": "assistant", "content": "Done."}
               ]}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let requests = keeper.requests.lock().unwrap();
    let p = &requests[0].prompt;
    assert!(
        p.contains("<previous-summary>\nFixed the login bug in src/auth.rs.\n</previous-summary>"),
        "{p}"
    );
    assert!(
        p.contains("Update docs/login.md too.") && p.contains("Done."),
        "{p}"
    );
    assert!(!p.contains("dropped"), "{p}");
    assert!(p.contains("List every file named."), "{p}");
}

#[tokio::test]
async fn a_body_without_compaction_is_a_400_saying_only_compaction_is_answered() {
    let app = spawn_app().await;
    let res = messages(
        &app,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "Hello"}]}),
    )
    .await;
    let message = anthropic_error(res, 400, "invalid_request_error").await;
    assert!(message.contains("only compaction requests"), "{message}");
    assert!(
        message.contains("does not answer ordinary messages"),
        "{message}"
    );
}

#[tokio::test]
async fn bad_requests_get_anthropics_error_shape() {
    let app = spawn_app().await;
    let hi = json!([{"role": "user", "content": "hi"}]);
    let res = messages(
        &app,
        json!({"messages": hi, "compaction": {"type": "clear"}}),
    )
    .await;
    assert!(anthropic_error(res, 422, "invalid_request_error")
        .await
        .contains("summarize"));
    let res = messages(
        &app,
        json!({"messages": [{"role": "tool", "content": "x"}], "compaction": {"type": "summarize"}}),
    )
    .await;
    assert!(anthropic_error(res, 422, "invalid_request_error")
        .await
        .contains("messages/0/role"));
    let res = messages(
        &app,
        json!({"messages": [{"role": "assistant", "content": [{"type": "compaction", "content": "s"}]}],
               "compaction": {"type": "summarize"}}),
    )
    .await;
    assert!(anthropic_error(res, 400, "invalid_request_error")
        .await
        .contains("nothing to summarize"));
    let res = messages(
        &app,
        json!({"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": []}],
               "compaction": {"type": "summarize"}}),
    )
    .await;
    assert!(anthropic_error(res, 400, "invalid_request_error")
        .await
        .contains("nothing to summarize"));
    let res = app
        .post("/v1/messages", "application/x-ndjson", "{}\n")
        .await;
    anthropic_error(res, 415, "invalid_request_error").await;
    let res = app.post("/v1/messages", "application/json", "{").await;
    anthropic_error(res, 400, "invalid_request_error").await;
}

#[tokio::test]
async fn the_key_is_taken_from_x_api_key_as_anthropics_clients_send_it() {
    let app = spawn_app_with(|c| c.api_keys = ClientKeys::new(["secret"])).await;
    let body = json!({"messages": [{"role": "user", "content": "Fix src/a.rs"}], "compaction": {"type": "summarize"}});
    let res = messages(&app, body.clone()).await;
    anthropic_error(res, 401, "authentication_error").await;
    let send = |key: &'static str| {
        app.client
            .post(format!("{}/v1/messages", app.address))
            .header("x-api-key", key)
            .json(&body)
            .send()
    };
    anthropic_error(send("wrong").await.unwrap(), 401, "authentication_error").await;
    assert_eq!(send("secret").await.unwrap().status().as_u16(), 200);
    // Elsewhere only the bearer token counts.
    let res = app
        .client
        .get(format!("{}/v1/config", app.address))
        .header("x-api-key", "secret")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
}

#[tokio::test]
async fn the_blocks_details_carry_the_pinned_ledger_to_the_next_round() {
    let keeper = Arc::new(Keeper::default());
    let app = spawn_app_with_summarizer(keeper.clone()).await;
    let first: Value = messages(
        &app,
        json!({"messages": conversation(), "compaction": {"type": "summarize"}}),
    )
    .await
    .json()
    .await
    .unwrap();
    let block = &first["content"][0];
    let details: Value =
        serde_json::from_str(block["encrypted_content"].as_str().unwrap()).unwrap();
    assert_eq!(details["readFiles"], json!(["src/auth.rs"]), "{details}");
    assert!(details["pinned"]["items"].is_array(), "{details}");
    // The client cuts the restored section out of the summary; the details still hold it.
    let edited = json!({"type": "compaction", "content": "the summary",
                        "encrypted_content": block["encrypted_content"]});
    let second: Value = messages(
        &app,
        json!({"compaction": {"type": "summarize"}, "messages": [
            {"role": "assistant", "content": [edited]},
            {"role": "user", "content": "Also update the changelog."}
        ]}),
    )
    .await
    .json()
    .await
    .unwrap();
    let text = second["content"][0]["content"].as_str().unwrap();
    // A fact pinned in the first round, and its file list, are restored from the details
    // (the newest request replaces the earlier objective, as the ledger does).
    assert!(
        text.contains("[image: https://example.com/screenshot.png]"),
        "{text}"
    );
    assert!(text.contains("<read-files>\nsrc/auth.rs"), "{text}");
    assert!(text.contains("Also update the changelog."), "{text}");
}

#[tokio::test]
async fn stream_true_answers_anthropics_events_once_the_summary_is_complete() {
    let keeper = Arc::new(Keeper::default());
    let app = spawn_app_with_summarizer(keeper).await;
    let res = messages(
        &app,
        json!({"messages": conversation(), "compaction": {"type": "summarize"}, "stream": true}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = res.text().await.unwrap();
    let events: Vec<(&str, Value)> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once("\ndata: ").unwrap();
            (
                name.strip_prefix("event: ").unwrap(),
                serde_json::from_str(data).unwrap(),
            )
        })
        .collect();
    // Anthropic pings at once, and then while the summary is written.
    assert_eq!(events[1].0, "ping");
    let events: Vec<(&str, Value)> = events.into_iter().filter(|(n, _)| *n != "ping").collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert!(events.iter().all(|(n, d)| d["type"] == *n));
    assert_eq!(events[4].1["usage"]["input_tokens"], 100);
    assert_eq!(events[1].1["content_block"]["type"], "compaction");
    let delta = &events[2].1["delta"];
    assert_eq!(delta["type"], "compaction_delta");
    assert!(delta["content"]
        .as_str()
        .unwrap()
        .starts_with("the summary"));
    assert!(delta["encrypted_content"].is_string());
    assert_eq!(events[4].1["delta"]["stop_reason"], "compaction");
    assert_eq!(events[4].1["usage"]["output_tokens"], 20);
}

#[tokio::test]
async fn more_entries_than_the_ceiling_is_a_413() {
    let app = spawn_app_with(|c| c.max_entries = 3).await;
    let turns = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("turn {i}")}))
            .collect()
    };
    let res = messages(
        &app,
        json!({"messages": turns(3), "compaction": {"type": "summarize"}}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let res = messages(
        &app,
        json!({"messages": turns(4), "compaction": {"type": "summarize"}}),
    )
    .await;
    anthropic_error(res, 413, "invalid_request_error").await;
}

#[tokio::test]
async fn a_lone_surrogate_reads_as_a_replacement_character() {
    let keeper = Arc::new(Keeper::default());
    let app = spawn_app_with_summarizer(keeper.clone()).await;
    // JavaScript's JSON.stringify writes a lone surrogate as this escape.
    let body = r#"{"model":"m","compaction":{"type":"summarize"},"messages":[
        {"role":"user","content":"half an emoji \ud83d then the request"},
        {"role":"assistant","content":"ok"}]}"#;
    let res = app.post("/v1/messages", "application/json", body).await;
    assert_eq!(res.status().as_u16(), 200);
    let seen = keeper.requests.lock().unwrap()[0].prompt.clone();
    assert!(
        seen.contains("half an emoji \u{fffd} then the request"),
        "{seen}"
    );
}

/// The events of an Anthropic stream, in order: `(name, data)`.
fn stream_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once("\ndata: ").unwrap();
            (
                name.strip_prefix("event: ").unwrap().to_string(),
                serde_json::from_str(data).unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_slow_summary_streams_pings_until_the_block_comes() {
    use crate::upstreams::{config, openai, slow_model};
    let server = slow_model(
        std::time::Duration::from_millis(600),
        "## Goal\nSlowly summarized.",
    )
    .await;
    let llm = config(vec![openai("m", &server)]);
    let app = spawn_app_with(move |c| {
        c.llm = llm;
        c.heartbeat = std::time::Duration::from_millis(50);
    })
    .await;
    let res = messages(
        &app,
        json!({"model": "claude-sonnet-4-5", "messages": conversation(),
               "compaction": {"type": "summarize"}, "stream": true}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let events = stream_events(&res.text().await.unwrap());
    assert_eq!(events[0].0, "message_start");
    assert_eq!(events[0].1["message"]["model"], "claude-sonnet-4-5");
    let start = events
        .iter()
        .position(|(n, _)| n == "content_block_start")
        .expect("the block");
    let pings = events[..start].iter().filter(|(n, _)| n == "ping").count();
    assert!(pings >= 4, "{pings} pings in {events:?}");
    assert!(events[start + 1].1["delta"]["content"]
        .as_str()
        .unwrap()
        .contains("Slowly summarized."));
    assert_eq!(events.last().unwrap().0, "message_stop");
}

#[tokio::test]
async fn a_summary_that_fails_after_the_stream_began_is_an_error_event() {
    use crate::upstreams::{config, openai};
    use wiremock::{matchers::method, Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "bad request", "type": "invalid_request_error"}}),
        ))
        .mount(&server)
        .await;
    let mut llm = config(vec![openai("m", &server)]);
    llm.fallback = compactd::config::FallbackPolicy::None;
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let res = messages(
        &app,
        json!({"messages": conversation(), "compaction": {"type": "summarize"}, "stream": true}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let events = stream_events(&res.text().await.unwrap());
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error", "{events:?}");
    assert_eq!(data["type"], "error");
    assert_eq!(data["error"]["type"], "api_error", "{data}");
    assert!(!data.to_string().contains(crate::upstreams::KEY));
}
