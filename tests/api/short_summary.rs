//! The short summary of `/v1/summarize` (oh-my-pi's `shortSummary`), and what the entries
//! of `/v1/compact` and `/v1/branch-summary` carry besides pi's keys: `shortSummary` and
//! `usage`.

use std::sync::{Arc, Mutex};

use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy, Summarize};
use compactd::summarize::{RequestKind, Summary, SummaryRequest, Usage};
use serde_json::{json, Value};

use crate::branch::tree;
use crate::helpers::{
    entries_of, llm_summary, small_session, spawn_app, spawn_app_with_summarizer,
};

/// A model that answers a short-summary request with one sentence and anything else with
/// a checkpoint, recording every request.
#[derive(Default)]
struct Model {
    requests: Mutex<Vec<SummaryRequest>>,
}

const CHECKPOINT: &str =
    "## Goal\n- Add a --verbose flag to src/cli.rs\n\n## Next Steps\n1. Document it";
const SENTENCE: &str = "I added a --verbose flag to src/cli.rs.";

impl Summarize for Model {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            self.requests.lock().unwrap().push(req.clone());
            let (text, input) = if req.kind == RequestKind::Short {
                (SENTENCE, 7)
            } else {
                (CHECKPOINT, 100)
            };
            Ok(Summary {
                usage: Usage {
                    input,
                    output: 3,
                    total_tokens: input + 3,
                    ..Usage::default()
                },
                ..llm_summary(text, "test/model")
            })
        })
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        Some(100_000)
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "model"})
    }
}

fn prompt() -> String {
    "<conversation>\n[User]: Add a --verbose flag to src/cli.rs\n\n[Assistant]: Done, the flag is parsed in src/cli.rs.\n\n[User]: Now document the flag in README.md\n</conversation>\n\nSummarize the conversation above as a checkpoint.".into()
}

#[tokio::test]
async fn a_model_writes_the_short_summary_in_a_second_bounded_call() {
    let model = Arc::new(Model::default());
    let app = spawn_app_with_summarizer(model.clone()).await;
    let v: Value = app
        .post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "You summarize.", "prompt": prompt(), "maxTokens": 300}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["summary"], CHECKPOINT);
    assert_eq!(v["shortSummary"], SENTENCE);
    assert_eq!(v["usage"]["input"], 107, "both calls counted: {v}");
    assert_eq!(v["usage"]["totalTokens"], 113);
    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].max_tokens, 300, "maxTokens honoured");
    let short = &requests[1];
    assert_eq!(short.kind, RequestKind::Short);
    assert_eq!(short.max_tokens, 300, "never more than the client allowed");
    assert_eq!(short.strategy, Some(Strategy::Single));
    assert!(short.prompt.contains(CHECKPOINT), "{}", short.prompt);
}

