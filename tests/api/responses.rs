//! `POST /v1/responses/compact` through the real server: OpenAI's compact request in, a
//! readable `response.compaction` out, without a model (the extractive summarizer) and in
//! front of a fake OpenAI upstream (wiremock) that checks what compactd sends it.

use serde_json::{json, Value};
use wiremock::MockServer;

use crate::helpers::{spawn_app_with, TestApp};
use crate::upstreams::{answering, config, openai};

/// How the summary message starts (`compaction_summary` in prompts/wrappers.toml).
const WRAPPER_START: &str = "Reference context: earlier messages of this session were compacted into the summary below.\n\n<compaction-summary>\n";

/// A coding conversation of `turns` turns, each a request, a tool call and its output,
/// and an answer; the first request carries a standing rule.
fn conversation(turns: usize) -> Vec<Value> {
    let mut items = Vec::new();
    for t in 0..turns {
        let ask = if t == 0 {
            "Fix the failing tests. Never push to main.".to_string()
        } else {
            format!("Now look at module {t} and tell me what it does in detail.")
        };
        items.push(json!({"role": "user", "content": ask}));
        items.push(
            json!({"type": "function_call", "call_id": format!("call_{t}"), "name": "read",
            "arguments": format!("{{\"path\":\"src/m{t}.rs\"}}")}),
        );
        items.push(
            json!({"type": "function_call_output", "call_id": format!("call_{t}"),
            "output": format!("fn m{t}() {{ {} }}", "let x = 1; ".repeat(40))}),
        );
        items.push(json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": format!("Module {t} sets x, forty times.")}]}));
    }
    items
}

async fn compact(app: &TestApp, body: &Value) -> reqwest::Response {
    app.post_json("/v1/responses/compact", body).await
}

/// Every tool output in `output` has its call there too.
fn assert_calls_paired(output: &[Value]) {
    for item in output {
        if item["type"] == "function_call_output" {
            let id = &item["call_id"];
            assert!(
                output
                    .iter()
                    .any(|i| i["type"] == "function_call" && &i["call_id"] == id),
                "an output without its call: {item}"
            );
        }
    }
}

fn summary_text(answer: &Value) -> &str {
    let first = &answer["output"][0];
    assert_eq!(first["type"], "message");
    assert_eq!(first["role"], "user");
    first["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn without_a_model_the_answer_is_a_readable_compaction_with_the_kept_items_as_sent() {
    let app = spawn_app_with(|_| {}).await;
    let input = conversation(6);
    let res = compact(
        &app,
        &json!({"model": "gpt-5", "input": input, "keepRecentTokens": 300}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer["object"], "response.compaction");
    assert!(answer["id"].as_str().unwrap().starts_with("cmp_"));
    assert!(answer["created_at"].as_i64().unwrap() > 0);
    let text = summary_text(&answer);
    assert!(text.starts_with(WRAPPER_START), "{text}");
    assert!(
        text.contains("Never push to main"),
        "the standing rule: {text}"
    );
    let output = answer["output"].as_array().unwrap();
    let kept = &output[1..];
    assert!(!kept.is_empty() && kept.len() < input.len());
    assert_eq!(
        kept,
        &input[input.len() - kept.len()..],
        "kept verbatim, in order"
    );
    assert_calls_paired(output);
    assert!(answer["usage"]["total_tokens"].is_u64());
    assert_eq!(answer["model"], "extractive");
}

/// Every prompt the upstream was sent from request `from` on, joined.
async fn prompts_since(server: &MockServer, from: usize) -> String {
    let requests = server.received_requests().await.unwrap();
    requests[from..]
        .iter()
        .flat_map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_model_writes_the_summary_and_the_output_fed_back_takes_the_update_path() {
    let server = answering("## Goal\nFix the failing tests; never push to main.").await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    // An unknown model name means the configured default, as on the chat facade.
    let res = compact(
        &app,
        &json!({"model": "gpt-5", "input": conversation(6), "keepRecentTokens": 300,
                "instructions": "You are a careful coding agent."}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let first: Value = res.json().await.unwrap();
    assert_eq!(first["model"], "local/gpt-test");
    // Each call: 10 prompt tokens (4 cached) and 6 out; a split turn makes two calls.
    let calls = first["usage"]["output_tokens"].as_u64().unwrap() / 6;
    assert!(calls >= 1);
    assert_eq!(
        first["usage"],
        json!({"input_tokens": 10 * calls, "input_tokens_details": {"cached_tokens": 4 * calls},
               "output_tokens": 6 * calls, "output_tokens_details": {"reasoning_tokens": 0},
               "total_tokens": 16 * calls})
    );
    assert!(summary_text(&first).contains("## Goal\nFix the failing tests"));
    let prompt = prompts_since(&server, 0).await;
    assert!(
        prompt.contains("You are a careful coding agent."),
        "instructions as context"
    );
    let before = server.received_requests().await.unwrap().len();

    // The output plus three more turns, compacted again.
    let mut input = first["output"].as_array().unwrap().clone();
    input.extend(conversation(9).into_iter().skip(24));
    let res = compact(
        &app,
        &json!({"model": "local", "input": input, "keepRecentTokens": 300}),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let second: Value = res.json().await.unwrap();
    let prompt = prompts_since(&server, before).await;
    assert!(
        prompt.contains("Fix the failing tests; never push to main."),
        "the previous summary reaches the update prompt: {prompt}"
    );
    assert!(
        !prompt.contains(WRAPPER_START),
        "as the previous summary, not as a message: {prompt}"
    );
    let output = second["output"].as_array().unwrap();
    assert_eq!(
        output
            .iter()
            .filter(|i| i["role"] == "user"
                && i["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(WRAPPER_START)))
            .count(),
        1,
        "one summary message"
    );
    assert_calls_paired(output);
}

#[tokio::test]
async fn errors_come_in_openai_shape() {
    let app = spawn_app_with(|_| {}).await;
    let cases = [
        (
            json!({"model": "m", "previous_response_id": "resp_1", "input": "x"}),
            422,
            "previous_response_id",
        ),
        (json!({"model": "m"}), 422, "input"),
        (
            json!({"model": "m", "input": [{"role": "robot", "content": "x"}]}),
            422,
            "input.0",
        ),
    ];
    for (body, status, param) in cases {
        let res = compact(&app, &body).await;
        assert_eq!(res.status().as_u16(), status, "{body}");
        let e: Value = res.json().await.unwrap();
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        assert_eq!(e["error"]["param"], param, "{e}");
    }
    // Nothing before the newest user message: returned as it came, with a note.
    let res = compact(&app, &json!({"model": "m", "input": "hello"})).await;
    assert_eq!(res.status().as_u16(), 200);
    let a: Value = res.json().await.unwrap();
    assert_eq!(a["object"], "response.compaction");
    assert!(
        summary_text(&a).starts_with(&format!("{WRAPPER_START}\n</compaction-summary>")),
        "{a:#}"
    );
    assert_eq!(
        a["output"][1],
        json!({"role": "user", "content": "hello"}),
        "{a:#}"
    );
    assert_eq!(a["output"].as_array().unwrap().len(), 2);
    assert!(
        a["metadata"]["note"]
            .as_str()
            .unwrap()
            .contains("as it came"),
        "{a:#}"
    );
    let res = app
        .post("/v1/responses/compact", "application/json", "{\"input\": [")
        .await;
    assert_eq!(res.status().as_u16(), 400);
    let e: Value = res.json().await.unwrap();
    assert!(e["error"]["message"].is_string(), "{e}");
}

#[tokio::test]
async fn options_come_from_the_body_and_the_query_as_on_v1_compact() {
    let app = spawn_app_with(|_| {}).await;
    let input = conversation(12);
    // targetTokens in the query string: the summary and the kept items fit it.
    let res = app
        .post_json(
            "/v1/responses/compact?targetTokens=1500",
            &json!({"model": "m", "input": input}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let answer: Value = res.json().await.unwrap();
    assert!(answer["tokens_after"].as_u64().unwrap() <= 1500, "{answer}");
    assert_calls_paired(answer["output"].as_array().unwrap());
    // `settings` in the body, as in a /v1/compact body: a larger kept part.
    let kept = |answer: &Value| answer["output"].as_array().unwrap().len() - 1;
    let small: Value = compact(
        &app,
        &json!({"input": input, "settings": {"keepRecentTokens": 200}}),
    )
    .await
    .json()
    .await
    .unwrap();
    let large: Value = compact(
        &app,
        &json!({"input": input, "settings": {"keepRecentTokens": 1200}}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert!(
        kept(&small) < kept(&large),
        "{} < {}",
        kept(&small),
        kept(&large)
    );
    // A bad option names itself.
    let res = compact(&app, &json!({"input": input, "keepRecentTokens": "many"})).await;
    assert_eq!(res.status().as_u16(), 422);
    let e: Value = res.json().await.unwrap();
    assert_eq!(e["error"]["param"], "keepRecentTokens", "{e}");
}

#[tokio::test]
async fn a_preamble_before_a_fed_back_summary_stays_in_front() {
    let app = spawn_app_with(|_| {}).await;
    let first: Value = compact(
        &app,
        &json!({"input": conversation(6), "keepRecentTokens": 300}),
    )
    .await
    .json()
    .await
    .unwrap();
    let preamble =
        json!({"role": "developer", "content": "Answer in English. Never push to main."});
    let mut input = vec![preamble.clone()];
    input.extend(first["output"].as_array().unwrap().iter().cloned());
    input.extend(conversation(9).into_iter().skip(24));
    let res = compact(&app, &json!({"input": input, "keepRecentTokens": 300})).await;
    assert_eq!(res.status().as_u16(), 200);
    let second: Value = res.json().await.unwrap();
    assert_eq!(second["output"][0], preamble);
    assert!(summary_text(&json!({"output": [second["output"][1]]})).starts_with(WRAPPER_START));
    assert_calls_paired(second["output"].as_array().unwrap());
}

/// A compaction on request always compacts: a short conversation that fits the kept part
/// keeps its newest user message and what follows, and the rest is summarized.
#[tokio::test]
async fn a_short_conversation_is_compacted_up_to_its_newest_user_message() {
    let app = spawn_app_with(|_| {}).await;
    let items = vec![
        json!({"role": "user", "content": "Rename the helper in src/lex.ts. Never push to main."}),
        json!({"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "Renamed it to nextToken."}]}),
        json!({"role": "user", "content": "Now run the tests."}),
        json!({"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "All 41 pass."}]}),
    ];
    let res = compact(&app, &json!({"model": "m", "input": items})).await;
    assert_eq!(res.status().as_u16(), 200);
    let a: Value = res.json().await.unwrap();
    let output = a["output"].as_array().unwrap();
    assert_eq!(output[1..], items[2..], "{a:#}");
    let summary = summary_text(&a);
    assert!(summary.contains("Never push to main."), "{summary}");
    assert!(
        a["metadata"]["note"]
            .as_str()
            .unwrap()
            .contains("newest user message"),
        "{a:#}"
    );
    // A conversation that does not fit says nothing of the kind.
    let res = compact(
        &app,
        &json!({"model": "m", "input": conversation(6), "keepRecentTokens": 300}),
    )
    .await;
    let a: Value = res.json().await.unwrap();
    assert!(a.get("metadata").is_none(), "{a:#}");
}
