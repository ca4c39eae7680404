//! Checked compaction through the API: a model that drops everything still
//! leaves every pinned item in the summary, `retention` counts right, the ledger travels
//! in `details.pinned` from round to round, a split turn after a compaction keeps the
//! previous summary (D6), `pin: false` turns it all off, and `madeProgress` needs a real
//! saving.

use std::sync::{Arc, Mutex};

use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy};
use compactd::summarize::{RequestKind, Summarize, SummaryRequest};
use serde_json::{json, Value};

use crate::helpers::{entries_of, spawn_app_custom, spawn_app_with_summarizer, SessionWriter};

const HEADING: &str = "## Pinned (restored verbatim)";

/// A model that keeps nothing: every answer is the same sentence (the turn prefix gets
/// its own, so the split-turn test can tell them apart). It records the prompts.
struct DropAll {
    prompts: Mutex<Vec<(RequestKind, String)>>,
}

impl DropAll {
    fn new() -> Arc<Self> {
        Arc::new(DropAll {
            prompts: Mutex::new(Vec::new()),
        })
    }
}

impl Summarize for DropAll {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            self.prompts
                .lock()
                .unwrap()
                .push((req.kind, req.prompt.clone()));
            let text = match req.kind {
                RequestKind::TurnPrefix => "TURN-PREFIX: the agent kept working.",
                _ => "Work happened.",
            };
            Ok(crate::helpers::llm_summary(text, "test/drop-all"))
        })
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        None
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "drop-all"})
    }
}

/// Long, plain assistant prose: no rules, no decisions, nothing to pin.
fn filler(n: usize) -> String {
    format!("Step {n}: reading through the exporter module and its helpers. ").repeat(40)
}

/// Rules, a constraint with its value, and facts, early in the conversation; then
/// enough plain work that they fall into the history.
fn planted_session() -> SessionWriter {
    let mut s = SessionWriter::new();
    s.user("Build an invoice exporter for the billing service.");
    s.assistant("Sure, I will start with the exporter.");
    s.user("Budget cap is $500 total. Never exceed it.");
    s.assistant("Understood.");
    s.user("Never push to main.");
    s.assistant("Noted.");
    s.user("The staging API is https://staging.acme.io/v2 and the project is acme-billing.");
    s.assistant("Thanks.");
    for n in 0..8 {
        s.user(&format!("Continue with part {n} of the exporter."));
        s.assistant(&filler(n));
    }
    s
}

const PLANTED: [&str; 4] = [
    "$500",
    "Never push to main.",
    "https://staging.acme.io/v2",
    "acme-billing",
];

