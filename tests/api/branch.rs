use serde_json::{json, Value};

use crate::helpers::{cli_json, entries_of, problem, spawn_app};

/// A tree: a → b (edit x.rs) → c → d abandoned; a → e is where the session goes back.
pub(crate) fn tree() -> String {
    [
        r#"{"type":"session","version":3,"id":"tree-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/r"}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"Start the refactor of src/app.rs"}}"#,
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Editing."},{"type":"toolCall","id":"t1","name":"edit","arguments":{"path":"src/x.rs","oldText":"a","newText":"b"}}]}}"#,
        r#"{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"edit","content":[{"type":"text","text":"ok"}],"isError":false}}"#,
        r#"{"type":"message","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"Actually try another approach"}}"#,
        r#"{"type":"message","id":"e","parentId":"a","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"user","content":"Different idea"}}"#,
    ]
    .join("\n")
        + "\n"
}

#[tokio::test]
async fn dry_run_shows_the_branch_and_the_request() {
    let app = spawn_app().await;
    let v: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries_of(&tree()), "oldLeafId": "d", "targetId": "e", "dryRun": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["fromId"], "d");
    assert_eq!(v["commonAncestorId"], "a");
    assert_eq!(v["entryIds"], json!(["b", "c", "d"]));
    assert_eq!(v["details"]["modifiedFiles"], json!(["src/x.rs"]));
    let conversation = v["conversation"].as_str().unwrap();
    assert!(
        conversation.starts_with("[Assistant]: Editing."),
        "{conversation}"
    );
    assert!(
        !conversation.contains("[Tool result]"),
        "tool results are skipped"
    );
    let requests = v["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["kind"], "branch");
    assert_eq!(requests[0]["maxTokens"], 2048);
    assert!(requests[0]["prompt"]
        .as_str()
        .unwrap()
        .starts_with(&format!(
            "<conversation>\n{conversation}\n</conversation>\n\n"
        )));
}

#[tokio::test]
async fn summarizes_and_returns_an_entry_to_append() {
    let app = spawn_app().await;
    let res = app
        .post_jsonl("/v1/branch-summary?oldLeafId=d&targetId=e", tree())
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let v: Value = res.json().await.unwrap();
    let summary = v["summary"].as_str().unwrap();
    assert!(summary.starts_with("The user explored"), "{summary}");
    assert!(
        summary.ends_with("<modified-files>\nsrc/x.rs\n</modified-files>"),
        "{summary}"
    );
    assert_eq!(v["entriesSummarized"], 2);
    assert_eq!(v["summarizer"], "extractive");
    let entry = &v["entry"];
    assert_eq!(entry["type"], "branch_summary");
    assert_eq!(entry["parentId"], "e");
    assert_eq!(entry["fromId"], "e");
    assert_eq!(entry["summary"], v["summary"]);
    assert_eq!(entry["details"], v["details"]);
}

#[tokio::test]
async fn nothing_left_behind_needs_no_model() {
    let app = spawn_app().await;
    // Going down from an ancestor abandons nothing.
    let v: Value = app
        .post_json(
            "/v1/branch-summary",
            &json!({"entries": entries_of(&tree()), "oldLeafId": "a", "targetId": "d"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["summary"], "No content to summarize");
    assert_eq!(v["model"], Value::Null);
    assert_eq!(v["entriesSummarized"], 0);
    let dry: Value = app
        .post_json("/v1/branch-summary", &json!({"entries": entries_of(&tree()), "oldLeafId": "a", "targetId": "d", "dryRun": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(dry["requests"], json!([]));
}

#[tokio::test]
async fn instructions_add_focus_or_replace_the_template() {
    let app = spawn_app().await;
    let ask = |replace: bool| {
        json!({"entries": entries_of(&tree()), "oldLeafId": "d", "targetId": "e", "dryRun": true,
               "customInstructions": "Only list the files.", "replaceInstructions": replace})
    };
    let focus: Value = app
        .post_json("/v1/branch-summary", &ask(false))
        .await
        .json()
        .await
        .unwrap();
    let prompt = focus["requests"][0]["prompt"].as_str().unwrap();
    assert!(prompt.ends_with("\n\nAdditional focus: Only list the files."));
    assert!(prompt.contains("## Goal"));
    let replaced: Value = app
        .post_json("/v1/branch-summary", &ask(true))
        .await
        .json()
        .await
        .unwrap();
    let prompt = replaced["requests"][0]["prompt"].as_str().unwrap();
    assert!(prompt.ends_with("</conversation>\n\nOnly list the files."));
}

#[tokio::test]
async fn unknown_or_missing_ids_are_422() {
    let app = spawn_app().await;
    let entries = entries_of(&tree());
    for (body, pointer) in [
        (
            json!({"entries": entries, "oldLeafId": "zz", "targetId": "e"}),
            "/oldLeafId",
        ),
        (
            json!({"entries": entries, "oldLeafId": "d", "targetId": "zz"}),
            "/targetId",
        ),
        (json!({"entries": entries, "targetId": "e"}), "/oldLeafId"),
    ] {
        let p = problem(
            app.post_json("/v1/branch-summary", &body).await,
            422,
            "invalid-session",
        )
        .await;
        assert_eq!(p["errors"][0]["pointer"], pointer);
    }
    let p = problem(
        app.post_jsonl("/v1/branch-summary?oldLeafId=d", tree())
            .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "targetId");
}

#[test]
fn cli_branch_summary_dry_run() {
    let dir = std::env::temp_dir().join(format!("compactd-branch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tree.jsonl");
    std::fs::write(&file, tree()).unwrap();
    let v = cli_json(&[
        "branch-summary",
        file.to_str().unwrap(),
        "--from",
        "d",
        "--to",
        "e",
        "--dry-run",
    ]);
    assert_eq!(v["entryIds"], json!(["b", "c", "d"]));
    let _ = std::fs::remove_dir_all(&dir);
}
