//! `/v1/hermes/compress`, `/v1/hermes/prepare` and `compactd hermes-compress` through the
//! real server: a model that answers, fails or is out of reach, no model at all, bad
//! bodies, and secrets. The rules themselves are checked against hermes 0.19.0 by the
//! conformance suite (`tests/conformance/hermes`).

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{problem, spawn_app, spawn_app_with};
use crate::upstreams::{completion, config, openai, KEY};

const PREFIX_MARKER: &str = "[CONTEXT COMPACTION — REFERENCE ONLY]";

/// A hermes conversation of `turns` asks, each answered after a tool call with a large
/// result, with a field hermes does not know on every message.
fn conversation(turns: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "system", "content": "You are a coding agent."})];
    for t in 0..turns {
        m.push(json!({"role": "user", "content": format!("Step {t}: fix the bug in src/mod{t}.rs"), "x_trace": {"ms": 1.50}}));
        m.push(json!({"role": "assistant", "content": "", "tool_calls": [{"id": format!("call_{t}"), "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\": \"src/mod{t}.rs\"}}")}}]}));
        m.push(json!({"role": "tool", "tool_call_id": format!("call_{t}"), "content": format!("fn f{t}() {{}}\n").repeat(120)}));
        m.push(json!({"role": "assistant", "content": format!("Fixed src/mod{t}.rs.")}));
    }
    m
}

fn request(messages: Vec<Value>) -> Value {
    json!({"messages": messages, "contextLength": 8000, "today": "2026-01-15"})
}

async fn model_answering(status: u16, body: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(&server)
        .await;
    server
}

/// POSTs `body` and reads the (200) JSON answer.
async fn answer(app: &crate::helpers::TestApp, path: &str, body: &Value) -> Value {
    let res = app.post_json(path, body).await;
    assert_eq!(res.status().as_u16(), 200);
    res.json().await.unwrap()
}

#[tokio::test]
async fn a_model_summary_replaces_the_middle_and_the_rest_is_kept_as_sent() {
    let server = model_answering(
        200,
        completion("## Historical Task Snapshot\nold\n\n## Progress\nFixed six modules."),
    )
    .await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    // A number token serde would print differently (1.50) must come back as sent.
    let sent_body = request(conversation(12))
        .to_string()
        .replace(r#""ms":1.5"#, r#""ms":1.50"#);
    let input: Vec<Value> = serde_json::from_str::<Value>(&sent_body).unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let res = app
        .post("/v1/hermes/compress", "application/json", sent_body)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["compressed"], true, "{body}");
    assert_eq!(body["summarizer"], "llm");
    let out = body["messages"].as_array().unwrap();
    assert!(out.len() < input.len());
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.starts_with(PREFIX_MARKER), "{summary}");
    assert!(summary.contains("Fixed six modules."));
    // Grounding replaced the model's snapshot with the newest real ask it summarized.
    assert!(
        !summary.contains("## Historical Task Snapshot\nold"),
        "{summary}"
    );
    let i = body["summaryIndex"].as_u64().unwrap() as usize;
    assert_eq!(out[i]["_compressed_summary"], true);
    assert_eq!(body["sources"][i], Value::Null);
    // Every other output message is an input message (the system message gains a note,
    // pruned ones a one-line tool summary), unknown fields and number tokens as sent.
    let pruned: Vec<u64> = body["boundaries"]["prunedIndexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(!pruned.is_empty(), "old tool outputs were pruned: {body}");
    for (k, src) in body["sources"].as_array().unwrap().iter().enumerate() {
        if let Some(j) = src.as_u64() {
            if k > 0 && !pruned.contains(&j) {
                assert_eq!(out[k], input[j as usize], "output {k} from input {j}");
            }
        }
    }
    for &j in &pruned {
        let k = body["sources"]
            .as_array()
            .unwrap()
            .iter()
            .position(|s| s == j);
        if let Some(k) = k {
            assert!(out[k]["content"]
                .as_str()
                .unwrap()
                .starts_with("[read_file] read src/mod"));
        }
    }
    assert!(text.contains(r#""ms":1.50"#), "the number token survives");
    assert_eq!(body["state"]["compressionCount"], 1);
    assert!(body["state"]["previousSummary"]
        .as_str()
        .unwrap()
        .contains("Fixed six modules."));
    assert_eq!(body["fallback"]["used"], false);
    assert_eq!(body["usage"]["input"], 900);
    // The summarizer got one user message, no system prompt and no output cap.
    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1);
    assert_eq!(sent["messages"][0]["role"], "user");
    assert!(sent.get("max_tokens").is_none(), "{sent}");
    assert_eq!(
        sent["messages"][0]["content"],
        body["requests"][0]["messages"][0]["content"]
    );
}

#[tokio::test]
async fn without_a_model_the_static_fallback_summarizes() {
    let app = spawn_app().await;
    let res = app
        .post_json("/v1/hermes/compress", &request(conversation(12)))
        .await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["compressed"], true, "{body}");
    assert_eq!(body["summarizer"], "fallback");
    assert_eq!(body["fallback"]["used"], true);
    assert_eq!(
        body["fallback"]["error"],
        "no auxiliary LLM provider configured"
    );
    assert!(body["fallback"]["droppedCount"].as_u64().unwrap() > 0);
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.starts_with(PREFIX_MARKER));
    assert!(summary.contains("src/mod"), "files are listed: {summary}");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(r#"compactd_hermes_compactions_total{outcome="fallback"}"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_model_out_of_reach_keeps_the_list_unchanged() {
    let server = model_answering(401, json!({"error": {"message": "invalid api key"}})).await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let input = request(conversation(12));
    let body = answer(&app, "/v1/hermes/compress", &input).await;
    assert_eq!(body["compressed"], false, "{body}");
    assert_eq!(body["reason"], "summary-failed");
    assert_eq!(body["messages"], input["messages"]);
    assert_eq!(body["state"]["compressionCount"], 0);
    assert!(!body.to_string().contains(KEY));
}

