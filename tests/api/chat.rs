//! The OpenAI-compatible facade (`POST /v1/chat/completions`, `GET /v1/models`) through the
//! real server: without a model (the extractive summarizer answers), and in front of fake
//! OpenAI upstreams (wiremock) that check what compactd sends them.

use compactd::config::{ClientKeys, FallbackPolicy};
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{spawn_app_with, TestApp};
use crate::upstreams::{answering, config, openai, KEY};

const PROMPT: &str = "<conversation>\n[User]: Fix the login bug in src/auth.rs\n[Assistant]: I edited src/auth.rs and the tests pass.\n</conversation>\n\nSummarize the conversation above.";

/// What compactd sent the upstream, as JSON (the `n`th request).
async fn sent(server: &MockServer, n: usize) -> Value {
    serde_json::from_slice(&server.received_requests().await.unwrap()[n].body).unwrap()
}

async fn chat(app: &TestApp, body: Value) -> reqwest::Response {
    app.post_json("/v1/chat/completions", &body).await
}

/// Reads an OpenAI error answer, checking its status, type and code.
async fn openai_error(res: reqwest::Response, status: u16, kind: &str, code: &str) -> Value {
    assert_eq!(res.status().as_u16(), status);
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    assert!(body["error"].as_object().unwrap().contains_key("param"));
    body
}

#[tokio::test]
async fn without_a_model_the_extractive_summarizer_answers_a_chat_completion() {
    let app = spawn_app_with(|_| {}).await;
    let res = chat(
        &app,
        json!({"model": "gpt-4o", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["id"].as_str().unwrap().starts_with("chatcmpl-"),
        "{body}"
    );
    assert_eq!(body["object"], "chat.completion");
    assert!(body["created"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(
        body["model"], "extractive",
        "an unknown model is the default"
    );
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"]["content"]
        .as_str()
        .unwrap()
        .contains("src/auth.rs"));
    let usage = &body["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);

    let models: Value = app.get("/v1/models").await.json().await.unwrap();
    assert_eq!(
        models,
        json!({"object": "list", "data": [{"id": "extractive", "object": "model",
            "created": models["data"][0]["created"], "owned_by": "compactd"}]})
    );
}

#[tokio::test]
async fn a_hermes_request_reaches_the_model_as_sent_and_the_answer_is_openai_shaped() {
    let server =
        answering("## Goal\nFix the login bug (key sk-proj-Q7vX2mN9pL4kR8sT1wY6zA3bC5dE0fG).")
            .await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| {
        c.llm = llm;
        c.reserve_tokens = 10_000;
    })
    .await;
    // hermes: one user message, no system message, no max_tokens, its own model name.
    let res = chat(
        &app,
        json!({"model": "google/gemini-3-flash-preview", "messages": [{"role": "user", "content": PROMPT}]}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["model"], "local/gpt-test");
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        content.starts_with("## Goal\nFix the login bug"),
        "{content}"
    );
    assert!(
        !content.contains("Q7vX2mN9pL4kR8sT1wY6zA3bC5dE0fG"),
        "secrets are scrubbed: {content}"
    );
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16})
    );
    let upstream_saw = sent(&server, 0).await;
    assert_eq!(
        upstream_saw["messages"],
        json!([{"role": "user", "content": PROMPT}]),
        "no system prompt is added"
    );
    assert_eq!(upstream_saw["model"], "gpt-test");
    assert_eq!(upstream_saw["max_tokens"], 8_000, "0.8 × reserveTokens");

    // The same request again: the cache answers, the upstream is not called.
    let again: Value = chat(
        &app,
        json!({"messages": [{"role": "user", "content": PROMPT}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(again["choices"][0]["message"]["content"], content);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn system_messages_model_names_and_budgets_are_honoured() {
    let (first, second) = (
        answering("from first").await,
        answering("from second").await,
    );
    let llm = config(vec![openai("first", &first), openai("second", &second)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let models: Value = app.get("/v1/models").await.json().await.unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["first", "second", "extractive"]);

    let body: Value = chat(
        &app,
        json!({
            "model": "second",
            "messages": [
                {"role": "system", "content": "You summarize."},
                {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
                {"role": "assistant", "content": "an answer"}
            ],
            "max_tokens": 99,
            "max_completion_tokens": 321
        }),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(body["model"], "second/gpt-test");
    assert_eq!(body["choices"][0]["message"]["content"], "from second");
    assert!(first.received_requests().await.unwrap().is_empty());
    let upstream_saw = sent(&second, 0).await;
    assert_eq!(
        upstream_saw["messages"],
        json!([
            {"role": "system", "content": "You summarize."},
            {"role": "user", "content": "[User]: part one\npart two\n\n[Assistant]: an answer"}
        ])
    );
    assert_eq!(upstream_saw["max_tokens"], 321);

    let body: Value = chat(
        &app,
        json!({"model": "extractive", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 50}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        body["model"], "extractive",
        "`extractive` is a model name too"
    );
}

/// Server-sent events: the data lines, parsed, and whether `[DONE]` ended them.
async fn events(res: reqwest::Response) -> (Vec<Value>, bool) {
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = res.text().await.unwrap();
    let data: Vec<&str> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .expect("every event is a data line")
        })
        .collect();
    let done = data.last() == Some(&"[DONE]");
    let chunks = data
        .iter()
        .filter(|d| **d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (chunks, done)
}

#[tokio::test]
async fn streaming_answers_chunks_then_usage_then_done() {
    let server = answering("the summary").await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let request = |usage: bool| {
        json!({"messages": [{"role": "user", "content": PROMPT}], "stream": true,
               "stream_options": {"include_usage": usage}})
    };
    let (chunks, done) = events(chat(&app, request(true)).await).await;
    assert!(done);
    assert_eq!(chunks.len(), 4, "{chunks:?}");
    let id = &chunks[0]["id"];
    assert!(id.as_str().unwrap().starts_with("chatcmpl-"));
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(&c["id"], id, "one id for the whole stream");
        assert_eq!(c["model"], "local/gpt-test");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "the summary");
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[3]["choices"], json!([]));
    assert_eq!(chunks[3]["usage"]["total_tokens"], 16);

    let (chunks, done) = events(chat(&app, request(false)).await).await;
    assert!(done);
    assert_eq!(chunks.len(), 3, "no usage chunk unless asked");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
}

#[tokio::test]
async fn errors_are_openai_shaped_with_the_usual_statuses() {
    let app = spawn_app_with(|c| c.max_body_bytes = 2_000).await;
    let e = openai_error(
        app.post(
            "/v1/chat/completions",
            "application/json",
            "{\"messages\": [",
        )
        .await,
        400,
        "invalid_request_error",
        "malformed_json",
    )
    .await;
    assert!(e["error"]["message"].as_str().unwrap().contains("line 1"));
    openai_error(
        app.post("/v1/chat/completions", "text/plain", "hi").await,
        415,
        "invalid_request_error",
        "unsupported_media_type",
    )
    .await;
    let big = json!({"messages": [{"role": "user", "content": "x".repeat(5_000)}]});
    openai_error(
        chat(&app, big).await,
        413,
        "invalid_request_error",
        "body_too_large",
    )
    .await;
    for (body, param) in [
        (json!({"model": "m"}), Value::Null),
        (json!([1, 2]), Value::Null),
        (json!({"messages": "hi"}), json!("messages")),
        (
            json!({"messages": [{"content": "hi"}]}),
            json!("messages.0"),
        ),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}),
            json!("max_tokens"),
        ),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}),
            json!("stream"),
        ),
        (
            json!({"messages": [{"role": "system", "content": "only instructions"}]}),
            json!("messages"),
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
            json!("messages.0.content.0.type"),
        ),
    ] {
        let e = openai_error(
            chat(&app, body.clone()).await,
            422,
            "invalid_request_error",
            "invalid_request",
        )
        .await;
        if !param.is_null() {
            assert_eq!(e["error"]["param"], param, "{body}");
        }
    }
    openai_error(
        app.client
            .get(format!("{}/v1/chat/completions", app.address))
            .send()
            .await
            .unwrap(),
        405,
        "invalid_request_error",
        "method_not_allowed",
    )
    .await;
}