async fn compact(app: &crate::helpers::TestApp, query: &str, session: &str) -> Value {
    let res = app
        .post_jsonl(
            &format!("/v1/compact?keepRecentTokens=1000{query}"),
            session.to_string(),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    res.json().await.unwrap()
}

fn assert_counts_add_up(retention: &Value) {
    let n = |k: &str| retention[k].as_u64().unwrap();
    let left = retention["leftOut"].as_array().unwrap().len() as u64;
    assert_eq!(
        n("pinned"),
        n("present") + n("reinserted") + left,
        "{retention}"
    );
}

#[tokio::test]
async fn a_model_that_drops_everything_still_carries_every_pinned_item() {
    let app = spawn_app_with_summarizer(DropAll::new()).await;
    let body = compact(&app, "", &planted_session().text()).await;
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.starts_with("Work happened."), "{summary}");
    assert!(summary.contains(HEADING), "{summary}");
    for item in PLANTED {
        assert!(summary.contains(item), "{item} missing from {summary}");
    }
    let retention = &body["retention"];
    assert_counts_add_up(retention);
    assert!(retention["pinned"].as_u64().unwrap() >= 4, "{retention}");
    assert_eq!(
        retention["present"], 0,
        "the model kept nothing: {retention}"
    );
    assert_eq!(retention["reinserted"], retention["pinned"]);
    assert_eq!(retention["leftOut"], json!([]));
    // The ledger is in the answer's details and in the entry to append.
    let pinned = &body["entry"]["details"]["pinned"];
    assert_eq!(pinned["version"], 1);
    let items = pinned["items"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["text"] == "Never push to main."),
        "{pinned}"
    );
    assert_eq!(&body["details"]["pinned"], pinned);
    assert!(body["details"]["readFiles"].is_array());
    // The same in a JSON body.
    let json_body: Value = app
        .post_json(
            "/v1/compact",
            &json!({"entries": entries_of(&planted_session().text()), "keepRecentTokens": 1000}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(json_body["retention"], body["retention"]);
    // Metrics count the outcomes.
    let metrics = app.get("/metrics").await.text().await.unwrap();
    for outcome in ["pinned", "present", "reinserted", "left_out"] {
        let series = format!("compactd_pinned_items_total{{outcome=\"{outcome}\"}}");
        assert!(metrics.contains(&series), "{series} missing");
    }
}

#[tokio::test]
async fn pinned_items_survive_a_second_round_through_details_pinned() {
    let app = spawn_app_with_summarizer(DropAll::new()).await;
    let mut session = planted_session();
    let first = compact(&app, "", &session.text()).await;
    let first_items = first["entry"]["details"]["pinned"]["items"]
        .as_array()
        .unwrap()
        .clone();
    // Round two: the compaction entry appended as pi stores it, then more work, so the
    // planted messages are no longer part of what is summarized.
    session.append_entry(&first["entry"]);
    for n in 10..20 {
        session.user(&format!("Continue with part {n} of the exporter."));
        session.assistant(&filler(n));
    }
    let second = compact(&app, "", &session.text()).await;
    let summary = second["summary"].as_str().unwrap();
    for item in ["$500", "Never push to main.", "https://staging.acme.io/v2"] {
        assert!(
            summary.contains(item),
            "{item} lost in round two: {summary}"
        );
    }
    assert_counts_add_up(&second["retention"]);
    let second_items = second["entry"]["details"]["pinned"]["items"]
        .as_array()
        .unwrap();
    for item in &first_items {
        let again = second_items
            .iter()
            .find(|i| i["id"] == item["id"])
            .unwrap_or_else(|| panic!("round one's {item} is gone from round two"));
        assert_eq!(again["text"], item["text"]);
    }
}

#[tokio::test]
async fn the_ledger_survives_a_round_pi_compacted_by_itself() {
    // Round one is compactd's, stored as pi stores an extension's entry (`fromHook`).
    let app = spawn_app_with_summarizer(DropAll::new()).await;
    let mut session = planted_session();
    let first = compact(&app, "", &session.text()).await;
    let mut entry = first["entry"].clone();
    entry["fromHook"] = json!(true);
    assert_eq!(entry["details"]["producer"], "compactd");
    session.append_entry(&entry);
    // Then a new standing instruction, and pi compacts by itself (compactd was down): its
    // entry has file lists and no ledger, and its cut leaves the instruction behind.
    session.user("From now on, run the linter before every commit.");
    session.assistant("Will do.");
    for n in 10..14 {
        session.user(&format!("Continue with part {n} of the exporter."));
        session.assistant(&filler(n));
    }
    let kept = session.user("Continue with part 14 of the exporter.");
    session.assistant(&filler(14));
    let parent = session.parent.clone();
    session.append_entry(
        &json!({"type": "compaction", "id": "pi-own", "parentId": parent,
        "timestamp": "2026-01-01T02:00:00.000Z", "summary": "PI-OWN-SUMMARY: exporter work.",
        "firstKeptEntryId": kept, "tokensBefore": 9000,
        "details": {"readFiles": [], "modifiedFiles": []}}),
    );
    for n in 15..25 {
        session.user(&format!("Continue with part {n} of the exporter."));
        session.assistant(&filler(n));
    }
    // Round three is compactd's again: round one's ledger, and the instruction pi's round
    // summarized, are both in force.
    let third = compact(&app, "", &session.text()).await;
    let summary = third["summary"].as_str().unwrap();
    for item in [
        "$500",
        "Never push to main.",
        "run the linter before every commit",
    ] {
        assert!(summary.contains(item), "{item} lost: {summary}");
    }
    let items = third["entry"]["details"]["pinned"]["items"].to_string();
    assert!(
        items.contains("run the linter before every commit"),
        "{items}"
    );
}

#[tokio::test]
async fn a_split_turn_after_a_compaction_keeps_the_previous_summary() {
    // m1–m2 were compacted (kept from m3); the turn from m3 then ran long, so the next
    // cut splits it with nothing before the turn left to summarize.
    let mut s = SessionWriter::new();
    s.user("Set up the project.");
    s.assistant("Done.");
    let turn = s.user("Refactor the exporter, file by file.");
    s.assistant(&filler(0));
    let parent = s.parent.clone();
    s.append_entry(&json!({"type": "compaction", "id": "c001", "parentId": parent,
        "timestamp": "2026-01-01T01:00:00.000Z",
        "summary": "PREVIOUS-SUMMARY: the project uses Rust 1.80 and the exporter writes CSV.\n\n<read-files>\nsrc/old.rs\n</read-files>",
        "firstKeptEntryId": turn, "tokensBefore": 5000, "details": {"readFiles": ["src/old.rs"], "modifiedFiles": []}}));
    for n in 1..12 {
        s.assistant(&filler(n));
    }
    let drop_all = DropAll::new();
    let app = spawn_app_with_summarizer(drop_all.clone()).await;
    let body = compact(&app, "", &s.text()).await;
    assert_eq!(body["isSplitTurn"], true, "{body}");
    let summary = body["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("PREVIOUS-SUMMARY: the project uses Rust 1.80"),
        "{summary}"
    );
    assert!(!summary.contains("No prior history."), "{summary}");
    assert!(summary.contains("**Turn Context (split turn):**\n\nTURN-PREFIX"));
    // The previous file list is restated once, from details, not carried twice.
    assert_eq!(summary.matches("<read-files>").count(), 1, "{summary}");
    // Only the turn prefix needed a call.
    assert_eq!(body["calls"], 1);
    let prompts = drop_all.prompts.lock().unwrap();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].0, RequestKind::TurnPrefix);
}

