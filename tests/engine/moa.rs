//! Mixture-of-Agents in the engine, against fake model servers (`tests/support/moa.rs`):
//! the proposers are in flight together, the aggregator reads every surviving draft,
//! failures degrade as documented, usage is summed, the cache keys on the strategy, and
//! `single` is unchanged.

use compactd::config::{FallbackPolicy, MoaConfig, ModelConfig, Strategy};
use compactd::summarize::llm::Engine;
use compactd::summarize::{
    Mode, Silent, Summarize, SummarizeError, SummarizerKind, SummaryRequest,
};

use crate::helpers::{engine, named, request, EXTRACTIVE_TEXT};
use crate::moa_fakes::{text, FakeModel, Gate, Reply};
use crate::upstreams::config;

fn moa_engine(
    models: Vec<ModelConfig>,
    proposers: &[&str],
    aggregator: &str,
    default: Strategy,
) -> Engine {
    let mut llm = config(models);
    llm.moa = Some(MoaConfig {
        proposers: proposers.iter().map(|p| p.to_string()).collect(),
        aggregator: aggregator.into(),
        strategy: default,
    });
    engine(&llm)
}

fn moa_request(prompt: &str) -> SummaryRequest {
    SummaryRequest {
        strategy: Some(Strategy::Moa),
        ..request(prompt)
    }
}

const PROMPT: &str =
    "<conversation>\n[User]: fix the parser\n</conversation>\n\nWrite ## Goal and ## Next Steps.";

#[tokio::test]
async fn proposers_draft_together_and_the_aggregator_reads_every_draft() {
    let gate = Gate::new(3);
    let a = FakeModel::start(
        text("draft A: parser.rs"),
        Reply::Status(400),
        Some(gate.clone()),
    )
    .await;
    let b = FakeModel::start(
        text("draft B: lexer.rs"),
        Reply::Status(400),
        Some(gate.clone()),
    )
    .await;
    let c = FakeModel::start(
        text("draft C: tests"),
        Reply::Status(400),
        Some(gate.clone()),
    )
    .await;
    let agg = FakeModel::start(Reply::Status(400), text("## Goal\nmerged"), None).await;
    let engine = moa_engine(
        vec![
            a.config("a"),
            b.config("b"),
            c.config("c"),
            agg.config("agg"),
        ],
        &["a", "b", "c"],
        "agg",
        Strategy::Single,
    );
    let s = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(
        !gate.missed(),
        "a proposer answered before the others had been asked"
    );
    assert_eq!(s.text, "## Goal\nmerged");
    assert_eq!(s.model, "moa(a,b,c→agg)");
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    let report = s.moa.unwrap();
    assert_eq!(report.proposers, ["a", "b", "c"]);
    assert!(report.failed.is_empty() && report.draft.is_none());
    assert_eq!(report.aggregator.as_deref(), Some("agg"));
    // Three drafts and one aggregation, 100 in / 10 out each.
    assert_eq!(
        (s.usage.input, s.usage.output, s.usage.total_tokens),
        (400, 40, 440)
    );
    // Each proposer got the request itself; the aggregator every draft and the format.
    for p in [&a, &b, &c] {
        assert_eq!(p.proposals(), [PROMPT]);
    }
    let aggregations = agg.aggregations();
    assert_eq!(aggregations.len(), 1);
    let prompt = &aggregations[0];
    for d in ["draft A: parser.rs", "draft B: lexer.rs", "draft C: tests"] {
        assert!(prompt.contains(d), "{d} missing from {prompt}");
    }
    assert!(
        prompt.contains("Write ## Goal and ## Next Steps."),
        "{prompt}"
    );
    assert_eq!(agg.bodies()[0]["messages"][0]["content"], "You summarize.");
}

#[tokio::test]
async fn a_failing_proposer_is_left_out() {
    let gate = Gate::new(3);
    let a = FakeModel::start(text("draft A"), Reply::Status(400), Some(gate.clone())).await;
    let b = FakeModel::start(Reply::Status(400), Reply::Status(400), Some(gate.clone())).await;
    let c = FakeModel::start(text("draft C"), text("merged A+C"), Some(gate.clone())).await;
    let engine = moa_engine(
        vec![a.config("a"), b.config("b"), c.config("c")],
        &["a", "b", "c"],
        "c",
        Strategy::Single,
    );
    let s = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(!gate.missed());
    assert_eq!(s.text, "merged A+C");
    assert_eq!(s.model, "moa(a,c→c)");
    let report = s.moa.unwrap();
    assert_eq!(
        (report.proposers, report.failed),
        (vec!["a".to_string(), "c".into()], vec!["b".to_string()])
    );
    let prompt = &c.aggregations()[0];
    assert!(
        prompt.contains("draft A") && prompt.contains("draft C"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("<draft n=\"3\">"),
        "only two drafts: {prompt}"
    );
    // Two drafts and the aggregation (a 400 reports no usage).
    assert_eq!(s.usage.input, 300);
}

#[tokio::test]
async fn a_failing_aggregator_answers_the_longest_draft_within_budget() {
    // Budget 512 tokens = 2048 characters: the 3000-character draft is over it.
    let long = "x".repeat(3000);
    let a = FakeModel::start(text("short draft"), Reply::Status(400), None).await;
    let b = FakeModel::start(text(&long), Reply::Status(400), None).await;
    let c = FakeModel::start(
        text("the longer draft within budget"),
        Reply::Status(400),
        None,
    )
    .await;
    let agg = FakeModel::start(Reply::Status(400), Reply::Status(400), None).await;
    let engine = moa_engine(
        vec![
            a.config("a"),
            b.config("b"),
            c.config("c"),
            agg.config("agg"),
        ],
        &["a", "b", "c"],
        "agg",
        Strategy::Single,
    );
    let s = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.text, "the longer draft within budget");
    assert_eq!(s.model, "moa(a,b,c)");
    let report = s.moa.unwrap();
    assert_eq!(report.aggregator, None);
    assert_eq!(report.draft.as_deref(), Some("c"));
    assert_eq!(agg.aggregations().len(), 1, "the aggregator was asked");
    // A best draft is not cached: the next call asks again.
    let again = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(!again.cached);
    assert_eq!(agg.aggregations().len(), 2);
}

