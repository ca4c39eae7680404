//! What the agent reads is the state in force, through the whole service: a request taken
//! back leaves the summary, a statement the kept messages replace is not stated as current
//! (nor restored), a scope sentence standing alone keeps its instruction when room is
//! tight, and an instruction deep in a long message survives its quote.

use serde_json::Value;

use crate::helpers::{spawn_app, SessionWriter, TestApp};

/// Long, plain assistant prose: nothing to pin.
fn filler(n: usize) -> String {
    format!("Step {n}: reading through the importer module and its helpers. ").repeat(30)
}

async fn compact(app: &TestApp, query: &str, session: &SessionWriter) -> Value {
    let res = app
        .post_jsonl(&format!("/v1/compact?{query}"), session.text())
        .await;
    assert_eq!(res.status().as_u16(), 200);
    res.json().await.unwrap()
}

#[tokio::test]
async fn a_request_taken_back_leaves_the_summary_and_stays_in_the_ledger() {
    let app = spawn_app().await;
    let mut s = SessionWriter::new();
    s.user("Never push to main.");
    s.assistant("Noted.");
    s.user("Port the ingest service to Go, module by module.");
    s.assistant(&filler(0));
    s.user("Forget what I said, we keep Python; tighten the retry loop instead.");
    s.assistant(&filler(1));
    for n in 2..8 {
        s.user(&format!("Continue with part {n} of the retry work."));
        s.assistant(&filler(n));
    }
    let body = compact(&app, "keepRecentTokens=600", &s).await;
    let summary = body["summary"].as_str().unwrap();
    assert!(
        !summary.contains("Port the ingest service to Go"),
        "{summary}"
    );
    assert!(summary.contains("Never push to main."), "{summary}");
    assert!(summary.contains("tighten the retry loop"), "{summary}");
    // Still in details, with what withdrew it.
    let items = body["details"]["pinned"]["items"].as_array().unwrap();
    let ported = items
        .iter()
        .find(|i| {
            i["text"]
                .as_str()
                .unwrap()
                .contains("Port the ingest service")
        })
        .expect("the withdrawn request stays in details");
    assert_eq!(ported["status"], "superseded");
    assert!(ported["supersededBy"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Forget what I said"));
}

#[tokio::test]
async fn what_the_kept_messages_replace_is_not_stated_as_current() {
    let app = spawn_app().await;
    let mut s = SessionWriter::new();
    s.user("HARD CONSTRAINT: Report every time in UTC.");
    s.assistant("Noted.");
    for n in 0..6 {
        s.user(&format!("Continue with part {n} of the dashboard."));
        s.assistant(&filler(n));
    }
    s.user("For the status page, show clocks in Pacific Time.");
    s.assistant("Will do.");
    s.user("Continue with the charts.");
    s.assistant("Working on the charts.");
    let body = compact(&app, "keepRecentTokens=100", &s).await;
    let summary = body["summary"].as_str().unwrap();
    assert!(!summary.contains("Report every time in UTC"), "{summary}");
    // Not restored either, and the entry's ledger still holds it for the next round, where
    // the kept messages are summarized and replace it there.
    assert!(!summary.contains("Pinned (restored verbatim)"), "{summary}");
    let items = body["entry"]["details"]["pinned"]["items"].to_string();
    assert!(items.contains("Report every time in UTC"), "{items}");
}

#[tokio::test]
async fn a_scope_sentence_keeps_its_instruction_in_a_tight_split_turn() {
    let app = spawn_app().await;
    let mut s = SessionWriter::new();
    s.user(&format!(
        "Until I say otherwise.\nKeep all generated SQL in the migrations folder.\n\n{}",
        "Here is the background on the schema we inherited and why it looks the way it does. "
            .repeat(20)
    ));
    for n in 0..14 {
        s.assistant(&filler(n));
    }
    let body = compact(&app, "keepRecentTokens=400", &s).await;
    assert_eq!(body["isSplitTurn"], true, "{body}");
    let summary = body["summary"].as_str().unwrap();
    assert!(
        summary.contains("Keep all generated SQL in the migrations folder."),
        "{summary}"
    );
    let items = body["details"]["pinned"]["items"].to_string();
    assert!(
        items.contains("Until I say otherwise. Keep all generated SQL in the migrations folder."),
        "the scope and its instruction are one item: {items}"
    );
}

#[tokio::test]
async fn an_instruction_deep_in_a_long_message_survives_its_quote() {
    let app = spawn_app().await;
    let mut s = SessionWriter::new();
    s.user("Set up the importer project.");
    s.assistant("Done.");
    s.user(&format!(
        "Next, the CSV side. {}Whatever you do, never drop rows with an empty amount.",
        "The partner files arrive nightly with a header row and mixed line endings. ".repeat(12)
    ));
    s.assistant(&filler(0));
    for n in 1..8 {
        s.user(&format!("Continue with part {n} of the importer."));
        s.assistant(&filler(n));
    }
    let body = compact(&app, "keepRecentTokens=600", &s).await;
    let summary = body["summary"].as_str().unwrap();
    // The request is quoted with its instruction, not cut after its first characters.
    let quoted = summary
        .lines()
        .find(|l| l.contains("Next, the CSV side."))
        .unwrap_or_else(|| panic!("the request is quoted: {summary}"));
    assert!(
        quoted.contains("never drop rows with an empty amount"),
        "{quoted}"
    );
    assert_eq!(
        body["retention"]["reinserted"], 0,
        "the summary said it itself: {body}"
    );
}

/// The history summary of a split turn states what the history laid down, and the turn
/// prefix's own statements stay with the prefix: the ledger the extractive summarizer is
/// handed is the history's, not the whole compaction's.
#[tokio::test]
async fn a_split_turns_history_states_only_the_historys_statements() {
    let app = spawn_app().await;
    let mut s = SessionWriter::new();
    s.user("Set up the ledger service. Never push directly to the release branch.");
    for n in 0..4 {
        s.assistant(&filler(n));
    }
    s.user("Refactor the parser next. Always run the fuzzers before you commit.");
    for n in 4..18 {
        s.assistant(&filler(n));
    }
    let body = compact(&app, "keepRecentTokens=400", &s).await;
    assert_eq!(body["isSplitTurn"], true, "{body}");
    let summary = body["summary"].as_str().unwrap();
    let (history, prefix) = summary
        .split_once("**Turn Context (split turn):**")
        .unwrap_or_else(|| panic!("a split-turn summary: {summary}"));
    assert!(
        history.contains("Never push directly to the release branch."),
        "{history}"
    );
    assert!(
        !history.contains("Always run the fuzzers before you commit."),
        "the prefix's rule is not the history's: {history}"
    );
    assert!(
        prefix.contains("Always run the fuzzers before you commit."),
        "{prefix}"
    );
    assert_eq!(body["retention"]["reinserted"], 0, "{body}");
}
