use serde_json::{json, Value};

use crate::helpers::{entries_of, problem, small_session, spawn_app, spawn_app_with};

#[tokio::test]
async fn malformed_jsonl_names_line_and_column() {
    let app = spawn_app().await;
    let body = small_session() + "\n{\"type\": \"message\", oops}\n";
    let p = problem(
        app.post_jsonl("/v1/prepare", body.clone()).await,
        400,
        "malformed-json",
    )
    .await;
    let line = body.lines().count();
    assert_eq!(p["line"], line);
    assert_eq!(p["column"], 21);
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains(&format!("line {line}")));
}

#[tokio::test]
async fn malformed_json_body_is_400() {
    let app = spawn_app().await;
    let p = problem(
        app.post("/v1/prepare", "application/json", "{\"entries\": [}")
            .await,
        400,
        "malformed-json",
    )
    .await;
    assert_eq!(p["line"], 1);
    let p = problem(
        app.post("/v1/prepare", "application/json", "").await,
        400,
        "malformed-json",
    )
    .await;
    assert_eq!(p["line"], 1);
    problem(
        app.post(
            "/v1/prepare",
            "application/json",
            "{\"entries\": []} trailing",
        )
        .await,
        400,
        "malformed-json",
    )
    .await;
    problem(
        app.post("/v1/prepare", "application/x-ndjson", vec![0xff, 0xfe])
            .await,
        400,
        "malformed-json",
    )
    .await;
}

#[tokio::test]
async fn unsupported_content_types_are_415() {
    let app = spawn_app().await;
    problem(
        app.post("/v1/prepare", "text/plain", small_session()).await,
        415,
        "unsupported-media-type",
    )
    .await;
    let res = app
        .client
        .post(format!("{}/v1/prepare", app.address))
        .body("{}")
        .send()
        .await
        .unwrap();
    problem(res, 415, "unsupported-media-type").await;
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let app = spawn_app_with(|c| c.max_body_bytes = 1024).await;
    let p = problem(
        app.post_jsonl("/v1/prepare", small_session()).await,
        413,
        "body-too-large",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("1024"));
}

#[tokio::test]
async fn too_many_entries_are_413_naming_the_first_one_over() {
    let app = spawn_app_with(|c| c.max_entries = 3).await;
    // JSONL: header + 2 entries fit (blank lines do not count); the third entry does not.
    let lines = small_session();
    let lines: Vec<&str> = lines.lines().collect();
    let fits = format!("{}\n\n{}\n{}\n", lines[0], lines[1], lines[2]);
    assert_eq!(app.post_jsonl("/v1/prepare", fits).await.status(), 200);
    let over = format!("{}\n\n{}\n{}\n{}\n", lines[0], lines[1], lines[2], lines[3]);
    let p = problem(
        app.post_jsonl("/v1/prepare", over).await,
        413,
        "too-many-entries",
    )
    .await;
    assert_eq!(p["errors"][0]["line"], 5);
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains("more than 3 entries"));

    let entries: Vec<Value> = entries_of(&small_session()).into_iter().take(4).collect();
    for path in ["/v1/prepare", "/v1/compact", "/v1/prune"] {
        let p = problem(
            app.post_json(path, &json!({ "entries": entries })).await,
            413,
            "too-many-entries",
        )
        .await;
        assert_eq!(p["errors"][0]["pointer"], "/entries/3");
    }
}

#[tokio::test]
async fn invalid_sessions_are_422_with_pointers() {
    let app = spawn_app().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"entries": [{"id": "a", "parentId": null}]}),
            "/entries/0/type",
        ),
        (
            json!({"entries": [{"type": "message", "id": "a", "parentId": null, "message": {"role": "assistant", "content": [{"type": "text", "text": 5}]}}]}),
            "/entries/0/message/content/0/text",
        ),
        (
            json!({"entries": [{"type": "label", "id": "a", "parentId": null}, {"type": "label", "id": "a", "parentId": null}]}),
            "/entries/1/id",
        ),
        (
            json!({"entries": [{"type": "label", "id": "a", "parentId": null}], "leafId": "zzz"}),
            "/leafId",
        ),
        (
            json!({"entries": [{"type": "label", "id": "a", "parentId": "b"}, {"type": "label", "id": "b", "parentId": "a"}]}),
            "/entries/1/parentId",
        ),
        (
            json!({"entries": [{"type": "message", "id": 5, "parentId": null}]}),
            "/entries/0/id",
        ),
        (json!({"entries": 7}), "/entries"),
        (
            json!({"settings": {"keepRecentTokens": -1}, "entries": []}),
            "/settings/keepRecentTokens",
        ),
        (json!({"entries": [[1, 2]]}), "/entries/0"),
        (
            json!({"entries": [{"type": "message", "id": "a", "message": {"role": "bashExecution", "command": "ls"}}]}),
            "/entries/0/message/output",
        ),
    ];
    for (body, pointer) in cases {
        let p = problem(
            app.post_json("/v1/prepare", &body).await,
            422,
            "invalid-session",
        )
        .await;
        assert_eq!(p["errors"][0]["pointer"], pointer, "{body} → {p}");
    }
}

#[tokio::test]
async fn jsonl_violations_name_the_line() {
    let app = spawn_app().await;
    let body = format!(
        "{}{}\n",
        small_session(),
        r#"{"type":"message","id":"zz","parentId":"e020","message":{"role":"user","content":42}}"#
    );
    let p = problem(
        app.post_jsonl("/v1/prepare", body.clone()).await,
        422,
        "invalid-session",
    )
    .await;
    assert_eq!(p["errors"][0]["line"], body.lines().count());
    assert_eq!(p["errors"][0]["pointer"], "/message/content");
}

#[tokio::test]
async fn bad_query_parameters_are_400() {
    let app = spawn_app().await;
    problem(
        app.post_jsonl("/v1/prepare?keepRecentTokens=lots", small_session())
            .await,
        400,
        "invalid-parameter",
    )
    .await;
    problem(
        app.post_jsonl("/v1/prepare?keepRecent=5", small_session())
            .await,
        400,
        "invalid-parameter",
    )
    .await;
}

#[tokio::test]
async fn errors_never_echo_large_input() {
    let app = spawn_app().await;
    let huge_id = "x".repeat(10_000);
    let p = problem(
        app.post_json("/v1/prepare", &json!({"entries": [{"type": "label", "id": "a", "parentId": null}], "leafId": huge_id})).await,
        422,
        "invalid-session",
    )
    .await;
    assert!(p.to_string().len() < 1000, "{}", p.to_string().len());
}