#[tokio::test]
async fn every_proposer_failing_takes_the_usual_fallback() {
    let a = FakeModel::start(Reply::Status(400), text("unused"), None).await;
    let b = FakeModel::start(Reply::Status(400), text("unused"), None).await;
    let engine = moa_engine(
        vec![a.config("a"), b.config("b")],
        &["a", "b"],
        "b",
        Strategy::Single,
    );
    let s = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(
        (s.text.as_str(), s.summarizer),
        (EXTRACTIVE_TEXT, SummarizerKind::Extractive)
    );
    assert!(s.moa.is_none());
    assert!(b.aggregations().is_empty(), "no draft, no aggregation");
    match engine
        .summarize(&moa_request(PROMPT), Mode::ModelOnly, &Silent)
        .await
    {
        Err(SummarizeError::Failed(m)) => {
            assert!(m.contains("a/a-model") && m.contains("b/b-model"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    let mut llm = config(vec![a.config("a"), b.config("b")]);
    llm.fallback = FallbackPolicy::None;
    llm.moa = Some(MoaConfig {
        proposers: vec!["a".into(), "b".into()],
        aggregator: "a".into(),
        strategy: Strategy::Moa,
    });
    let strict = crate::helpers::engine(&llm);
    assert!(matches!(
        strict
            .summarize(&request(PROMPT), Mode::WithFallback, &Silent)
            .await,
        Err(SummarizeError::Upstream(_))
    ));
}

#[tokio::test]
async fn single_is_unchanged_and_the_cache_keys_on_the_strategy() {
    let a = FakeModel::start(text("draft A"), text("merged"), None).await;
    let b = FakeModel::start(text("draft B"), text("merged by b"), None).await;
    let engine = moa_engine(
        vec![a.config("a"), b.config("b")],
        &["a", "b"],
        "b",
        Strategy::Single,
    );
    // The default strategy is single: the first candidate alone, as before.
    let s = engine
        .summarize(&request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(
        (s.text.as_str(), s.model.as_str()),
        ("draft A", "a/a-model")
    );
    assert!(s.moa.is_none());
    assert!(b.bodies().is_empty());
    // moa on the same request is not served from the single answer's cache entry.
    let m = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!((m.text.as_str(), m.cached), ("merged by b", false));
    // Asked again: from the cache, no upstream call.
    let calls = a.bodies().len() + b.bodies().len();
    let hit = engine
        .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(hit.cached);
    assert_eq!(hit.moa, m.moa);
    assert_eq!(a.bodies().len() + b.bodies().len(), calls);
}

#[tokio::test]
async fn the_configured_default_applies_unless_the_request_says_otherwise() {
    let a = FakeModel::start(text("draft A"), text("merged"), None).await;
    let small = ModelConfig {
        context_window: 8_000,
        ..a.config("small")
    };
    let engine = moa_engine(
        vec![a.config("a"), small.clone()],
        &["a"],
        "small",
        Strategy::Moa,
    );
    // Chunking budgets for the smallest MoA model; a named model for its own window.
    assert_eq!(engine.context_window(None, None), Some(8_000));
    assert_eq!(engine.context_window(Some("a"), None), Some(64_000));
    assert_eq!(
        engine.context_window(None, Some(Strategy::Single)),
        Some(64_000)
    );
    let single_default = moa_engine(
        vec![a.config("a"), small.clone()],
        &["a"],
        "small",
        Strategy::Single,
    );
    assert_eq!(single_default.context_window(None, None), Some(64_000));
    // A request asking for MoA on a `single` default is budgeted for the MoA models.
    assert_eq!(
        single_default.context_window(None, Some(Strategy::Moa)),
        Some(8_000)
    );
    let s = engine
        .summarize(&request(PROMPT), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.model, "moa(a→small)");
    // A request naming a model gets that model alone; `single` says so explicitly.
    let named = engine
        .summarize(
            &named(request("other prompt"), Some("a")),
            Mode::WithFallback,
            &Silent,
        )
        .await
        .unwrap();
    assert_eq!(named.model, "a/a-model");
    let single = SummaryRequest {
        strategy: Some(Strategy::Single),
        ..request("third")
    };
    assert_eq!(
        engine
            .summarize(&single, Mode::WithFallback, &Silent)
            .await
            .unwrap()
            .model,
        "a/a-model"
    );
}

#[tokio::test]
async fn moa_without_a_moa_table_is_refused() {
    let a = FakeModel::start(text("draft A"), text("merged"), None).await;
    let engine = engine(&config(vec![a.config("a")]));
    assert_eq!(
        engine
            .summarize(&moa_request(PROMPT), Mode::WithFallback, &Silent)
            .await,
        Err(SummarizeError::NoMoa)
    );
    assert_eq!(
        engine
            .summarize(&moa_request(PROMPT), Mode::ModelOnly, &Silent)
            .await,
        Err(SummarizeError::NoMoa)
    );
    assert!(a.bodies().is_empty());
}
