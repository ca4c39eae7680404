use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use compactd::compaction::ledger::PINNED_HEADING;
use compactd::summarize::Summarize;
use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy};
use compactd::summarize::{RequestKind, Summary, SummaryRequest, Usage};
use serde_json::{json, Value};

use crate::helpers::{
    entries_of, fixture, problem, small_session, spawn_app, spawn_app_with_summarizer,
};

#[tokio::test]
async fn compacts_a_real_session_with_the_extractive_summarizer() {
    let app = spawn_app().await;
    let res = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=20000",
            fixture("before-compaction.jsonl"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["firstKeptEntryId"], "da33d933");
    assert_eq!(body["tokensBefore"], 180820);
    assert_eq!(body["isSplitTurn"], true);
    assert_eq!(body["summarizer"], "extractive");
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.contains("## Goal"), "{summary}");
    assert!(summary.contains("**Turn Context (split turn):**"));
    // The file lists close the summary, followed only by the pinned items the summary
    // did not carry (errors whose output the serialized conversation cuts off).
    let files_end = summary.rfind("</modified-files>").unwrap() + "</modified-files>".len();
    let tail = summary[files_end..].trim_start();
    assert!(
        tail.is_empty() || tail.starts_with(PINNED_HEADING),
        "{tail}"
    );
    assert!(body["madeProgress"].as_bool().unwrap());
    assert!(body["tokensAfter"].as_u64().unwrap() < 180820);
    let entry = &body["entry"];
    assert_eq!(entry["type"], "compaction");
    assert_eq!(entry["summary"], body["summary"]);
    assert_eq!(entry["firstKeptEntryId"], "da33d933");
    assert_eq!(entry["tokensBefore"], 180820);
    assert_eq!(entry["details"], body["details"]);
    // The leaf of a v1 file is its last line, whose deterministic id the answer uses.
    let last = entries_of(&fixture("before-compaction.jsonl")).len() - 1;
    assert_eq!(entry["parentId"].as_str().unwrap().len(), 8, "{last}");
    assert!(entry["timestamp"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn nothing_to_compact_is_409() {
    let app = spawn_app().await;
    let p = problem(
        app.post_jsonl("/v1/compact", small_session()).await,
        409,
        "nothing-to-compact",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("tokensBefore"));
}

#[tokio::test]
async fn dry_run_answers_like_prepare() {
    let app = spawn_app().await;
    let a: Value = app
        .post_jsonl(
            "/v1/compact?dryRun=true&keepRecentTokens=100",
            small_session(),
        )
        .await
        .json()
        .await
        .unwrap();
    let b: Value = app
        .post_jsonl("/v1/prepare?keepRecentTokens=100", small_session())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(a, b);
}

#[tokio::test]
async fn remote_endpoint_contract_on_both_paths() {
    let app = spawn_app().await;
    let body = json!({"systemPrompt": "", "prompt": "<conversation>\n[User]: fix src/main.rs please\n\n[Assistant]: done\n</conversation>\n\nSummarize."});
    for path in ["/v1/summarize", "/v1/compact"] {
        let res = app.post_json(path, &body).await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
        let v: Value = res.json().await.unwrap();
        assert!(
            v["summary"].as_str().unwrap().contains("src/main.rs"),
            "{v}"
        );
        assert_eq!(v["summarizer"], "extractive");
        assert!(v["usage"]["totalTokens"].is_u64());
        assert!(v["model"].is_string());
    }
    let p = problem(
        app.post_json("/v1/summarize", &json!({"prompt": " "}))
            .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/prompt");
    let p = problem(
        app.post_json("/v1/summarize", &json!({"systemPrompt": "x"}))
            .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/prompt");
}

#[tokio::test]
async fn preserve_data_and_short_summary() {
    let app = spawn_app().await;
    let mut entries = entries_of(&small_session());
    entries.remove(0);
    let body: Value = app
        .post_json(
            "/v1/compact",
            &json!({"entries": entries, "settings": {"keepRecentTokens": 100}, "preserveData": {"k": [1, 2]}, "shortSummary": true, "reason": "manual"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["preserveData"], json!({"k": [1, 2]}));
    assert_eq!(body["entry"]["preserveData"], json!({"k": [1, 2]}));
    assert_eq!(body["entry"]["parentId"], "e020");
    assert!(!body["shortSummary"].as_str().unwrap().is_empty());
    assert_eq!(
        body["calls"], 3,
        "history, turn prefix, short summary: {body}"
    );
}

#[tokio::test]
async fn config_shows_settings_and_summarizer() {
    let app = spawn_app().await;
    let v: Value = app.get("/v1/config").await.json().await.unwrap();
    assert_eq!(v["keepRecentTokens"], 20000);
    assert!(v["summarizer"].is_object(), "{v}");
}

/// A summarizer that records what it is asked and checks requests fit its window.
struct Recorder {
    window: Option<u64>,
    calls: AtomicU32,
    /// Kind of each request and whether it merged into a previous summary.
    prompts: Mutex<Vec<(RequestKind, bool)>>,
    in_flight: AtomicU32,
    max_in_flight: AtomicU32,
}

impl Recorder {
    fn new(window: Option<u64>) -> Arc<Self> {
        Arc::new(Recorder {
            window,
            calls: AtomicU32::new(0),
            prompts: Mutex::new(Vec::new()),
            in_flight: AtomicU32::new(0),
            max_in_flight: AtomicU32::new(0),
        })
    }
}

impl Summarize for Recorder {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(n, Ordering::SeqCst);
            if let Some(w) = self.window {
                let units = |s: &str| s.encode_utf16().count().div_ceil(4) as u64;
                let tokens = units(&req.system_prompt) + units(&req.prompt) + req.max_tokens;
                assert!(
                    tokens <= w,
                    "a request of {tokens} tokens exceeds the window of {w}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.prompts
                .lock()
                .unwrap()
                .push((req.kind, req.prompt.contains("<previous-summary>")));
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(Summary {
                usage: Usage {
                    input: 10,
                    output: 5,
                    total_tokens: 15,
                    ..Usage::default()
                },
                ..crate::helpers::llm_summary(&format!("summary {call}"), "test/recorder")
            })
        })
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        self.window
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "recorder"})
    }
}

#[tokio::test]
async fn split_turn_summaries_run_concurrently_and_usage_is_summed() {
    let rec = Recorder::new(None);
    let app = spawn_app_with_summarizer(rec.clone()).await;
    let body: Value = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=20000",
            fixture("before-compaction.jsonl"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["isSplitTurn"], true);
    assert_eq!(
        rec.max_in_flight.load(Ordering::SeqCst),
        2,
        "history and prefix in flight together"
    );
    assert_eq!(body["usage"]["totalTokens"], 30);
    assert_eq!(body["summarizer"], "llm");
    assert_eq!(body["model"], "test/recorder");
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.starts_with("summary "));
    assert!(summary.contains("\n\n---\n\n**Turn Context (split turn):**\n\nsummary "));
}

#[tokio::test]
async fn a_session_larger_than_the_window_is_summarized_in_chunks() {
    // before-compaction's history is ~345 KB of text; a 30k-token window needs several passes.
    let rec = Recorder::new(Some(30_000));
    let app = spawn_app_with_summarizer(rec.clone()).await;
    let res = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=20000&reserveTokens=4000",
            fixture("before-compaction.jsonl"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    let chunks = body["chunks"].as_u64().unwrap();
    assert!(chunks >= 3, "{body}");
    assert_eq!(
        body["calls"].as_u64().unwrap(),
        chunks + 1,
        "history passes + turn prefix"
    );
    // Every pass folds into the previous summary (this session already has one).
    let prompts = rec.prompts.lock().unwrap().clone();
    let history: Vec<_> = prompts
        .iter()
        .filter(|(k, _)| *k == RequestKind::History)
        .collect();
    assert_eq!(history.len() as u64, chunks);
    assert!(history.iter().all(|(_, merged)| *merged));
    assert!(body["madeProgress"].as_bool().unwrap());
}

/// Windows by strategy: Mixture-of-Agents is answered by models with smaller windows than
/// the default model's.
struct MoaWindows;

impl Summarize for MoaWindows {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            Ok(crate::helpers::llm_summary("summary", "test/moa-windows"))
        })
    }

    fn context_window(&self, _model: Option<&str>, strategy: Option<Strategy>) -> Option<u64> {
        Some(match strategy {
            Some(Strategy::Moa) => 30_000,
            _ => 1_000_000,
        })
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "moa-windows"})
    }
}

#[tokio::test]
async fn the_announced_chunks_are_planned_for_the_window_of_the_requested_strategy() {
    let app = spawn_app_with_summarizer(Arc::new(MoaWindows)).await;
    let res = app
        .client
        .post(format!(
            "{}/v1/compact?keepRecentTokens=20000&reserveTokens=4000&strategy=moa",
            app.address
        ))
        .header("content-type", "application/x-ndjson")
        .header("accept", "text/event-stream")
        .body(fixture("before-compaction.jsonl"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let items = crate::sse::Reader::new(res).all().await;
    let event = |name: &str| items.iter().find(|i| i.name() == name).unwrap().json();
    let (prepared, result) = (event("prepared"), event("result"));
    let chunks = result["chunks"].as_u64().unwrap();
    assert!(chunks >= 3, "{result}");
    assert_eq!(prepared["chunks"].as_u64().unwrap(), chunks, "{prepared}");
}
