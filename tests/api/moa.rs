//! `strategy: "moa"` through the real server on every route family: pi's `/v1/compact`
//! (with `/v1/summarize`'s remoteEndpoint body and `/v1/branch-summary`), hermes's
//! `/v1/hermes/compress`, and the chat-completions facade. The engine's MoA rules are
//! tested in `tests/engine/moa.rs`.

use compactd::config::{MoaConfig, Strategy};
use serde_json::{json, Value};

use crate::helpers::{problem, small_session, spawn_app_with, TestApp};
use crate::moa_fakes::{text, FakeModel, Reply};
use crate::upstreams::config;

/// Proposers `a` and `b`; `b` also aggregates.
async fn moa_app() -> (TestApp, FakeModel, FakeModel) {
    let a = FakeModel::start(text("## Goal\nDraft from a"), Reply::Status(400), None).await;
    let b = FakeModel::start(
        text("## Goal\nDraft from b"),
        text("## Goal\nMerged summary"),
        None,
    )
    .await;
    let mut llm = config(vec![a.config("a"), b.config("b")]);
    llm.moa = Some(MoaConfig {
        proposers: vec!["a".into(), "b".into()],
        aggregator: "b".into(),
        strategy: Strategy::Single,
    });
    let app = spawn_app_with(move |c| c.llm = llm).await;
    (app, a, b)
}

fn assert_moa(body: &Value) {
    assert_eq!(body["model"], "moa(a,b→b)", "{body}");
    assert_eq!(
        body["moa"],
        json!({"proposers": ["a", "b"], "failed": [], "aggregator": "b"}),
        "{body}"
    );
}

#[tokio::test]
async fn pi_routes_honour_strategy_moa() {
    let (app, a, b) = moa_app().await;
    let res = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=1&strategy=moa",
            small_session(),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_moa(&body);
    assert!(
        body["summary"].as_str().unwrap().contains("Merged summary"),
        "{body}"
    );
    assert_eq!(body["summarizer"], "llm");
    let aggregations = b.aggregations();
    assert!(!aggregations.is_empty());
    for agg in &aggregations {
        assert!(
            agg.contains("Draft from a") && agg.contains("Draft from b"),
            "{agg}"
        );
    }
    // Every call of the compaction drafted at both proposers.
    assert_eq!(a.proposals().len(), aggregations.len());

    // The remoteEndpoint body takes it too; without it the answer is a single model's.
    let prompt = "<conversation>\n[User]: hi\n</conversation>\n\nSummarize.";
    let body: Value = app
        .post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "", "prompt": prompt, "strategy": "moa"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_moa(&body);
    assert_eq!(body["summary"], "## Goal\nMerged summary");
    let body: Value = app
        .post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "", "prompt": prompt}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["model"], "a/a-model", "{body}");
    assert!(body.get("moa").is_none(), "{body}");

    // /v1/branch-summary, JSON body.
    let entries = crate::helpers::entries_of(&crate::branch::tree());
    let body: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries, "oldLeafId": "d", "targetId": "e", "strategy": "moa"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_moa(&body);
    assert!(
        body["summary"].as_str().unwrap().contains("Merged summary"),
        "{body}"
    );

    // A strategy that does not exist is a precise 422.
    let p = problem(
        app.post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "", "prompt": prompt, "strategy": "vote"}),
        )
        .await,
        422,
        "invalid-session",
    )
    .await;
    assert!(p.to_string().contains("/strategy"), "{p}");
}

fn hermes_request(strategy: Option<&str>) -> Value {
    let mut m = vec![json!({"role": "system", "content": "You are a coding agent."})];
    for t in 0..12 {
        m.push(json!({"role": "user", "content": format!("Step {t}: fix src/mod{t}.rs")}));
        m.push(
            json!({"role": "assistant", "content": format!("Fixed src/mod{t}.rs. ").repeat(60)}),
        );
    }
    let mut body = json!({"messages": m, "contextLength": 8000, "today": "2026-01-15"});
    if let Some(s) = strategy {
        body["strategy"] = json!(s);
    }
    body
}

#[tokio::test]
async fn hermes_compress_honours_strategy_moa() {
    let (app, a, b) = moa_app().await;
    let res = app
        .post_json("/v1/hermes/compress", &hermes_request(Some("moa")))
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["compressed"], true, "{body}");
    assert_moa(&body);
    assert!(
        body["summary"].as_str().unwrap().contains("Merged summary"),
        "{body}"
    );
    // Two drafts and one aggregation, 100 in each.
    assert_eq!(body["usage"]["input"], 300, "{body}");
    assert_eq!((a.proposals().len(), b.aggregations().len()), (1, 1));

    // Without a [moa] table, asking for it is refused by name.
    let plain = spawn_app_with(|c| c.llm = config(vec![a.config("a")])).await;
    let p = problem(
        plain
            .post_json("/v1/hermes/compress", &hermes_request(Some("moa")))
            .await,
        422,
        "moa-not-configured",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("[moa]"), "{p}");
}

#[tokio::test]
async fn the_chat_completions_facade_honours_strategy_moa() {
    let (app, _a, b) = moa_app().await;
    let ask = |strategy: Option<&str>| {
        let mut body = json!({"model": "gpt-4o", "messages": [
            {"role": "user", "content": "<conversation>\n[User]: hi\n</conversation>\n\nSummarize."}]});
        if let Some(s) = strategy {
            body["strategy"] = json!(s);
        }
        body
    };
    let body: Value = app
        .post_json("/v1/chat/completions", &ask(Some("moa")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["model"], "moa(a,b→b)", "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "## Goal\nMerged summary"
    );
    assert_eq!(body["usage"]["prompt_tokens"], 300, "{body}");
    assert_eq!(
        body["moa"],
        json!({"proposers": ["a", "b"], "failed": [], "aggregator": "b"})
    );
    assert_eq!(b.aggregations().len(), 1);
    let body: Value = app
        .post_json("/v1/chat/completions", &ask(None))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["model"], "a/a-model", "{body}");
    assert!(body.get("moa").is_none(), "{body}");
}