#[tokio::test]
async fn auth_is_openai_shaped_on_the_facade_only() {
    let app = spawn_app_with(|c| c.api_keys = ClientKeys::new(["k-chat-123"])).await;
    for res in [
        chat(
            &app,
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await,
        app.get("/v1/models").await,
    ] {
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
        let e = openai_error(res, 401, "authentication_error", "unauthorized").await;
        assert!(!e.to_string().contains("k-chat-123"));
    }
    crate::helpers::problem(
        app.post_json("/v1/summarize", &json!({"prompt": "p"}))
            .await,
        401,
        "unauthorized",
    )
    .await;
    let res = app
        .client
        .post(format!("{}/v1/chat/completions", app.address))
        .bearer_auth("k-chat-123")
        .json(&json!({"messages": [{"role": "user", "content": PROMPT}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn a_failing_upstream_without_fallback_is_a_502_without_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string(format!("bad key {KEY}")))
        .mount(&server)
        .await;
    let mut llm = config(vec![openai("local", &server)]);
    llm.fallback = FallbackPolicy::None;
    let app = spawn_app_with(move |c| c.llm = llm).await;
    for stream in [false, true] {
        let e = openai_error(
            chat(
                &app,
                json!({"messages": [{"role": "user", "content": PROMPT}], "stream": stream}),
            )
            .await,
            502,
            "server_error",
            "upstream_failed",
        )
        .await;
        assert!(!e.to_string().contains(KEY), "{e}");
    }

    // With the extractive fallback allowed, the same failure answers 200 from `extractive`.
    let mut llm = config(vec![openai("local", &server)]);
    llm.retries = 0;
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let body: Value = chat(
        &app,
        json!({"messages": [{"role": "user", "content": PROMPT}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(body["model"], "extractive");
}
