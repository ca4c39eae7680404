//! The inspector page's HTTP side: headers, the setting that turns it off, the key
//! rules, and `POST /v1/inspect/outline`. (The page itself is tested in a browser:
//! tests/inspector.)

use compactd::config::ClientKeys;

use crate::helpers::{problem, small_session, spawn_app, spawn_app_with};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
     img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[tokio::test]
async fn the_page_and_its_modules_are_served_under_a_strict_policy() {
    let app = spawn_app().await;
    let res = app.get("/").await;
    assert_eq!(res.status().as_u16(), 200);
    let h = res.headers();
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    assert_eq!(h["content-security-policy"], CSP);
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["link"], "</openapi.json>; rel=\"service-desc\"");
    let html = res.text().await.unwrap();
    assert!(html.contains("<script type=\"module\" src=\"/inspector/main.js\">"));
    assert!(html.contains("href=\"/openapi.json\""));
    // Nothing from elsewhere.
    assert!(!html.contains("http://") && !html.contains("https://"));
    for (path, kind) in [
        ("/inspector/main.js", "text/javascript; charset=utf-8"),
        ("/inspector/timeline.js", "text/javascript; charset=utf-8"),
        ("/inspector/style.css", "text/css; charset=utf-8"),
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
        assert_eq!(res.headers()["content-type"], kind, "{path}");
        assert_eq!(res.headers()["content-security-policy"], CSP, "{path}");
    }
    problem(app.get("/inspector/other.js").await, 404, "not-found").await;
    problem(app.get("/inspector/../Cargo.toml").await, 404, "not-found").await;
}

#[tokio::test]
async fn a_setting_turns_the_page_off() {
    let app = spawn_app_with(|c| c.inspector = false).await;
    problem(app.get("/").await, 404, "not-found").await;
    problem(app.get("/inspector/main.js").await, 404, "not-found").await;
    // The outline is part of the API and stays.
    let res = app.post_jsonl("/v1/inspect/outline", small_session()).await;
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn the_page_is_open_and_the_api_it_calls_needs_the_key() {
    let app = spawn_app_with(|c| c.api_keys = ClientKeys::new(["k-1"])).await;
    assert_eq!(app.get("/").await.status().as_u16(), 200);
    assert_eq!(app.get("/inspector/source.js").await.status().as_u16(), 200);
    let res = app.post_jsonl("/v1/inspect/outline", small_session()).await;
    problem(res, 401, "unauthorized").await;
    let res = app
        .client
        .post(format!("{}/v1/inspect/outline", app.address))
        .header("content-type", "application/x-ndjson")
        .bearer_auth("k-1")
        .body(small_session())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn the_outline_gives_columns_that_point_into_the_body() {
    let app = spawn_app().await;
    let body = small_session();
    let res = app
        .post_jsonl("/v1/inspect/outline?leafId=e003", body.clone())
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let o: serde_json::Value = res.json().await.unwrap();
    let n = o["count"].as_u64().unwrap() as usize;
    for column in ["ids", "parents", "kinds", "tokens", "offsets", "lengths"] {
        assert_eq!(o[column].as_array().unwrap().len(), n, "{column}");
    }
    assert_eq!(o["path"], serde_json::json!([0, 1, 2]));
    assert_eq!(
        o["kindNames"][o["kinds"][2].as_u64().unwrap() as usize],
        "toolResult"
    );
    assert!(o.get("previews").is_none(), "no text over the wire");
    for i in 0..n {
        let at = o["offsets"][i].as_u64().unwrap() as usize;
        let len = o["lengths"][i].as_u64().unwrap() as usize;
        let entry: serde_json::Value = serde_json::from_str(&body[at..at + len]).unwrap();
        assert_eq!(entry["id"], o["ids"][i]);
    }
}

#[tokio::test]
async fn a_bad_outline_request_gets_a_precise_problem() {
    let app = spawn_app().await;
    let res = app
        .post_jsonl("/v1/inspect/outline?leafId=nope", small_session())
        .await;
    let body = problem(res, 422, "invalid-session").await;
    assert_eq!(body["errors"][0]["pointer"], "leafId", "{body}");
    let res = app
        .post_jsonl("/v1/inspect/outline?keep=1", small_session())
        .await;
    problem(res, 400, "invalid-parameter").await;
    let res = app
        .client
        .post(format!("{}/v1/inspect/outline", app.address))
        .header("content-type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    problem(res, 415, "unsupported-media-type").await;
}