#[tokio::test]
async fn pin_false_turns_checking_off() {
    let app = spawn_app_with_summarizer(DropAll::new()).await;
    let session = planted_session().text();
    for body in [
        compact(&app, "&pin=false", &session).await,
        app.post_json(
            "/v1/compact",
            &json!({"entries": entries_of(&session), "keepRecentTokens": 1000, "pin": false}),
        )
        .await
        .json()
        .await
        .unwrap(),
    ] {
        assert!(body.get("retention").is_none(), "{body}");
        let summary = body["summary"].as_str().unwrap();
        assert!(!summary.contains(HEADING), "{summary}");
        assert!(!summary.contains("Never push to main."), "{summary}");
        assert!(body["entry"]["details"].get("pinned").is_none(), "{body}");
    }
    // The setting turns it off by default; a request turns it back on.
    let app = spawn_app_custom(|c| c.pin = false, DropAll::new()).await;
    let off = compact(&app, "", &session).await;
    assert!(off.get("retention").is_none());
    let on = compact(&app, "&pin=true", &session).await;
    assert!(on["summary"].as_str().unwrap().contains(HEADING));
}

#[tokio::test]
async fn made_progress_needs_the_minimum_saving_and_says_why_not() {
    let session = planted_session().text();
    let app = spawn_app_with_summarizer(DropAll::new()).await;
    let made = compact(&app, "", &session).await;
    assert_eq!(made["madeProgress"], true, "{made}");
    assert!(made.get("progressReason").is_none());
    // The same compaction held to a 99 % saving is not progress, and says why.
    let strict = spawn_app_custom(|c| c.min_progress = 0.99, DropAll::new()).await;
    let body = compact(&strict, "", &session).await;
    let before = body["tokensBefore"].as_f64().unwrap();
    let after = body["tokensAfter"].as_f64().unwrap();
    assert!(after < before * 0.95, "a real saving of over 5 %: {body}");
    assert_eq!(body["madeProgress"], false, "{body}");
    let reason = body["progressReason"].as_str().unwrap();
    assert!(reason.contains("saves only"), "{reason}");
    assert!(reason.contains("99.0 %"), "{reason}");
}

