//! Input kept exactly, or refused precisely: header versions, lone surrogates, numbers
//! as sent, query options beside a JSON body, capped error lists.

use serde_json::{json, Value};

use crate::helpers::{problem, small_session, spawn_app};

/// `small_session` with its header's `version` spelled `version`.
fn with_version(version: &str) -> String {
    small_session().replacen("\"version\":3", &format!("\"version\":{version}"), 1)
}

#[tokio::test]
async fn a_version_that_is_not_an_integer_is_a_422_at_version() {
    let app = spawn_app().await;
    for bad in ["\"3\"", "2.5", "true", "{}"] {
        let res = app.post_jsonl("/v1/prepare", with_version(bad)).await;
        let p = problem(res, 422, "invalid-session").await;
        assert_eq!(p["errors"][0]["pointer"], "/version", "{bad}: {p}");
        assert_eq!(p["errors"][0]["line"], 1, "{bad}: {p}");
    }
    // In a JSON body the pointer names the header's place.
    let entries: Vec<Value> = with_version("\"3\"")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let res = app
        .post_json("/v1/prepare", &json!({ "entries": entries }))
        .await;
    let p = problem(res, 422, "invalid-session").await;
    assert_eq!(p["errors"][0]["pointer"], "/entries/0/version", "{p}");
    // An integer in any spelling keeps the ids as sent.
    for good in ["3", "3.0", "3e0"] {
        let res = app
            .post_jsonl("/v1/prepare?keepRecentTokens=200", with_version(good))
            .await;
        assert_eq!(res.status().as_u16(), 200, "{good}");
        let a: Value = res.json().await.unwrap();
        let kept = a["firstKeptEntryId"].as_str().unwrap();
        assert!(kept.starts_with('e'), "{good}: {kept}");
    }
}

