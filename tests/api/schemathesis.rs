//! Regressions found by `scripts/schemathesis` (property-based tests from our OpenAPI
//! document): each test is one finding, kept so it stays fixed.

use std::sync::Arc;

use compactd::summarize::Summarize;
use compactd::summarize::SummaryRequest;
use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy};
use serde_json::{json, Value};

use crate::helpers::{
    entries_of, llm_summary, problem, small_session, spawn_app, spawn_app_with,
    spawn_app_with_summarizer,
};

/// `reserveTokens` near `u64::MAX` (the schema allows every u64) overflowed
/// `reserveTokens * 8 / 10`: a panic and a 500 in debug builds, a wrapped output budget in
/// release builds.
#[tokio::test]
async fn the_largest_reserve_tokens_is_a_budget_not_a_panic() {
    let app = spawn_app().await;
    let entries = entries_of(&small_session());
    for reserve in [u64::MAX, 1 << 63, u64::MAX / 8 + 1] {
        let body = json!({"entries": entries, "settings": {"keepRecentTokens": 1, "reserveTokens": reserve}});
        let res = app.post_json("/v1/prepare", &body).await;
        assert_eq!(res.status().as_u16(), 200, "reserveTokens {reserve}");
        let answer: Value = res.json().await.unwrap();
        let expected = (u128::from(reserve) * 8 / 10) as u64;
        assert_eq!(answer["requests"][0]["maxTokens"], expected, "{answer}");

        let res = app
            .post_jsonl(
                &format!("/v1/compact?keepRecentTokens=1&reserveTokens={reserve}"),
                small_session(),
            )
            .await;
        assert_eq!(res.status().as_u16(), 200, "reserveTokens {reserve}");
    }
    let res = app
        .post_json(
            "/v1/summarize",
            &json!({"prompt": "<conversation>\n[User]: hi\n</conversation>", "maxTokens": u64::MAX}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
}

/// A summarizer with a small context window, so compaction takes the chunking path,
/// where the request size `prompt + maxTokens` was summed without overflow checks.
struct Windowed;

impl Summarize for Windowed {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            Ok(llm_summary("a summary", "test/windowed"))
        })
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        Some(1000)
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "windowed"})
    }
}

#[tokio::test]
async fn the_largest_reserve_tokens_with_a_model_window_does_not_overflow() {
    let app = spawn_app_with_summarizer(Arc::new(Windowed)).await;
    let res = app
        .post_jsonl(
            &format!("/v1/compact?keepRecentTokens=1&reserveTokens={}", u64::MAX),
            small_session(),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "llm", "{body}");
    assert!(body["chunks"].as_u64().unwrap() >= 1, "{body}");
}

/// `contextWindow − reserveTokens` of a branch summary was computed in i64 from u64s:
/// an overflow panic (500) for reserveTokens ≥ 2^63.
#[tokio::test]
async fn branch_budget_of_extreme_windows_does_not_overflow() {
    let app = spawn_app().await;
    let entries = entries_of(&small_session());
    let old_leaf = entries.last().unwrap()["id"].clone();
    for (window, reserve) in [
        (0, u64::MAX),
        (u64::MAX, 0),
        (u64::MAX, u64::MAX),
        (0, 1 << 63),
    ] {
        let body = json!({
            "entries": entries, "oldLeafId": old_leaf, "targetId": "e002",
            "contextWindow": window, "reserveTokens": reserve
        });
        let res = app.post_json("/v1/branch-summary", &body).await;
        assert_eq!(
            res.status().as_u16(),
            200,
            "contextWindow {window}, reserveTokens {reserve}"
        );
    }
}

/// serde builds a struct from an array as well (`[20000, 16384]`); `settings` and the
/// remoteEndpoint body are objects, and the schema says so.
#[tokio::test]
async fn objects_sent_as_arrays_are_refused() {
    let app = spawn_app().await;
    let entries = entries_of(&small_session());
    let p = problem(
        app.post_json(
            "/v1/prepare",
            &json!({"entries": entries, "settings": [1, 2]}),
        )
        .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/settings", "{p}");
    // null is still "no settings".
    let res = app
        .post_json(
            "/v1/prepare",
            &json!({"entries": entries, "settings": null}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);

    let p = problem(
        app.post_json("/v1/summarize", &json!(["", "summarize this", null, null]))
            .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "", "{p}");
}

/// The spec must describe what the endpoints take and answer, or schema-driven clients
/// and fuzzers reject valid traffic.
#[tokio::test]
async fn the_spec_states_u64_bounds_and_every_answer_shape() {
    let app = spawn_app().await;
    let spec: Value = app.get("/openapi.json").await.json().await.unwrap();
    let reserve = spec["paths"]["/v1/prepare"]["post"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "reserveTokens")
        .unwrap()
        .clone();
    assert_eq!(reserve["schema"]["format"], "uint64", "{reserve}");
    assert_eq!(reserve["schema"]["maximum"], u64::MAX, "{reserve}");
    let schemas = &spec["components"]["schemas"];
    let any_of = |name: &str| -> Vec<String> {
        schemas[name]["anyOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} is anyOf"))
            .iter()
            .map(|r| {
                r["$ref"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(
        any_of("CompactAnswer"),
        ["CompactionResult", "SummarizeResponse", "PrepareResponse"]
    );
    assert_eq!(
        any_of("BranchAnswer"),
        ["BranchSummaryResult", "BranchDryRun"]
    );
    assert_eq!(
        any_of("CompactRequest"),
        ["SessionRequest", "SummarizeRequest"]
    );
    // Any JSON, as documented: not only objects.
    assert_eq!(
        schemas["SessionRequest"]["properties"]["preserveData"].get("type"),
        None
    );
}

/// The spec says which routes need a token (and documents the guard's 401/503/504):
/// with keys configured, exactly the routes it marks open answer without one.
#[tokio::test]
async fn the_spec_marks_exactly_the_open_routes() {
    let app = spawn_app_with(|c| {
        c.api_keys = compactd::config::ClientKeys::new(["k-123456"]);
    })
    .await;
    let spec: Value = app
        .client
        .get(format!("{}/openapi.json", app.address))
        .bearer_auth("k-123456")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(spec["security"], json!([{"bearer": []}]));
    let mut open = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let is_open = operation.get("security") == Some(&json!([{}]));
            let responses = &operation["responses"];
            if is_open {
                open.push(path.clone());
            } else {
                for status in ["401", "503", "504"] {
                    assert!(
                        responses.get(status).is_some(),
                        "{method} {path}: no {status}"
                    );
                }
            }
            let req = if method == "get" {
                app.client.get(format!("{}{path}", app.address))
            } else {
                app.client
                    .post(format!("{}{path}", app.address))
                    .header("content-type", "application/json")
                    .body("{}")
            };
            let status = req.send().await.unwrap().status().as_u16();
            if is_open {
                assert_eq!(status, 200, "{method} {path} is open in the spec");
            } else {
                assert_eq!(status, 401, "{method} {path} needs a token in the spec");
            }
        }
    }
    assert_eq!(open, ["/healthz", "/readyz"]);
}
