//! `POST /v1/recall` and `compactd recall`: what a compaction took out of the context is
//! found again, by identifier or by a few words of a request, and nothing outside the
//! scope is answered.

use serde_json::{json, Value};

use crate::helpers::{cli_json, entries_of, problem, spawn_app, SessionWriter, TestApp};

async fn recall(app: &TestApp, query: &str, jsonl: String) -> Value {
    let res = app.post_jsonl(&format!("/v1/recall?{query}"), jsonl).await;
    assert_eq!(res.status().as_u16(), 200);
    res.json().await.unwrap()
}

fn ids(answer: &Value) -> Vec<&str> {
    answer["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["entryId"].as_str().unwrap())
        .collect()
}

fn filler(n: usize) -> String {
    format!("Step {n}: reading through the importer module and its helpers. ").repeat(20)
}

/// A session whose older part mentions `src/vault_client.rs`, compacted, then more work.
fn compacted_session(app_entry: Option<&Value>) -> (SessionWriter, String, String) {
    let mut s = SessionWriter::new();
    let old = s.user("The retry bug is in src/vault_client.rs, error VAULT-503 on renew.");
    s.assistant(&filler(0));
    let kept = s.user("Now look at the cache layer.");
    s.assistant(&format!("{} The cache is fine.", filler(1)));
    if let Some(entry) = app_entry {
        s.append_entry(entry);
    }
    (s, old, kept)
}

#[tokio::test]
async fn an_identifier_from_the_compacted_part_is_found_and_the_kept_part_is_not_searched() {
    let app = spawn_app().await;
    let (s, old, kept) = compacted_session(None);
    // No compaction yet: the part a compaction with these settings would summarize.
    let before = recall(&app, "q=src/vault_client.rs&keepRecentTokens=400", s.text()).await;
    assert_eq!(ids(&before), [old.as_str()], "{before:#}");
    assert_eq!(before["scope"], "compacted");
    assert_eq!(before["query"], "src/vault_client.rs");
    let m = &before["matches"][0];
    assert_eq!(m["role"], "user");
    assert_eq!(
        m["excerpt"],
        "The retry bug is in src/vault_client.rs, error VAULT-503 on renew."
    );
    assert!(m["score"].as_f64().unwrap() > 0.0);
    // A compaction that keeps from `kept`: the kept part is no longer in scope.
    let res = app
        .post_jsonl("/v1/compact?keepRecentTokens=400", s.text())
        .await;
    let compaction: Value = res.json().await.unwrap();
    let first_kept = compaction["firstKeptEntryId"].as_str().unwrap();
    assert!(first_kept <= kept.as_str(), "{compaction:#}");
    let (after, _, _) = compacted_session(Some(&compaction["entry"]));
    let cache = recall(&app, "q=cache+layer", after.text()).await;
    assert_eq!(ids(&cache), Vec::<&str>::new(), "{cache:#}");
    // The entries before the first kept one (ids m001, m002, … in order).
    let before_kept = first_kept[1..].parse::<u64>().unwrap() - 1;
    assert_eq!(cache["searched"], before_kept);
    let all = recall(&app, "q=cache+layer&scope=all", after.text()).await;
    assert_eq!(ids(&all)[0], kept.as_str(), "{all:#}");
    let code = recall(&app, "q=VAULT-503", after.text()).await;
    assert_eq!(ids(&code), [old.as_str()]);
}

#[tokio::test]
async fn a_json_body_and_the_command_line_answer_alike() {
    let app = spawn_app().await;
    let (s, old, _) = compacted_session(None);
    let body = json!({"entries": entries_of(&s.text()), "q": "VAULT-503", "limit": 2,
                      "settings": {"keepRecentTokens": 400}});
    let res = app.post_json("/v1/recall", &body).await;
    assert_eq!(res.status().as_u16(), 200);
    let answer: Value = res.json().await.unwrap();
    assert_eq!(ids(&answer), [old.as_str()]);
    let dir = std::env::temp_dir().join(format!("compactd-recall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.jsonl");
    std::fs::write(&file, s.text()).unwrap();
    let cli = cli_json(&[
        "recall",
        file.to_str().unwrap(),
        "--query",
        "VAULT-503",
        "--limit",
        "2",
        "--keep-recent-tokens",
        "400",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(cli, answer);
}

#[tokio::test]
async fn a_missing_query_or_a_limit_out_of_bounds_is_refused_with_its_pointer() {
    let app = spawn_app().await;
    let (s, _, _) = compacted_session(None);
    let p = problem(
        app.post_jsonl("/v1/recall", s.text()).await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "q", "{p:#}");
    let body = json!({"entries": entries_of(&s.text()), "q": "x", "limit": 0});
    let p = problem(
        app.post_json("/v1/recall", &body).await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/limit", "{p:#}");
    let p = problem(
        app.post_jsonl("/v1/recall?q=x&scope=everything", s.text())
            .await,
        400,
        "invalid-parameter",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("scope"), "{p:#}");
}