#[tokio::test]
async fn the_short_call_never_spends_more_than_a_few_sentences_need() {
    let model = Arc::new(Model::default());
    let app = spawn_app_with_summarizer(model.clone()).await;
    let res = app
        .post_json(
            "/v1/summarize",
            &json!({"prompt": prompt(), "maxTokens": 4000}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(requests[1].max_tokens, 512);
}

#[tokio::test]
async fn a_short_summary_request_is_its_own_short_summary() {
    let model = Arc::new(Model::default());
    let app = spawn_app_with_summarizer(model.clone()).await;
    let body = json!({"prompt": "<conversation>\n[User]: Add a flag\n</conversation>\n\nDescribe the changes above as a pull request description, in two sentences.", "maxTokens": 100});
    let v: Value = app
        .post_json("/v1/summarize", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["summary"], SENTENCE);
    assert_eq!(v["shortSummary"], SENTENCE);
    assert_eq!(model.requests.lock().unwrap().len(), 1, "one call");
}

#[tokio::test]
async fn without_a_model_the_short_summary_is_derived_from_the_goal_and_last_request() {
    let app = spawn_app().await;
    let answer = || async {
        app.post_json("/v1/summarize", &json!({"prompt": prompt()}))
            .await
            .json::<Value>()
            .await
            .unwrap()
    };
    let v = answer().await;
    assert_eq!(v["summarizer"], "extractive");
    let short = v["shortSummary"].as_str().unwrap();
    assert!(
        short.starts_with("The session is about: \"Add a --verbose flag to src/cli.rs\""),
        "{short}"
    );
    assert!(
        short.contains("most recently \"Now document the flag in README.md\""),
        "{short}"
    );
    assert!(!short.contains('\n'), "one paragraph: {short}");
    assert_eq!(answer().await["shortSummary"], short, "deterministic");
}

/// The keys of an entry, in order.
fn keys(entry: &Value) -> Vec<&str> {
    entry
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[tokio::test]
async fn a_compaction_entry_carries_the_short_summary_and_the_models_usage() {
    let app = spawn_app_with_summarizer(Arc::new(Model::default())).await;
    let v: Value = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=100&shortSummary=true",
            small_session(),
        )
        .await
        .json()
        .await
        .unwrap();
    let entry = &v["entry"];
    assert_eq!(v["shortSummary"], SENTENCE);
    assert_eq!(entry["shortSummary"], SENTENCE);
    assert_eq!(
        keys(entry),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "shortSummary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "usage"
        ]
    );
    // History, turn prefix and short summary, in pi's shape with a zero cost.
    assert_eq!(
        entry["usage"],
        json!({"input": 207, "output": 9, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 216,
               "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
    );
    assert_eq!(v["usage"]["totalTokens"], 216);
}

#[tokio::test]
async fn no_usage_in_entries_when_no_model_answered() {
    let app = spawn_app().await;
    let v: Value = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=100&shortSummary=true",
            small_session(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["summarizer"], "extractive");
    assert!(v["entry"].get("usage").is_none(), "{}", v["entry"]);
    assert_eq!(v["entry"]["shortSummary"], v["shortSummary"]);
    let v: Value = app
        .post_jsonl("/v1/compact?keepRecentTokens=100", small_session())
        .await
        .json()
        .await
        .unwrap();
    assert!(v["entry"].get("shortSummary").is_none(), "none asked for");
    let branch: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries_of(&tree()), "oldLeafId": "d", "targetId": "e"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(branch["summarizer"], "extractive");
    assert!(
        branch["entry"].get("usage").is_none(),
        "{}",
        branch["entry"]
    );
}

#[tokio::test]
async fn a_branch_summary_entry_carries_the_models_usage() {
    let app = spawn_app_with_summarizer(Arc::new(Model::default())).await;
    let v: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries_of(&tree()), "oldLeafId": "d", "targetId": "e"}),
        )
        .await
        .json()
        .await
        .unwrap();
    let entry = &v["entry"];
    assert_eq!(
        keys(entry),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "fromId",
            "summary",
            "details",
            "usage"
        ]
    );
    assert_eq!(entry["usage"]["totalTokens"], 103);
    assert_eq!(entry["usage"]["cost"]["total"], 0);
}

/// A model server that answers the summary and fails (500) every short-summary call, or
/// every call when `short_only` is false.
async fn failing_model(short_only: bool) -> wiremock::MockServer {
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    // compactd's short-summary prompt quotes the summary in <summary> tags.
    let failing = Mock::given(method("POST"));
    let failing = if short_only {
        failing.and(body_string_contains("</summary>"))
    } else {
        failing
    };
    failing
        .respond_with(ResponseTemplate::new(500))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(crate::upstreams::completion(CHECKPOINT)),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn after_the_extractive_fallback_the_short_summary_is_derived_with_no_more_calls() {
    let server = failing_model(false).await;
    let llm = crate::upstreams::config(vec![crate::upstreams::openai("local", &server)]);
    let app = crate::helpers::spawn_app_with(move |c| c.llm = llm).await;
    let v: Value = app
        .post_json("/v1/summarize", &json!({"prompt": prompt()}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["summarizer"], "extractive", "{v}");
    let short = v["shortSummary"].as_str().unwrap();
    assert!(
        short.starts_with("The session is about: \"Add a --verbose flag"),
        "{short}"
    );
    let calls = server.received_requests().await.unwrap();
    assert!(
        calls
            .iter()
            .all(|r| !String::from_utf8_lossy(&r.body).contains("</summary>")),
        "no short call after the fallback"
    );
}

#[tokio::test]
async fn a_failed_short_call_leaves_the_derived_short_summary() {
    let server = failing_model(true).await;
    let llm = crate::upstreams::config(vec![crate::upstreams::openai("local", &server)]);
    let app = crate::helpers::spawn_app_with(move |c| c.llm = llm).await;
    let v: Value = app
        .post_json("/v1/summarize", &json!({"prompt": prompt()}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["summarizer"], "llm", "{v}");
    assert_eq!(v["summary"], CHECKPOINT);
    // The model's goal leads, the conversation gives the last request.
    let short = v["shortSummary"].as_str().unwrap();
    assert!(
        short.starts_with("The session is about: \"Add a --verbose flag to src/cli.rs\", most recently \"Now document the flag in README.md\""),
        "{short}"
    );
}
