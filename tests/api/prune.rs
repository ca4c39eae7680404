//! `POST /v1/prune` (the command line's `compactd prune` is in `prune_cli.rs`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::helpers::{entries_of, fixture, problem, spawn_app};

/// One tool call and its result.
pub(crate) struct Result_ {
    tool: &'static str,
    chars: usize,
}

pub(crate) fn r(tool: &'static str, chars: usize) -> Result_ {
    Result_ { tool, chars }
}

/// A v3 session: a user message, then per result an assistant tool call and the
/// result (with fields compactd does not interpret), ids `a{n}` / `t{n}`.
/// `compaction_kept`: a compaction entry after everything, keeping from result n, then
/// one more small exchange.
pub(crate) fn session(results: &[Result_], compaction_kept: Option<usize>) -> String {
    let mut lines = vec![
        r#"{"type":"session","version":3,"id":"sess-p","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/repo"}"#.to_string(),
        r#"{"type":"message","id":"u0","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"work"}}"#.to_string(),
    ];
    let mut parent = "u0".to_string();
    for (n, res) in results.iter().enumerate() {
        lines.push(format!(
            r#"{{"type":"message","id":"a{n}","parentId":"{parent}","timestamp":"2026-01-01T00:01:00.000Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c{n}","name":"{}","arguments":{{"n":{n}}}}}],"stopReason":"toolUse"}}}}"#,
            res.tool
        ));
        lines.push(format!(
            r#"{{"type":"message","id":"t{n}","parentId":"a{n}","timestamp":"2026-01-01T00:02:00.000Z","message":{{"role":"toolResult","toolCallId":"c{n}","toolName":"{}","content":[{{"type":"text","text":"{}"}}],"details":{{"exitCode":0,"ratio":1.50}},"isError":false,"timestamp":1767225720000}},"x-client":{{"keep":[1,"two"]}}}}"#,
            res.tool,
            "y".repeat(res.chars)
        ));
        parent = format!("t{n}");
    }
    if let Some(k) = compaction_kept {
        lines.push(format!(
            r#"{{"type":"compaction","id":"cmp","parentId":"{parent}","timestamp":"2026-01-01T00:03:00.000Z","summary":"earlier work","firstKeptEntryId":"a{k}","tokensBefore":99999}}"#
        ));
        lines.push(r#"{"type":"message","id":"u1","parentId":"cmp","timestamp":"2026-01-01T00:04:00.000Z","message":{"role":"user","content":"more"}}"#.to_string());
    }
    lines.join("\n") + "\n"
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn ids(body: &Value) -> Vec<&str> {
    body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect()
}

pub(crate) fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// The answer without the run's timestamp, to compare two runs.
fn without_pruned_at(mut body: Value) -> Value {
    for e in body["entries"].as_array_mut().unwrap() {
        e["message"].as_object_mut().unwrap().remove("prunedAt");
    }
    body
}

#[tokio::test]
async fn prunes_old_tool_outputs_with_the_defaults() {
    let app = spawn_app().await;
    // Eight results of 10000 tokens: the newest four fill protectTokens (40000).
    let text = session(&(0..8).map(|_| r("bash", 40_000)).collect::<Vec<_>>(), None);
    let before = now_ms();
    let res = app.post_jsonl("/v1/prune", text.clone()).await;
    let after = now_ms();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["prunedCount"], 4);
    // 4 × (10000 − ceil(33 / 4)).
    assert_eq!(body["tokensSaved"], 4 * (10_000 - 9));
    assert_eq!(ids(&body), ["t0", "t1", "t2", "t3"]);
    // Header 0, user 1, then a0 t0 a1 t1 …
    assert_eq!(body["entryIndexes"], json!([3, 5, 7, 9]));

    let originals = entries_of(&text);
    let mut stamps = Vec::new();
    for (e, &i) in body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .zip([3usize, 5, 7, 9].iter())
    {
        let orig = &originals[i];
        assert_eq!(keys(e), keys(orig), "entry keys keep their order");
        for k in ["type", "id", "parentId", "timestamp", "x-client"] {
            assert_eq!(e[k], orig[k], "{k}");
        }
        let (m, om) = (&e["message"], &orig["message"]);
        assert_eq!(
            keys(m),
            [
                "role",
                "toolCallId",
                "toolName",
                "content",
                "details",
                "isError",
                "timestamp",
                "prunedAt"
            ]
        );
        for k in [
            "role",
            "toolCallId",
            "toolName",
            "details",
            "isError",
            "timestamp",
        ] {
            assert_eq!(m[k], om[k], "message {k}");
        }
        assert_eq!(
            m["content"],
            json!([{"type": "text", "text": "[Output truncated - 10000 tokens]"}])
        );
        let at = m["prunedAt"].as_u64().unwrap();
        assert!(before <= at && at <= after, "{before} <= {at} <= {after}");
        stamps.push(at);
    }
    stamps.dedup();
    assert_eq!(stamps.len(), 1, "one timestamp for the whole run");
}

#[tokio::test]
async fn nothing_changes_below_the_minimum_savings() {
    let app = spawn_app().await;
    // Six results: t0 and t1 are candidates, saving 2 × 9991 = 19982 < 20000.
    let text = session(&(0..6).map(|_| r("bash", 40_000)).collect::<Vec<_>>(), None);
    let body: Value = app
        .post_jsonl("/v1/prune", text.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        body,
        json!({"prunedCount": 0, "tokensSaved": 0, "entries": [], "entryIndexes": []})
    );
    // Exactly at the minimum it prunes.
    let body: Value = app
        .post_json(
            "/v1/prune",
            &json!({"entries": entries_of(&text), "minimumSavings": 19982}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["prunedCount"], 2);
    assert_eq!(body["tokensSaved"], 19982);
    let body: Value = app
        .post_json(
            "/v1/prune",
            &json!({"entries": entries_of(&text), "minimumSavings": 19983}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["prunedCount"], 0);
}

#[tokio::test]
async fn protected_tools_and_small_results_are_untouched() {
    let app = spawn_app().await;
    let text = session(
        &[
            r("read", 8_000),
            r("skill", 8_000),
            r("bash", 196), // 49 tokens
            r("bash", 200), // 50 tokens
            r("edit", 8_000),
            r("bash", 8_000), // the newest: inside protectTokens
        ],
        None,
    );
    let opts = json!({"entries": entries_of(&text), "protectTokens": 1, "minimumSavings": 0});
    let body: Value = app
        .post_json("/v1/prune", &opts)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        ids(&body),
        ["t3", "t4"],
        "read, skill and the 49-token result stay"
    );
    assert_eq!(
        body["entries"][0]["message"]["content"][0]["text"],
        "[Output truncated - 50 tokens]"
    );
    assert_eq!(body["tokensSaved"], (50 - 8) + (2000 - 8));

    let mut opts = opts;
    opts["protectedTools"] = json!(["edit"]);
    let body: Value = app
        .post_json("/v1/prune", &opts)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&body), ["t0", "t1", "t3"]);
    opts["protectedTools"] = json!([]);
    let body: Value = app
        .post_json("/v1/prune", &opts)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&body), ["t0", "t1", "t3", "t4"]);
}

