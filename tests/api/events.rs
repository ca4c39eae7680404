//! Progress as Server-Sent Events (`Accept: text/event-stream`) through the real server:
//! event order, retries and fallbacks from a fake model upstream, heartbeats, the final
//! `result` equal to the plain answer, errors before and during the stream, the
//! concurrency limit held while streaming, and a client disconnect cancelling the work.

use std::sync::Arc;
use std::time::Duration;

use compactd::config::FallbackPolicy;
use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{entries_of, problem, small_session, spawn_app, spawn_app_with, TestApp};
use crate::sse::{names, Item, Reader};
use crate::upstreams::{completion, config, openai, silent_upstream, KEY};

const SSE: &str = "text/event-stream";

fn summarize_body() -> Value {
    json!({"systemPrompt": "", "prompt": "<conversation>\n[User]: fix the bug in src/lib.rs\n</conversation>"})
}

async fn post_events(
    app: &TestApp,
    path: &str,
    ct: &str,
    body: impl Into<reqwest::Body>,
) -> Reader {
    let res = app
        .client
        .post(format!("{}{path}", app.address))
        .header("content-type", ct)
        .header("accept", SSE)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    Reader::new(res)
}

/// A JSON request asking for events, its stream not read yet.
async fn stream_json(app: &TestApp, path: &str, body: &Value) -> Reader {
    post_events(
        app,
        path,
        "application/json",
        serde_json::to_vec(body).unwrap(),
    )
    .await
}

/// A JSON request's events, read to the end of the stream.
async fn events_of(app: &TestApp, path: &str, body: &Value) -> Vec<Item> {
    stream_json(app, path, body).await.all().await
}

/// Ids are 0, 1, 2, … in order.
fn assert_sequential_ids(items: &[Item]) {
    let ids: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            Item::Event { id, .. } => id.clone(),
            Item::Comment(_) => None,
        })
        .collect();
    let expected: Vec<String> = (0..ids.len()).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
}

/// The compaction's answer without what is fresh on every call (the entry's id and time).
fn without_fresh(mut v: Value) -> Value {
    let entry = v["entry"].as_object_mut().unwrap();
    entry.remove("id");
    entry.remove("timestamp");
    v
}

#[tokio::test]
async fn a_compaction_streams_its_plan_and_ends_with_the_plain_answer() {
    let app = spawn_app().await;
    let url = "/v1/compact?keepRecentTokens=1";
    let items = post_events(&app, url, "application/x-ndjson", small_session())
        .await
        .all()
        .await;
    assert_eq!(names(&items).first(), Some(&"prepared"), "{items:?}");
    assert_eq!(names(&items).last(), Some(&"result"), "{items:?}");
    assert!(names(&items).contains(&"summarizing"), "{items:?}");
    assert_sequential_ids(&items);
    let prepared = items[0].json();
    assert_eq!(prepared["operation"], "compact");
    assert!(prepared["firstKeptEntryId"].is_string(), "{prepared}");
    assert!(prepared["tokensBefore"].as_f64().unwrap() > 0.0);
    assert_eq!(prepared["chunks"], 1);
    let step = items
        .iter()
        .find(|i| i.name() == "summarizing")
        .unwrap()
        .json();
    assert_eq!(step["part"], "history");
    assert_eq!(step["model"], "extractive");

    let streamed = items.last().unwrap().json();
    let plain: Value = app
        .post_jsonl(url, small_session())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(without_fresh(streamed), without_fresh(plain));
}

#[tokio::test]
async fn retries_and_the_answer_come_as_events_in_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("## Goal\nFix it.")))
        .mount(&server)
        .await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let items = events_of(&app, "/v1/summarize", &summarize_body()).await;
    assert_eq!(
        names(&items),
        ["prepared", "summarizing", "retry", "summarizing", "result"],
        "{items:?}"
    );
    assert_sequential_ids(&items);
    let attempts: Vec<Value> = items
        .iter()
        .filter(|i| i.name() == "summarizing")
        .map(Item::json)
        .collect();
    assert_eq!(attempts[0]["model"], "local/gpt-test");
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(attempts[1]["attempt"], 2);
    assert_eq!(attempts[0]["part"], "summary");
    let retry = items[2].json();
    assert_eq!(retry["source"], "backoff");
    assert!(retry["reason"].as_str().unwrap().contains("503"), "{retry}");
    assert!(retry["waitMs"].is_u64());
    let result = items.last().unwrap().json();
    assert_eq!(result["summary"], "## Goal\nFix it.");
    assert_eq!(result["summarizer"], "llm");
    assert!(!format!("{items:?}").contains(KEY));
}

#[tokio::test]
async fn a_failing_model_shows_the_fallback_or_ends_with_an_error_event() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"message": format!("bad key {KEY}")}})),
        )
        .mount(&server)
        .await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let items = events_of(&app, "/v1/summarize", &summarize_body()).await;
    assert_eq!(
        names(&items),
        ["prepared", "summarizing", "fallback", "result"],
        "{items:?}"
    );
    let fallback = items[2].json();
    assert_eq!(fallback["to"], "extractive");
    assert_eq!(fallback["part"], "summary");
    assert!(!format!("{items:?}").contains(KEY), "{items:?}");
    assert_eq!(items[3].json()["summarizer"], "extractive");

    let mut llm = config(vec![openai("local", &server)]);
    llm.fallback = FallbackPolicy::None;
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let items = events_of(&app, "/v1/summarize", &summarize_body()).await;
    assert_eq!(
        names(&items),
        ["prepared", "summarizing", "error"],
        "{items:?}"
    );
    let p = items[2].json();
    assert_eq!(p["status"], 502);
    assert_eq!(p["type"], "urn:compactd:problem:upstream-failed");
}

