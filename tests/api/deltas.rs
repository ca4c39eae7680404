//! `delta` events through the real server: a model that streams its answer
//! (`tests/support/streaming.rs`, paced) shows its output tokens as `delta` events
//! between `summarizing` and `result`, on an event stream and in a job's events; the
//! result is the plain answer; a stalled stream shows as a `retry` and is counted; a
//! client that disconnects closes the upstream stream.

use std::sync::atomic::Ordering;
use std::time::Duration;

use compactd::config::{Config, ModelConfig, ModelKind};
use serde_json::Value;

use crate::helpers::{small_session, spawn_app_with, TestApp};
use crate::model_servers::{serve, OpenAiServer, Served};
use crate::sse::{names, Item, Reader};
use crate::upstreams::{config, KEY};

const URL: &str = "/v1/compact?keepRecentTokens=1";

fn local(served: &Served, configure: impl FnOnce(&mut ModelConfig)) -> ModelConfig {
    let mut c = ModelConfig {
        name: "local".into(),
        kind: ModelKind::Openai,
        model: "m".into(),
        base_url: format!("{}/v1", served.uri),
        context_window: 64_000,
        api_key: Some(KEY.into()),
        options: Default::default(),
    };
    configure(&mut c);
    c
}

/// A model writing a longer answer, one event every `pace`.
async fn paced(pace: Duration) -> Served {
    let mut model = OpenAiServer::new(200_000);
    model.answer = "## Goal\n".to_string() + &"Fix the parser. ".repeat(4);
    model.stream.pace = pace;
    serve(model).await
}

async fn app(c: ModelConfig, configure: impl FnOnce(&mut Config)) -> TestApp {
    let llm = config(vec![c]);
    spawn_app_with(move |cfg| {
        cfg.llm = llm;
        configure(cfg);
    })
    .await
}

async fn compact_events(app: &TestApp) -> Reader {
    let res = app
        .client
        .post(format!("{}{URL}", app.address))
        .header("content-type", "application/x-ndjson")
        .header("accept", "text/event-stream")
        .body(small_session())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    Reader::new(res)
}

/// The compaction's answer without what is fresh on every call.
fn without_fresh(mut v: Value) -> Value {
    let entry = v["entry"].as_object_mut().unwrap();
    entry.remove("id");
    entry.remove("timestamp");
    v
}

/// `prepared`, then for each part (the small session is a split turn: `history` and
/// `turnPrefix`, summarized concurrently) its `summarizing`, then its `delta`s counting
/// up to the server's count, all before `result`.
fn assert_deltas_between(items: &[Item]) {
    let names = names(items);
    assert_eq!(names.first(), Some(&"prepared"), "{names:?}");
    assert_eq!(names.last(), Some(&"result"), "{names:?}");
    assert_eq!(names.iter().filter(|n| **n == "result").count(), 1);
    for part in ["history", "turnPrefix"] {
        let of_part: Vec<(usize, &Item)> = items
            .iter()
            .enumerate()
            .filter(|(_, i)| {
                matches!(i, Item::Event { .. }) && i.name() != "result" && i.json()["part"] == part
            })
            .collect();
        assert_eq!(of_part[0].1.name(), "summarizing", "{part}: {items:?}");
        let deltas: Vec<Value> = of_part[1..]
            .iter()
            .map(|(_, i)| {
                assert_eq!(i.name(), "delta", "{part}: {items:?}");
                i.json()
            })
            .collect();
        assert!(
            deltas.len() >= 2,
            "the first count and the server's: {deltas:?}"
        );
        for d in &deltas {
            assert_eq!(d["model"], "local/m", "{d}");
            assert_eq!(d["attempt"], 1, "{d}");
            assert!(d["outputTokens"].as_u64().unwrap() > 0, "{d}");
        }
        let last = deltas.last().unwrap();
        assert_eq!(last["outputTokens"], 20, "the server's count: {last}");
        assert_eq!(last["estimated"], false);
        assert!(deltas[..deltas.len() - 1]
            .iter()
            .all(|d| d["estimated"] == true));
    }
}