#[tokio::test]
async fn a_v2_file_of_entries_without_ids_lists_the_first_few_and_a_count() {
    let app = spawn_app().await;
    let mut body = String::from("{\"type\":\"session\",\"version\":2,\"id\":\"s\"}\n");
    for i in 0..50_000 {
        body.push_str(&format!(
            "{{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"hi {i}\"}}}}\n"
        ));
    }
    let res = app.post_jsonl("/v1/prepare", body).await;
    assert_eq!(res.status().as_u16(), 422);
    let text = res.text().await.unwrap();
    assert!(text.len() < 8_000, "{} bytes", text.len());
    let p: Value = serde_json::from_str(&text).unwrap();
    let errors = p["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 21, "{p}");
    assert_eq!(errors[0]["line"], 2);
    let count = errors[20]["message"].as_str().unwrap();
    assert!(count.starts_with("49980 more entries"), "{count}");
}

/// A lone surrogate escape is valid JSON (`JSON.stringify("\ud800")` writes it): kept
/// escaped, one UTF-16 unit long, and echoed as sent.
#[tokio::test]
async fn lone_surrogates_are_accepted_counted_as_one_unit_and_echoed_as_sent() {
    let app = spawn_app().await;
    let user = r#"{"role":"user","content":[{"type":"text","text":"x\ud800y"},"\udc00"]}"#;
    let body = [
        r#"{"type":"session","version":3,"id":"s"}"#.to_string(),
        format!(r#"{{"type":"message","id":"a","parentId":null,"message":{user}}}"#),
        r#"{"type":"message","id":"b","parentId":"a","odd":"\udfff","message":{"role":"user","content":"\ud800\ud800\ud800\ud800\ud800"}}"#.to_string(),
        // An unknown entry type, whatever it holds.
        r#"{"type":"x\ud800","id":"n","parentId":"b"}"#.to_string(),
    ]
    .join("\n");
    let res = app
        .post_jsonl(
            "/v1/prepare?keepRecentTokens=1&include=cut,messages",
            body.clone(),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.unwrap();
    // The message goes out byte for byte as it came in.
    assert!(
        text.contains(&format!("\"messagesToSummarize\":[{user}]")),
        "{text}"
    );
    // serde_json's `Value` cannot hold a lone surrogate: read the rest without them.
    let a: Value =
        serde_json::from_str(&text.replace("\\ud800", "").replace("\\udc00", "")).unwrap();
    assert_eq!(a["firstKeptEntryId"], "b");
    // 3 units (x, the surrogate, y) + 5 lone surrogates: 1 + 2 tokens.
    assert_eq!(a["tokensBefore"], 3, "{a}");
    // A plain string content and the JSON body route too.
    let entries: Vec<&serde_json::value::RawValue> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let json = format!(
        "{{\"settings\":{{\"keepRecentTokens\":1}},\"entries\":[{}]}}",
        entries
            .iter()
            .map(|e| e.get())
            .collect::<Vec<_>>()
            .join(",")
    );
    let res = app.post("/v1/compact", "application/json", json).await;
    assert_eq!(res.status().as_u16(), 200);
}

/// hermes: what is not compacted comes back byte for byte, lone surrogates and number
/// spellings included.
#[tokio::test]
async fn hermes_messages_not_compacted_come_back_byte_for_byte() {
    let app = spawn_app().await;
    let odd = r#"{"role":"user", "content":"hi \ud800 \/ \u00e9", "n":1e999,"m":1E5,"k":-0,"f":0.10,"e":1E+05}"#;
    let body = format!(
        r#"{{"messages":[{odd},{{"role":"assistant","content":"ok"}}],"contextLength":200000}}"#
    );
    let res = app
        .post("/v1/hermes/compress", "application/json", body)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.unwrap();
    assert!(text.starts_with("{\"compressed\":false,"), "{text}");
    let want = format!(r#""messages":[{odd},{{"role":"assistant","content":"ok"}}]"#);
    assert!(text.contains(&want), "{text}");

    // Compacted: the protected head and tail keep their bytes, the summary is new.
    let mut messages = vec![r#"{"role":"system","content":"sys"}"#.to_string()];
    for i in 0..12 {
        messages.push(format!(
            r#"{{"role":"user","content":"question {i} {}"}}"#,
            "x".repeat(50)
        ));
        messages.push(format!(
            r#"{{"role":"assistant", "content":"answer {i}", "n":1E5}}"#
        ));
    }
    messages.push(odd.to_string());
    let body = format!(
        r#"{{"messages":[{}],"contextLength":1000}}"#,
        messages.join(",")
    );
    let res = app
        .post("/v1/hermes/compress", "application/json", body)
        .await;
    let text = res.text().await.unwrap();
    assert!(text.starts_with("{\"compressed\":true,"), "{text}");
    assert!(text.contains(&format!(",{odd}]")), "{text}");
    assert!(text.contains(&messages[3]), "{text}");
}

/// Query options beside a JSON body fill in what the body leaves unset; the body wins.
#[tokio::test]
async fn query_options_beside_a_json_body_are_honoured_and_the_body_wins() {
    let app = spawn_app().await;
    let entries: Vec<Value> = small_session()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let body = json!({ "entries": entries });
    let post = |path: &'static str, body: Value| {
        let app = &app;
        async move { app.post_json(path, &body).await }
    };
    let res = post("/v1/prepare?leafId=does-not-exist", body.clone()).await;
    let p = problem(res, 422, "invalid-session").await;
    assert_eq!(p["errors"][0]["pointer"], "leafId", "{p}");

    let plain: Value = post("/v1/prepare", body.clone())
        .await
        .json()
        .await
        .unwrap();
    let res = post("/v1/prepare?keepRecentTokens=100&include=cut", body.clone()).await;
    assert_eq!(res.status().as_u16(), 200);
    let cut: Value = res.json().await.unwrap();
    assert_eq!(cut["settings"]["keepRecentTokens"], 100, "{cut}");
    assert_ne!(cut["firstKeptEntryId"], plain["firstKeptEntryId"]);
    assert!(
        cut.get("messagesToSummarize").is_none(),
        "only the cut: {cut}"
    );
    let full: Value = post("/v1/prepare?keepRecentTokens=100", body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(full["firstKeptEntryId"], cut["firstKeptEntryId"]);
    assert!(full.get("messagesToSummarize").is_some(), "{full}");

    // The body's own settings win over the query's; a bare array takes the query's.
    let mut own = body.clone();
    own["settings"] = json!({"keepRecentTokens": 200});
    own["include"] = json!(["cut", "files"]);
    let res = post("/v1/prepare?keepRecentTokens=100&include=cut", own).await;
    let won: Value = res.json().await.unwrap();
    assert_eq!(won["settings"]["keepRecentTokens"], 200, "{won}");
    assert!(won.get("details").is_some(), "the body's include: {won}");
    let res = post(
        "/v1/prepare?keepRecentTokens=100&include=cut",
        body["entries"].clone(),
    )
    .await;
    assert_eq!(res.json::<Value>().await.unwrap(), cut);

    // `/v1/compact?dryRun=true` with a JSON body answers as /v1/prepare does.
    let res = post(
        "/v1/compact?dryRun=true&keepRecentTokens=100&include=cut",
        body,
    )
    .await;
    assert_eq!(res.json::<Value>().await.unwrap(), cut);
}

#[tokio::test]
async fn a_remote_body_takes_model_and_strategy_from_the_query_and_refuses_the_rest() {
    let app = spawn_app().await;
    let body = json!({"systemPrompt": "", "prompt": "<conversation>\n[User]: hi\n</conversation>"});
    for path in ["/v1/compact", "/v1/summarize"] {
        // A session option beside a prompt is refused, naming it.
        let res = app
            .post_json(&format!("{path}?keepRecentTokens=100"), &body)
            .await;
        let p = problem(res, 400, "invalid-parameter").await;
        assert!(
            p["detail"].as_str().unwrap().contains("keepRecentTokens"),
            "{p}"
        );
        // The model named in the query is the one asked for.
        let res = app
            .post_json(&format!("{path}?model=no-such-model"), &body)
            .await;
        problem(res, 422, "unknown-model").await;
        // The body wins.
        let mut named = body.clone();
        named["model"] = json!("extractive");
        let res = app
            .post_json(&format!("{path}?model=no-such-model"), &named)
            .await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
    }
}