#[tokio::test]
async fn a_second_candidate_after_the_first_fails_is_a_fallback_event() {
    let failing = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401))
        .mount(&failing)
        .await;
    let answering = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("second")))
        .mount(&answering)
        .await;
    let llm = config(vec![
        openai("first", &failing),
        openai("second", &answering),
    ]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let items = events_of(&app, "/v1/summarize", &summarize_body()).await;
    assert_eq!(
        names(&items),
        [
            "prepared",
            "summarizing",
            "fallback",
            "summarizing",
            "result"
        ],
        "{items:?}"
    );
    let fallback = items[2].json();
    assert_eq!(fallback["from"], "first/gpt-test");
    assert_eq!(fallback["to"], "second/gpt-test");
    assert_eq!(items[3].json()["model"], "second/gpt-test");
}

#[tokio::test]
async fn a_slow_model_gets_heartbeats_and_holds_its_place_under_the_limit() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion("slow"))
                .set_delay(Duration::from_millis(1200)),
        )
        .mount(&server)
        .await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| {
        c.llm = llm;
        c.heartbeat = Duration::from_millis(200);
        c.max_concurrency = 1;
    })
    .await;
    let mut reader = stream_json(&app, "/v1/summarize", &summarize_body()).await;
    assert_eq!(reader.next().await.unwrap().name(), "prepared");
    // The stream's work holds the one permit: another request is shed.
    problem(
        app.post_json("/v1/summarize", &summarize_body()).await,
        503,
        "overloaded",
    )
    .await;
    let rest = reader.all().await;
    let heartbeats = rest
        .iter()
        .filter(|i| **i == Item::Comment("heartbeat".into()))
        .count();
    assert!(heartbeats >= 2, "{rest:?}");
    assert_eq!(names(&rest), ["summarizing", "result"]);
    // The permit is back once the stream ended.
    let res = app.post_json("/v1/summarize", &summarize_body()).await;
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn errors_found_before_the_stream_are_plain_http_errors() {
    let app = spawn_app().await;
    let send = |path: &str, ct: &str, body: &str| {
        app.client
            .post(format!("{}{path}", app.address))
            .header("content-type", ct.to_string())
            .header("accept", SSE)
            .body(body.to_string())
            .send()
    };
    problem(
        send("/v1/compact", "application/json", "{").await.unwrap(),
        400,
        "malformed-json",
    )
    .await;
    problem(
        send(
            "/v1/summarize",
            "application/json",
            r#"{"systemPrompt": ""}"#,
        )
        .await
        .unwrap(),
        422,
        "invalid-session",
    )
    .await;
    let one = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
    problem(
        send("/v1/compact", "application/x-ndjson", one)
            .await
            .unwrap(),
        409,
        "nothing-to-compact",
    )
    .await;
    problem(
        send(
            "/v1/branch-summary",
            "application/json",
            r#"{"entries": []}"#,
        )
        .await
        .unwrap(),
        422,
        "invalid-session",
    )
    .await;
}

#[tokio::test]
async fn branch_summaries_and_hermes_compactions_stream_too() {
    let app = spawn_app().await;
    let tree = crate::branch::tree();
    let body = json!({"entries": entries_of(&tree), "oldLeafId": "d", "targetId": "e"});
    let items = events_of(&app, "/v1/branch-summary", &body).await;
    assert_eq!(
        names(&items),
        ["prepared", "summarizing", "result"],
        "{items:?}"
    );
    assert_eq!(items[0].json()["operation"], "branch-summary");
    assert_eq!(items[1].json()["part"], "branch");
    let streamed = items[2].json();
    let plain: Value = app
        .post_json("/v1/branch-summary", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(without_fresh(streamed), without_fresh(plain));

    // hermes without a model: nothing to summarize with, the list comes back unchanged.
    let messages: Vec<Value> = (0..12)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("message {i} ").repeat(400)}))
        .collect();
    let body = json!({"messages": messages, "contextLength": 8000, "today": "2026-01-15"});
    let items = events_of(&app, "/v1/hermes/compress", &body).await;
    assert_eq!(names(&items).last(), Some(&"result"), "{items:?}");
    let plain: Value = app
        .post_json("/v1/hermes/compress", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(items.last().unwrap().json(), plain);
}

#[tokio::test]
async fn a_client_that_leaves_the_stream_cancels_the_work() {
    let (port, arrived, upstream) = silent_upstream().await;
    let llm = crate::helpers::silent_model("local", port).await;
    let app = Arc::new(
        spawn_app_with(move |c| {
            c.llm = llm;
            c.heartbeat = Duration::from_millis(100);
        })
        .await,
    );
    let mut reader = stream_json(&app, "/v1/summarize", &summarize_body()).await;
    assert_eq!(reader.next().await.unwrap().name(), "prepared");
    arrived.await.unwrap();
    drop(reader);
    assert!(
        upstream.await.unwrap(),
        "compactd closed the upstream connection after its stream's client went away"
    );
}
