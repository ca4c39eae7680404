//! Jobs (`Prefer: respond-async`, `/v1/jobs/{id}`), `Idempotency-Key` and single flight
//! through the real server, with fake model upstreams that take their time and count
//! their calls.

use std::time::Duration;

use compactd::config::ClientKeys;
use serde_json::Value;
use wiremock::MockServer;

use crate::helpers::{problem, small_session, spawn_app_with, TestApp};
use crate::sse::{names, Item, Reader};
use crate::upstreams::{
    calls as upstream_calls, config, openai, prompt_body, silent_upstream, slow_model,
};

async fn app_with_model(
    server: &MockServer,
    configure: impl FnOnce(&mut compactd::config::Config),
) -> TestApp {
    let llm = config(vec![openai("local", server)]);
    spawn_app_with(move |c| {
        c.llm = llm;
        c.heartbeat = Duration::from_millis(200);
        configure(c);
    })
    .await
}

async fn send(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> reqwest::Response {
    let mut req = app.client.request(method, format!("{}{path}", app.address));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    req.send().await.unwrap()
}

/// `POST /v1/summarize` with these headers and body.
async fn summarize(app: &TestApp, headers: &[(&str, &str)], body: &Value) -> reqwest::Response {
    send(
        app,
        reqwest::Method::POST,
        "/v1/summarize",
        headers,
        Some(body),
    )
    .await
}

/// A job's events stream (`GET {location}/events`) read to its end.
async fn events(app: &TestApp, location: &str, headers: &[(&str, &str)]) -> Vec<Item> {
    let path = format!("{location}/events");
    Reader::new(send(app, reqwest::Method::GET, &path, headers, None).await)
        .all()
        .await
}

/// The `Location` of a 202.
fn location(res: &reqwest::Response) -> String {
    res.headers()["location"].to_str().unwrap().to_string()
}

async fn get_json(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let res = send(app, reqwest::Method::GET, path, headers, None).await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

/// Waits until the job is done and returns it.
async fn finished(app: &TestApp, location: &str, headers: &[(&str, &str)]) -> Value {
    for _ in 0..200 {
        let (status, job) = get_json(app, location, headers).await;
        assert_eq!(status, 200, "{job}");
        if !matches!(job["status"].as_str(), Some("running" | "queued")) {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the job did not finish");
}

#[tokio::test]
async fn respond_async_answers_202_and_the_job_keeps_progress_and_result() {
    let server = slow_model(Duration::from_millis(600), "## Goal\nThe summary.").await;
    let app = app_with_model(&server, |_| {}).await;
    let res = app
        .client
        .post(format!("{}/v1/compact?keepRecentTokens=1", app.address))
        .header("content-type", "application/x-ndjson")
        .header("prefer", "respond-async")
        .body(small_session())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 202);
    assert_eq!(res.headers()["preference-applied"], "respond-async");
    let location = location(&res);
    let accepted: Value = res.json().await.unwrap();
    let id = accepted["id"].as_str().unwrap();
    assert_eq!(location, format!("/v1/jobs/{id}"));
    assert_eq!(id.len(), 32, "128 bits as hex");
    assert_eq!(accepted["status"], "running");
    assert_eq!(accepted["operation"], "/v1/compact");

    // While it runs: the newest progress.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, running) = get_json(&app, &location, &[]).await;
    assert_eq!(running["status"], "running", "{running}");
    assert_eq!(running["progress"]["event"], "summarizing", "{running}");
    assert!(running.get("result").is_none());

    let done = finished(&app, &location, &[]).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(done["expiresAt"].is_string());
    let result = &done["result"];
    assert!(result["summary"]
        .as_str()
        .unwrap()
        .starts_with("## Goal\nThe summary."));
    assert_eq!(result["summarizer"], "llm");

    // The events, replayed after the end: the stream a client would have read.
    let items = events(&app, &location, &[]).await;
    assert_eq!(names(&items).first(), Some(&"prepared"));
    assert_eq!(names(&items).last(), Some(&"result"));
    assert_eq!(&items.last().unwrap().json(), result);
    // Resuming after an id skips what was seen.
    let resumed = events(&app, &location, &[("last-event-id", "0")]).await;
    assert_eq!(names(&resumed).len(), names(&items).len() - 1);
    let calls = result["calls"].as_u64().unwrap() as usize;
    assert_eq!(upstream_calls(&server).await, calls);
}

#[tokio::test]
async fn a_job_streamed_live_replays_the_past_then_follows_to_the_end() {
    let server = slow_model(Duration::from_millis(800), "live").await;
    let app = app_with_model(&server, |_| {}).await;
    let res = summarize(&app, &[("prefer", "respond-async")], &prompt_body("fix it")).await;
    assert_eq!(res.status().as_u16(), 202);
    let location = location(&res);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let items = events(&app, &location, &[]).await;
    assert_eq!(
        names(&items),
        ["prepared", "summarizing", "result"],
        "{items:?}"
    );
    assert!(
        items
            .iter()
            .any(|i| *i == crate::sse::Item::Comment("heartbeat".into())),
        "heartbeats while following: {items:?}"
    );
    assert_eq!(items.last().unwrap().json()["summary"], "live");
}

#[tokio::test]
async fn jobs_are_visible_only_to_the_key_that_created_them() {
    let server = slow_model(Duration::from_millis(10), "mine").await;
    let app = app_with_model(&server, |c| {
        c.api_keys = ClientKeys::new(["key-a", "key-b"]);
    })
    .await;
    let a = [
        ("authorization", "Bearer key-a"),
        ("prefer", "respond-async"),
    ];
    let res = summarize(&app, &a, &prompt_body("x")).await;
    assert_eq!(res.status().as_u16(), 202);
    let location = location(&res);
    let done = finished(&app, &location, &[("authorization", "Bearer key-a")]).await;
    assert_eq!(done["result"]["summary"], "mine");
    let b = [("authorization", "Bearer key-b")];
    for path in [location.clone(), format!("{location}/events")] {
        let res = send(&app, reqwest::Method::GET, &path, &b, None).await;
        problem(res, 404, "job-not-found").await;
    }
    let res = send(&app, reqwest::Method::DELETE, &location, &b, None).await;
    problem(res, 404, "job-not-found").await;
    let unknown = format!("/v1/jobs/{}", "0".repeat(32));
    let res = send(
        &app,
        reqwest::Method::GET,
        &unknown,
        &[("authorization", "Bearer key-a")],
        None,
    )
    .await;
    problem(res, 404, "job-not-found").await;
    let res = send(&app, reqwest::Method::GET, &location, &[], None).await;
    problem(res, 401, "unauthorized").await;
}

#[tokio::test]
async fn delete_cancels_a_running_job_and_its_upstream_call() {
    let (port, arrived, upstream) = silent_upstream().await;
    let llm = crate::helpers::silent_model("local", port).await;
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let res = summarize(&app, &[("prefer", "respond-async")], &prompt_body("x")).await;
    let location = location(&res);
    arrived.await.unwrap();
    let res = send(&app, reqwest::Method::DELETE, &location, &[], None).await;
    assert_eq!(res.status().as_u16(), 200);
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["status"], "cancelled");
    assert_eq!(job["error"]["type"], "urn:compactd:problem:job-cancelled");
    assert!(upstream.await.unwrap(), "the upstream call was dropped");
    let items = events(&app, &location, &[]).await;
    assert_eq!(names(&items).last(), Some(&"error"));
    // Deleting again changes nothing.
    let (_, again) = get_json(&app, &location, &[]).await;
    assert_eq!(again["status"], "cancelled");
}

#[tokio::test]
async fn an_idempotent_retry_joins_the_running_call_and_another_body_is_refused() {
    let server = slow_model(Duration::from_millis(700), "once").await;
    let app = app_with_model(&server, |_| {}).await;
    let key = [("idempotency-key", "\"retry-1\"")];
    let body = prompt_body("pay once");
    // The first client gives up (a proxy's timeout) while the model works…
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(format!("{}/v1/summarize", app.address))
        .header("idempotency-key", "\"retry-1\"")
        .json(&body)
        .send()
        .await;
    assert!(gave_up.is_err());
    // …and its retry joins the same job instead of paying again.
    let retry = summarize(&app, &key, &body).await;
    assert_eq!(retry.status().as_u16(), 200);
    let first: Value = retry.json().await.unwrap();
    assert_eq!(first["summary"], "once");
    // The summary's call and its short summary's.
    assert_eq!(upstream_calls(&server).await, 2);
    // After the end, the same key answers from the job.
    let late = summarize(&app, &key, &body).await;
    assert_eq!(late.json::<Value>().await.unwrap(), first);
    assert_eq!(upstream_calls(&server).await, 2);

    let other = summarize(&app, &key, &prompt_body("something else")).await;
    problem(other, 422, "idempotency-key-reused").await;
    for bad in ["\"\"", "two words", "\"two words\"", "tab\tin"] {
        let res = summarize(&app, &[("idempotency-key", bad)], &body).await;
        let p = problem(res, 400, "invalid-idempotency-key").await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key header"),
            "{p}"
        );
    }
    assert_eq!(upstream_calls(&server).await, 2);
}

#[tokio::test]
async fn leaving_a_job_stream_does_not_cancel_the_job() {
    let server = slow_model(Duration::from_millis(700), "kept").await;
    let app = app_with_model(&server, |_| {}).await;
    let headers = [
        ("idempotency-key", "stream-1"),
        ("accept", "text/event-stream"),
    ];
    let body = prompt_body("keep going");
    let res = summarize(&app, &headers, &body).await;
    let mut reader = Reader::new(res);
    assert_eq!(reader.next().await.unwrap().name(), "prepared");
    drop(reader);
    // The retry (plain this time) gets the answer of the job the stream started.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let res = summarize(&app, &[("idempotency-key", "stream-1")], &body).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.json::<Value>().await.unwrap()["summary"], "kept");
    // One call for the summary, one for its short summary.
    assert_eq!(upstream_calls(&server).await, 2);
}

#[tokio::test]
async fn jobs_share_the_concurrency_limit_and_a_full_server_says_when_to_retry() {
    let server = slow_model(Duration::from_millis(700), "limited").await;
    let app = app_with_model(&server, |c| c.max_concurrency = 1).await;
    let async_ = [("prefer", "respond-async")];
    let res = summarize(&app, &async_, &prompt_body("a")).await;
    assert_eq!(res.status().as_u16(), 202);
    let location = location(&res);
    // The job holds the one place; reading it is not shed (reads hold a place only
    // while they answer).
    let res = summarize(&app, &async_, &prompt_body("b")).await;
    assert_eq!(res.headers()["retry-after"], "1");
    problem(res, 503, "overloaded").await;
    finished(&app, &location, &[]).await;
    let res = summarize(&app, &async_, &prompt_body("b")).await;
    assert_eq!(res.status().as_u16(), 202);
}

#[tokio::test]
async fn finished_jobs_expire_after_their_ttl() {
    let server = slow_model(Duration::from_millis(10), "brief").await;
    let app = app_with_model(&server, |c| c.job_ttl = Duration::from_secs(1)).await;
    let res = summarize(&app, &[("prefer", "respond-async")], &prompt_body("x")).await;
    let location = location(&res);
    finished(&app, &location, &[]).await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let res = send(&app, reqwest::Method::GET, &location, &[], None).await;
    problem(res, 404, "job-not-found").await;
}

#[tokio::test]
async fn past_the_ceiling_the_oldest_finished_job_is_evicted_and_answers_410() {
    let server = slow_model(Duration::from_millis(10), "brief").await;
    let app = app_with_model(&server, |c| c.jobs_max = 2).await;
    let mut locations = Vec::new();
    for n in 0..3 {
        let res = summarize(
            &app,
            &[("prefer", "respond-async")],
            &prompt_body(&format!("x{n}")),
        )
        .await;
        let location = location(&res);
        finished(&app, &location, &[]).await;
        locations.push(location);
    }
    for path in [locations[0].clone(), format!("{}/events", locations[0])] {
        let res = send(&app, reqwest::Method::GET, &path, &[], None).await;
        problem(res, 410, "job-evicted").await;
    }
    let res = send(&app, reqwest::Method::DELETE, &locations[0], &[], None).await;
    problem(res, 410, "job-evicted").await;
    for kept in &locations[1..] {
        let (status, _) = get_json(&app, kept, &[]).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn followers_are_bounded_and_one_more_is_told_when_to_retry() {
    let server = slow_model(Duration::from_secs(2), "brief").await;
    let app = app_with_model(&server, |c| c.max_followers = 1).await;
    let res = summarize(&app, &[("prefer", "respond-async")], &prompt_body("x")).await;
    let events = format!("{}{}/events", app.address, location(&res));
    let first = app.client.get(&events).send().await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    let second = app.client.get(&events).send().await.unwrap();
    assert_eq!(second.headers()["retry-after"], "1");
    problem(second, 503, "too-many-followers").await;
    // The place is free again once the first follower leaves.
    drop(first);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let third = app.client.get(&events).send().await.unwrap();
    assert_eq!(third.status().as_u16(), 200);
}

#[tokio::test]
async fn identical_requests_in_flight_share_one_upstream_call() {
    let server = slow_model(Duration::from_millis(600), "shared").await;
    let app = app_with_model(&server, |_| {}).await;
    let body = prompt_body("same request");
    let calls = (0..4).map(|_| summarize(&app, &[], &body));
    let answers = futures_util::future::join_all(calls).await;
    for res in answers {
        assert_eq!(res.status().as_u16(), 200);
        assert_eq!(res.json::<Value>().await.unwrap()["summary"], "shared");
    }
    // One call for the summary, one for its short summary.
    assert_eq!(upstream_calls(&server).await, 2);
}