#[tokio::test]
async fn branch_summaries_are_checked_too() {
    let mut s = planted_session();
    let old_leaf = s.assistant("All parts done.");
    let text = s.text();
    let app = spawn_app_with_summarizer(DropAll::new()).await;
    let body: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries_of(&text), "oldLeafId": old_leaf, "targetId": "m001"}),
        )
        .await
        .json()
        .await
        .unwrap();
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.contains(HEADING), "{summary}");
    assert!(summary.contains("Never push to main."), "{summary}");
    assert_counts_add_up(&body["retention"]);
    assert!(body["retention"]["reinserted"].as_u64().unwrap() >= 3);
    let off: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries_of(&text), "oldLeafId": old_leaf, "targetId": "m001", "pin": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(off.get("retention").is_none(), "{off}");
}

/// A model that repeats a credential it was shown.
struct Leaky;

const LEAKED: &str = "sk-proj-Q7vX2mN9pL4kR8sT1wY6zA3bC5dE0fG";

impl Summarize for Leaky {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        answer_plainly(req, mode, sink, async move {
            Ok(crate::helpers::llm_summary(
                &format!("The user set OPENAI_API_KEY={LEAKED} and asked for tests."),
                "test/leaky",
            ))
        })
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        None
    }

    fn describe(&self) -> Value {
        json!({"summarizer": "leaky"})
    }
}

#[tokio::test]
async fn no_answer_carries_a_secret_a_model_repeated() {
    let app = spawn_app_with_summarizer(Arc::new(Leaky)).await;
    let summarize = app
        .post_json("/v1/summarize", &json!({"prompt": "Summarize this."}))
        .await;
    assert_eq!(summarize.status().as_u16(), 200);
    let compact = app
        .post_jsonl(
            "/v1/compact?keepRecentTokens=1000&shortSummary=true",
            crate::helpers::small_session(),
        )
        .await;
    assert_eq!(compact.status().as_u16(), 200);
    for body in [
        summarize.text().await.unwrap(),
        compact.text().await.unwrap(),
    ] {
        assert!(!body.contains(LEAKED), "{body}");
        assert!(
            body.contains("OPENAI_API_KEY"),
            "the credential's name stays: {body}"
        );
    }
}

/// `targetTokens`: the compacted context (summary plus kept messages, as
/// `tokensAfter` counts it) fits the target, and the pinned items take what they need of
/// it, with a model that drops everything and with the extractive summarizer alike.
#[tokio::test]
async fn a_target_is_met_with_every_pinned_item() {
    let session = planted_session().text();
    let drop_all = spawn_app_with_summarizer(DropAll::new()).await;
    let extractive = crate::helpers::spawn_app().await;
    for app in [&drop_all, &extractive] {
        for target in [900u64, 1500, 3000] {
            let res = app
                .post_jsonl(
                    &format!("/v1/compact?targetTokens={target}"),
                    session.clone(),
                )
                .await;
            assert_eq!(res.status().as_u16(), 200);
            let body: Value = res.json().await.unwrap();
            let after = body["tokensAfter"].as_u64().unwrap();
            assert!(after <= target, "{target}: {after}");
            let summary = body["summary"].as_str().unwrap();
            for item in PLANTED {
                assert!(
                    summary.contains(item),
                    "{target}: {item} missing from {summary}"
                );
            }
            assert_eq!(body["retention"]["leftOut"], json!([]), "{target}");
        }
    }
    // A larger target keeps more of the conversation verbatim.
    let kept = |target: u64| {
        let session = session.clone();
        let app = &extractive;
        async move {
            let body: Value = app
                .post_jsonl(&format!("/v1/compact?targetTokens={target}"), session)
                .await
                .json()
                .await
                .unwrap();
            body["firstKeptEntryId"].as_str().unwrap().to_string()
        }
    };
    assert!(kept(3000).await < kept(900).await);
}