#[tokio::test]
async fn deltas_come_between_summarizing_and_the_plain_answer() {
    let served = paced(Duration::from_millis(15)).await;
    let streaming = app(local(&served, |_| {}), |_| {}).await;
    let items = compact_events(&streaming).await.all().await;
    assert_deltas_between(&items);
    // The plain answer of a server asked not to stream (another app: no shared cache).
    let plain = app(local(&served, |c| c.options.stream = Some(false)), |_| {}).await;
    let answer: Value = plain
        .post_jsonl(URL, small_session())
        .await
        .json()
        .await
        .unwrap();
    let streamed = items.last().unwrap().json();
    assert_eq!(without_fresh(streamed), without_fresh(answer));
    // Two calls each (history and turn prefix): streamed, then plain.
    let streams: Vec<Value> = served
        .bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| b["stream"].clone())
        .collect();
    assert_eq!(streams, [true, true, false, false]);
}

#[tokio::test]
async fn a_jobs_events_hold_the_deltas() {
    let served = paced(Duration::from_millis(15)).await;
    let app = app(local(&served, |_| {}), |_| {}).await;
    let res = app
        .client
        .post(format!("{}{URL}", app.address))
        .header("content-type", "application/x-ndjson")
        .header("prefer", "respond-async")
        .body(small_session())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 202);
    let location = res.headers()["location"].to_str().unwrap().to_string();
    let res = app
        .client
        .get(format!("{}{location}/events", app.address))
        .send()
        .await
        .unwrap();
    let items = Reader::new(res).all().await;
    assert_deltas_between(&items);
    assert_eq!(
        items.last().unwrap().json()["summary"]
            .as_str()
            .unwrap()
            .lines()
            .next(),
        Some("## Goal")
    );
}

#[tokio::test]
async fn a_stalled_stream_is_a_retry_event_and_a_metric() {
    let model = OpenAiServer::new(200_000);
    model.stream.stalls.store(1, Ordering::SeqCst);
    let served = serve(model).await;
    let app = app(local(&served, |_| {}), |c| {
        c.llm.stall = Duration::from_millis(300);
    })
    .await;
    let items = compact_events(&app).await.all().await;
    // One of the two parts' first stream stalls; it is retried and answers.
    let names = names(&items);
    let retry = names.iter().position(|n| *n == "retry").expect("a retry");
    assert_eq!(names.iter().filter(|n| **n == "retry").count(), 1);
    assert_eq!(names.last(), Some(&"result"));
    let r = items[retry].json();
    assert_eq!(r["reason"], "stalled: the stream sent nothing for 300 ms");
    let part = r["part"].clone();
    let attempts: Vec<u64> = items[..items.len() - 1]
        .iter()
        .filter(|i| i.name() == "summarizing" && i.json()["part"] == part)
        .map(|i| i.json()["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2]);
    assert!(items[..retry]
        .iter()
        .any(|i| i.name() == "delta" && i.json()["part"] == part && i.json()["attempt"] == 1));
    assert_eq!(items.last().unwrap().json()["summarizer"], "llm");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("compactd_upstream_stalls_total{model=\"local\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_client_that_disconnects_closes_the_upstream_stream() {
    // 300 ms between events: the stream is far from its end at the first delta.
    let served = paced(Duration::from_millis(300)).await;
    let app = app(local(&served, |_| {}), |_| {}).await;
    let mut events = compact_events(&app).await;
    loop {
        match events.next().await {
            Some(item) if item.name() == "delta" => break,
            Some(_) => {}
            None => panic!("the stream ended before a delta"),
        }
    }
    assert_eq!(served.abandoned.load(Ordering::SeqCst), 0);
    drop(events);
    // Both parts' streams (history and turnPrefix) are closed.
    for _ in 0..500 {
        let requests = served.requests.load(Ordering::SeqCst);
        if requests > 0 && served.abandoned.load(Ordering::SeqCst) == requests {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the upstream streams were not closed: {} of {}",
        served.abandoned.load(Ordering::SeqCst),
        served.requests.load(Ordering::SeqCst)
    );
}