#[tokio::test]
async fn results_before_the_compactions_kept_boundary_are_untouched() {
    let app = spawn_app().await;
    let text = session(
        &(0..6).map(|_| r("bash", 8_000)).collect::<Vec<_>>(),
        Some(3),
    );
    let body: Value = app
        .post_jsonl("/v1/prune?protectTokens=1&minimumSavings=0", text.clone())
        .await
        .json()
        .await
        .unwrap();
    // t0..t2 lie before a3, the kept boundary; t5 is the newest (protected window).
    assert_eq!(ids(&body), ["t3", "t4"]);
    // A kept id that is not on the path: no boundary (oh-my-pi's resolveBoundaryIndex).
    let text = text.replace(
        "\"firstKeptEntryId\":\"a3\"",
        "\"firstKeptEntryId\":\"gone\"",
    );
    let body: Value = app
        .post_jsonl("/v1/prune?protectTokens=1&minimumSavings=0", text)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&body), ["t0", "t1", "t2", "t3", "t4"]);
}

#[tokio::test]
async fn options_in_the_query_string_match_the_json_body() {
    let app = spawn_app().await;
    let text = session(
        &[
            r("read", 8_000),
            r("skill", 8_000),
            r("bash", 8_000),
            r("edit", 8_000),
            r("bash", 8_000),
        ],
        None,
    );
    let q: Value = app
        .post_jsonl(
            "/v1/prune?protectTokens=2000&minimumSavings=100&protectedTools=bash,%20skill",
            text.clone(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&q), ["t0", "t3"]);
    let j: Value = app
        .post_json(
            "/v1/prune",
            &json!({"entries": entries_of(&text), "protectTokens": 2000, "minimumSavings": 100,
                    "protectedTools": ["bash", "skill"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(without_pruned_at(q), without_pruned_at(j));
    // An empty list protects nothing; leafId prunes another path (up to t3).
    let q: Value = app
        .post_jsonl(
            "/v1/prune?protectTokens=2000&minimumSavings=100&protectedTools=&leafId=t3",
            text.clone(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&q), ["t0", "t1", "t2"]);
    // A bad number is a 400.
    problem(
        app.post_jsonl("/v1/prune?protectTokens=lots", text).await,
        400,
        "invalid-parameter",
    )
    .await;
}

#[tokio::test]
async fn the_spec_describes_prune() {
    let app = spawn_app().await;
    let spec: Value = app.get("/openapi.json").await.json().await.unwrap();
    let op = &spec["paths"]["/v1/prune"]["post"];
    assert!(op.is_object(), "/v1/prune missing");
    let params: Vec<&str> = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        params,
        [
            "leafId",
            "protectTokens",
            "minimumSavings",
            "protectedTools"
        ]
    );
    let schema = &spec["components"]["schemas"]["PruneResponse"]["properties"];
    for field in ["prunedCount", "tokensSaved", "entries", "entryIndexes"] {
        assert!(schema.get(field).is_some(), "{field}");
    }
    let request = &spec["components"]["schemas"]["PruneRequest"]["properties"];
    for field in ["protectTokens", "minimumSavings", "protectedTools"] {
        assert!(request.get(field).is_some(), "{field}");
    }
}

#[tokio::test]
async fn unknown_leaf_is_422() {
    let app = spawn_app().await;
    let text = session(&[r("bash", 8_000)], None);
    let p = problem(
        app.post_jsonl("/v1/prune?leafId=nope", text.clone()).await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "leafId");
    let p = problem(
        app.post_json(
            "/v1/prune",
            &json!({"entries": entries_of(&text), "leafId": "nope"}),
        )
        .await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["pointer"], "/leafId");
}

#[tokio::test]
async fn prunes_the_real_sessions() {
    let app = spawn_app().await;
    for name in ["before-compaction.jsonl", "large-session.jsonl"] {
        let text = fixture(name);
        let lines = entries_of(&text);
        // The defaults find too little to save in these sessions.
        let body: Value = app
            .post_jsonl("/v1/prune", text.clone())
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(body["prunedCount"], 0, "{name}");

        let body: Value = app
            .post_jsonl(
                "/v1/prune?protectTokens=1000&minimumSavings=0",
                text.clone(),
            )
            .await
            .json()
            .await
            .unwrap();
        let count = body["prunedCount"].as_u64().unwrap() as usize;
        assert!(count > 10, "{name}: {count}");
        let entries = body["entries"].as_array().unwrap();
        let indexes = body["entryIndexes"].as_array().unwrap();
        assert_eq!(entries.len(), count);
        assert_eq!(indexes.len(), count);
        let mut saved = 0;
        for (e, i) in entries.iter().zip(indexes) {
            // v1 files: the answer carries the migrated ids, appended.
            let orig = &lines[i.as_u64().unwrap() as usize];
            assert!(orig.get("id").is_none());
            let mut k = keys(orig);
            k.extend(["id", "parentId"]);
            assert_eq!(keys(e), k);
            assert_eq!(e["id"].as_str().unwrap().len(), 8);
            assert_eq!(e["type"], orig["type"]);
            assert_eq!(e["timestamp"], orig["timestamp"]);
            let (m, om) = (&e["message"], &orig["message"]);
            assert_eq!(m["role"], "toolResult");
            assert!(!["read", "skill"].contains(&m["toolName"].as_str().unwrap()));
            let mut mk = keys(om);
            mk.push("prunedAt");
            assert_eq!(keys(m), mk);
            for (key, v) in om.as_object().unwrap() {
                if key != "content" {
                    assert_eq!(&m[key], v, "{name}: message.{key}");
                }
            }
            let text = m["content"][0]["text"].as_str().unwrap();
            let tokens: u64 = text
                .strip_prefix("[Output truncated - ")
                .and_then(|t| t.strip_suffix(" tokens]"))
                .unwrap()
                .parse()
                .unwrap();
            assert!(tokens >= 50);
            saved += tokens - (text.len() as u64).div_ceil(4);
        }
        assert_eq!(body["tokensSaved"], saved, "{name}");
        // Ids chain: every changed entry's parent is the entry before it in the file
        // (v1 files are linear), so ids are consistent with prepare's.
        let prep: Value = app
            .post_jsonl(
                "/v1/prepare?keepRecentTokens=1&messages=false",
                text.clone(),
            )
            .await
            .json()
            .await
            .unwrap();
        assert!(prep["summarizedEntryIds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| *id == entries[0]["id"]));

        // The same file as a JSON body answers the same.
        let j: Value = app
            .post_json(
                "/v1/prune",
                &json!({"entries": lines, "protectTokens": 1000, "minimumSavings": 0}),
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(without_pruned_at(j), without_pruned_at(body));
    }
}