/// In a JSON body the target is a setting, like `keepRecentTokens`.
#[tokio::test]
async fn a_target_in_the_settings_of_a_json_body() {
    let app = crate::helpers::spawn_app().await;
    let session = planted_session().text();
    let entries: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let body: Value = app
        .post_json(
            "/v1/compact",
            &json!({"entries": entries, "settings": {"targetTokens": 1200}}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(body["tokensAfter"].as_u64().unwrap() <= 1200, "{body}");
}

/// A target of no tokens cannot be met: a precise 422, not a summary cut to nothing.
#[tokio::test]
async fn a_zero_target_is_refused() {
    let app = crate::helpers::spawn_app().await;
    let res = app
        .post_jsonl("/v1/compact?targetTokens=0", planted_session().text())
        .await;
    assert_eq!(res.status().as_u16(), 422);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["errors"][0]["pointer"], "/targetTokens", "{body}");
}

/// An assistant's explanation worth keeping word for word: no rule, nothing the ledger pins.
const EXPLANATION: &str = "The importer reads the CSV in 64 KiB chunks because the vendor's files reach 9 GB; the chunk size is tuned to the page cache.";

fn session_with_an_explanation() -> (SessionWriter, String) {
    let mut s = SessionWriter::new();
    s.user("Why is the importer so slow on the vendor files?");
    let id = s.assistant(EXPLANATION);
    for n in 0..8 {
        s.user(&format!("Continue with part {n} of the importer."));
        s.assistant(&format!(
            "Part {n}: {}",
            "Reading through the module. ".repeat(40)
        ));
    }
    (s, id)
}

#[tokio::test]
async fn a_pinned_entry_stays_verbatim_round_after_round_and_is_restored_when_dropped() {
    let drop_all = DropAll::new();
    let app = spawn_app_with_summarizer(drop_all.clone()).await;
    let (mut s, id) = session_with_an_explanation();
    let res = app
        .post_jsonl(
            &format!("/v1/compact?keepRecentTokens=300&pinEntries={id}"),
            s.text(),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let first: Value = res.json().await.unwrap();
    let summary = first["summary"].as_str().unwrap();
    // The model dropped it; the check restored it, verbatim, under its own heading.
    assert!(summary.starts_with("Work happened."), "{summary}");
    assert!(
        summary.contains(&format!("### Pinned entries\n- {EXPLANATION}")),
        "{summary}"
    );
    let item = first["details"]["pinned"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "entry")
        .expect("the pinned entry is in details");
    assert_eq!(item["text"], EXPLANATION);
    assert_eq!(item["origin"], "assistant");
    assert_eq!(item["sourceIds"], json!([id]));
    // Another round with a small keep window, no pinEntries this time: still there.
    s.append_entry(&first["entry"]);
    for n in 8..14 {
        s.user(&format!("Continue with part {n} of the importer."));
        s.assistant(&format!(
            "Part {n}: {}",
            "Reading through the module. ".repeat(40)
        ));
    }
    let res = app
        .post_jsonl("/v1/compact?keepRecentTokens=300", s.text())
        .await;
    let second: Value = res.json().await.unwrap();
    let summary = second["summary"].as_str().unwrap();
    assert_eq!(summary.matches(EXPLANATION).count(), 1, "{summary}");
}

#[tokio::test]
async fn the_extractive_summary_carries_a_pinned_entry_from_json_settings() {
    let app = crate::helpers::spawn_app().await;
    let (s, id) = session_with_an_explanation();
    let body = json!({"entries": entries_of(&s.text()),
                      "settings": {"keepRecentTokens": 300, "pinEntries": [id]}});
    let res = app.post_json("/v1/compact", &body).await;
    assert_eq!(res.status().as_u16(), 200);
    let answer: Value = res.json().await.unwrap();
    let summary = answer["summary"].as_str().unwrap();
    assert_eq!(summary.matches(EXPLANATION).count(), 1, "{summary}");
    assert_eq!(answer["retention"]["leftOut"], json!([]));
}

#[tokio::test]
async fn an_entry_that_cannot_be_pinned_is_refused_by_name() {
    let app = crate::helpers::spawn_app().await;
    let (s, _) = session_with_an_explanation();
    let p = crate::helpers::problem(
        app.post_jsonl(
            "/v1/compact?keepRecentTokens=300&pinEntries=nope-42",
            s.text(),
        )
        .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "pinEntries");
    assert!(p["detail"].as_str().unwrap().contains("nope-42"), "{p:#}");
    // Not on the path of the leaf asked for.
    let body = json!({"entries": entries_of(&s.text()), "leafId": "m012",
                      "keepRecentTokens": 300, "pinEntries": ["m001", "m016"]});
    let p = crate::helpers::problem(
        app.post_json("/v1/compact", &body).await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/pinEntries/1", "{p:#}");
}