#[tokio::test]
async fn a_failing_model_takes_the_fallback_unless_told_to_abort() {
    let server = model_answering(400, json!({"error": {"message": "bad request"}})).await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let body: Value = app
        .post_json("/v1/hermes/compress", &request(conversation(12)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["summarizer"], "fallback", "{body}");
    assert!(body["fallback"]["error"].as_str().unwrap().contains("400"));
    let mut abort = request(conversation(12));
    abort["settings"] = json!({"abortOnSummaryFailure": true});
    let body = answer(&app, "/v1/hermes/compress", &abort).await;
    assert_eq!(body["compressed"], false);
    assert_eq!(body["reason"], "summary-failed");
}

#[tokio::test]
async fn prepare_plans_without_calling_the_model() {
    let server = model_answering(200, completion("never")).await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let body: Value = app
        .post_json("/v1/hermes/prepare", &request(conversation(12)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["compressed"], false);
    let prompt = body["requests"][0]["messages"][0]["content"]
        .as_str()
        .unwrap();
    let serialized = body["serialized"].as_str().unwrap();
    assert!(serialized.contains("\n\n[USER]: Step 2:"), "{serialized}");
    assert!(
        serialized.contains("[TOOL RESULT call_2]: "),
        "{serialized}"
    );
    assert!(prompt.contains(serialized));
    assert!(prompt.contains("2026-01-15"));
    assert!(
        body["boundaries"]["compressEnd"].as_u64() > body["boundaries"]["compressStart"].as_u64()
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_summary_with_no_head_takes_the_role_asked_for() {
    let app = spawn_app().await;
    // No system message and a decayed head (a second compaction): compressStart is 0.
    let mut body = request(conversation(12)[1..].to_vec());
    body["state"] = json!({"compressionCount": 1, "previousSummary": "earlier work"});
    let hermes = answer(&app, "/v1/hermes/compress", &body).await;
    assert_eq!(hermes["boundaries"]["compressStart"], 0, "{hermes}");
    assert_eq!(hermes["summaryRole"], "assistant");
    body["noHeadRole"] = json!("user");
    let h4 = answer(&app, "/v1/hermes/compress", &body).await;
    assert_eq!(h4["summaryRole"], "user");
    assert_eq!(h4["messages"][0]["role"], "user");
    body["noHeadRole"] = json!("system");
    let res = app.post_json("/v1/hermes/compress", &body).await;
    let p = problem(res, 422, "invalid-session").await;
    assert_eq!(p["errors"][0]["pointer"], "/noHeadRole");
}

#[tokio::test]
async fn short_conversations_come_back_unchanged() {
    let app = spawn_app().await;
    let input = request(conversation(1));
    let body = answer(&app, "/v1/hermes/compress", &input).await;
    assert_eq!(body["compressed"], false);
    assert_eq!(body["reason"], "too-few-messages");
    assert_eq!(body["messages"], input["messages"]);
}

#[tokio::test]
async fn secrets_reach_neither_the_model_nor_the_answer() {
    let secret = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789";
    let server =
        model_answering(200, completion(&format!("## Progress\nUsed key {secret}."))).await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let mut messages = conversation(12);
    messages[5]["content"] = json!(format!("export OPENAI_API_KEY={secret}"));
    let body = answer(&app, "/v1/hermes/compress", &request(messages)).await;
    assert_eq!(body["compressed"], true, "{body}");
    assert!(!body["summary"].as_str().unwrap().contains(secret));
    assert!(!body["requests"].to_string().contains(secret));
    let sent =
        String::from_utf8(server.received_requests().await.unwrap()[0].body.clone()).unwrap();
    assert!(!sent.contains(secret));
}

#[tokio::test]
async fn lone_surrogates_are_accepted_and_returned_as_sent() {
    let app = spawn_app().await;
    let body = r#"{"messages": [{"role": "user", "content": "a\ud800b"}], "contextLength": 8000}"#;
    let res = app
        .post("/v1/hermes/prepare", "application/json", body)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    // Not compacted: the message is the one sent, its escape included.
    let text = res.text().await.unwrap();
    assert!(
        text.contains(r#""messages":[{"role": "user", "content": "a\ud800b"}]"#),
        "{text}"
    );
}

#[tokio::test]
async fn bad_bodies_are_precise_problems() {
    let app = spawn_app().await;
    let res = app
        .post(
            "/v1/hermes/compress",
            "application/json",
            "{\"messages\": [\n  {,]}",
        )
        .await;
    let p = problem(res, 400, "malformed-json").await;
    assert_eq!(p["line"], 2);
    let cases = [
        (json!({"messages": []}), ""),
        (json!({"messages": {}, "contextLength": 1000}), "/messages"),
        (
            json!({"messages": [], "contextLength": 0}),
            "/contextLength",
        ),
        (
            json!({"messages": [], "contextLength": 1000, "settings": {"targetRatio": "x"}}),
            "/settings/targetRatio",
        ),
        (
            json!({"messages": [], "contextLength": 1000, "today": "15.01.2026"}),
            "/today",
        ),
        (
            json!({"messages": [], "contextLength": 1000, "state": {"compressionCount": -1}}),
            "/state/compressionCount",
        ),
    ];
    for (body, pointer) in cases {
        let res = app.post_json("/v1/hermes/compress", &body).await;
        let p = problem(res, 422, "invalid-session").await;
        assert_eq!(p["errors"][0]["pointer"], pointer, "{body}: {p}");
    }
    let res = app
        .post("/v1/hermes/compress", "application/x-ndjson", "{}\n")
        .await;
    problem(res, 415, "unsupported-media-type").await;
    let mut unknown = request(conversation(12));
    unknown["model"] = json!("nope");
    let res = app.post_json("/v1/hermes/compress", &unknown).await;
    problem(res, 422, "unknown-model").await;
}

#[tokio::test]
async fn limits_apply_as_on_every_route() {
    let app = spawn_app_with(|c| {
        c.max_entries = 10;
        c.max_body_bytes = 20_000;
    })
    .await;
    let res = app
        .post_json("/v1/hermes/compress", &request(conversation(3)))
        .await;
    let p = problem(res, 413, "too-many-entries").await;
    assert_eq!(p["errors"][0]["pointer"], "/messages/10");
    let res = app
        .post_json("/v1/hermes/compress", &request(conversation(2)))
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let mut big = request(conversation(2));
    big["messages"][1]["content"] = json!("x".repeat(30_000));
    let res = app.post_json("/v1/hermes/compress", &big).await;
    problem(res, 413, "body-too-large").await;
    let keyed =
        spawn_app_with(|c| c.api_keys = compactd::config::ClientKeys::new(["k-123456"])).await;
    let res = keyed
        .post_json("/v1/hermes/prepare", &request(conversation(2)))
        .await;
    problem(res, 401, "unauthorized").await;
}

#[test]
fn the_command_line_compacts_a_file_offline() {
    let dir = std::env::temp_dir().join(format!("compactd-hermes-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("messages.json");
    std::fs::write(&list, serde_json::to_vec(&conversation(12)).unwrap()).unwrap();
    let list = list.to_str().unwrap();
    let planned = crate::helpers::cli_json(&[
        "hermes-compress",
        list,
        "--context-length",
        "8000",
        "--dry-run",
    ]);
    assert_eq!(planned["compressed"], false);
    assert!(planned["serialized"]
        .as_str()
        .unwrap()
        .contains("[USER]: Step"));
    let done = crate::helpers::cli_json(&["hermes-compress", list, "--context-length", "8000"]);
    assert_eq!(done["compressed"], true);
    assert_eq!(done["summarizer"], "fallback");
    let full = dir.join("request.json");
    std::fs::write(&full, request(conversation(12)).to_string()).unwrap();
    let from_request =
        crate::helpers::cli_json(&["hermes-compress", full.to_str().unwrap(), "--dry-run"]);
    assert_eq!(from_request["boundaries"], planned["boundaries"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn recall_searches_the_messages_sent_and_names_them_by_index() {
    let app = spawn_app_with(|c| c.max_entries = 5).await;
    let messages = json!([
        {"role": "user", "content": "The deploy fails with error DEPLOY-417 on the canary host."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "terminal", "arguments": "{\"command\": \"kubectl logs canary-7\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "DEPLOY-417: OPENAI_API_KEY=sk-proj-Abcdefghijklmnopqrstuvwxyz0123 rejected"},
        {"role": "assistant", "content": "The key is rejected."}
    ]);
    let res = app
        .post_json(
            "/v1/hermes/recall",
            &json!({"messages": messages, "q": "DEPLOY-417", "limit": 5}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let a: Value = res.json().await.unwrap();
    assert_eq!(a["query"], "DEPLOY-417");
    assert_eq!(a["searched"], 4);
    let found: Vec<u64> = a["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["index"].as_u64().unwrap())
        .collect();
    assert_eq!(found.len(), 2, "{a:#}");
    assert!(found.contains(&0) && found.contains(&2), "{a:#}");
    let tool = a["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["index"] == 2)
        .unwrap();
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["toolName"], "terminal");
    // The excerpt is the passage, with the secret redacted.
    let excerpt = tool["excerpt"].as_str().unwrap();
    assert!(excerpt.contains("DEPLOY-417"), "{excerpt}");
    assert!(!excerpt.contains("Abcdefghijklmnop"), "{excerpt}");

    let p = problem(
        app.post_json("/v1/hermes/recall", &json!({"messages": messages}))
            .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/q", "{p:#}");
    let p = problem(
        app.post_json("/v1/hermes/recall", &json!({"messages": 3, "q": "x"}))
            .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/messages", "{p:#}");
    let six: Vec<Value> = (0..6)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    let p = problem(
        app.post_json("/v1/hermes/recall", &json!({"messages": six, "q": "x"}))
            .await,
        413,
        "too-many-entries",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/messages/5", "{p:#}");
}
