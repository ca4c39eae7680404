//! `Content-Encoding` of request bodies (gzip and zstd decoded, the body limit on decoded
//! bytes, other codings 415) and body framing errors typed as such.

use std::io::Write;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{problem, small_session, spawn_app, spawn_app_with, TestApp};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

async fn post_encoded(
    app: &TestApp,
    path: &str,
    content_type: &str,
    encoding: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    app.client
        .post(format!("{}{path}", app.address))
        .header("content-type", content_type)
        .header("content-encoding", encoding)
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn gzip_and_zstd_bodies_answer_as_the_plain_body() {
    let app = spawn_app().await;
    let session = small_session();
    let plain: Value = app
        .post_jsonl("/v1/prepare", session.clone())
        .await
        .json()
        .await
        .unwrap();
    let zstd = zstd::bulk::compress(session.as_bytes(), 3).unwrap();
    let sent = [
        ("gzip", gzip(session.as_bytes())),
        ("GZIP", gzip(session.as_bytes())),
        ("x-gzip", gzip(session.as_bytes())),
        ("zstd", zstd),
        ("identity", session.clone().into_bytes()),
    ];
    for (coding, body) in sent {
        // JSONL is parsed while it arrives, JSON read whole: both paths decode.
        let res = post_encoded(&app, "/v1/prepare", "application/x-ndjson", coding, body).await;
        assert_eq!(res.status().as_u16(), 200, "{coding}");
        assert_eq!(res.json::<Value>().await.unwrap(), plain, "{coding}");
    }
    let entries: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let json = serde_json::to_vec(&serde_json::json!({ "entries": entries })).unwrap();
    let res = post_encoded(&app, "/v1/prepare", "application/json", "gzip", gzip(&json)).await;
    assert_eq!(res.json::<Value>().await.unwrap(), plain);
}

#[tokio::test]
async fn the_body_limit_counts_decoded_bytes() {
    let app = spawn_app_with(|c| c.max_body_bytes = 1 << 20).await;
    // 50 MB of zeros: about 50 kB gzipped, well under the limit as sent.
    let bomb = gzip(&vec![b'0'; 50_000_000]);
    assert!(bomb.len() < 1 << 20);
    for ct in ["application/x-ndjson", "application/json"] {
        let res = post_encoded(&app, "/v1/prepare", ct, "gzip", bomb.clone()).await;
        problem(res, 413, "body-too-large").await;
    }
    let res = post_encoded(&app, "/v1/summarize", "application/json", "gzip", bomb).await;
    problem(res, 413, "body-too-large").await;
}

#[tokio::test]
async fn other_codings_are_415_and_a_body_that_does_not_decode_400() {
    let app = spawn_app().await;
    for coding in ["br", "deflate", "compress", "gzip, zstd"] {
        let res = post_encoded(
            &app,
            "/v1/prepare",
            "application/x-ndjson",
            coding,
            small_session().into_bytes(),
        )
        .await;
        assert_eq!(res.headers()["accept-encoding"], "gzip, zstd, identity");
        problem(res, 415, "unsupported-content-encoding").await;
    }
    for (ct, coding) in [
        ("application/x-ndjson", "gzip"),
        ("application/json", "gzip"),
        ("application/x-ndjson", "zstd"),
    ] {
        let res = post_encoded(
            &app,
            "/v1/prepare",
            ct,
            coding,
            small_session().into_bytes(),
        )
        .await;
        let p = problem(res, 400, "bad-content-encoding").await;
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("not valid {coding} data")),
            "{detail}"
        );
    }
}

#[tokio::test]
async fn a_request_without_a_body_is_not_refused_for_its_content_encoding() {
    let app = spawn_app().await;
    let res = app
        .client
        .get(format!("{}/v1/models", app.address))
        .header("content-encoding", "br")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    // A body in that coding still is.
    let res = post_encoded(
        &app,
        "/v1/prepare",
        "application/x-ndjson",
        "br",
        b"x".to_vec(),
    )
    .await;
    problem(res, 415, "unsupported-content-encoding").await;
}

/// A request written by hand, for framing no HTTP client would send; its status line.
async fn raw_status(app: &TestApp, request: &str) -> (u16, String) {
    let addr = app.address.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .expect("an answer, not a hang")
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text[9..12].parse().unwrap();
    (status, text)
}

#[tokio::test]
async fn bad_chunk_sizes_are_bad_body_not_a_query_parameter() {
    let app = spawn_app().await;
    for (ct, chunk) in [
        ("application/x-ndjson", "zz"),
        ("application/json", "zz"),
        ("application/x-ndjson", "FFFFFFFFFFFFFFFFFFFF"),
    ] {
        let request = format!(
            "POST /v1/prepare HTTP/1.1\r\nhost: x\r\ncontent-type: {ct}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n5\r\n{{\"a\":\r\n{chunk}\r\n1}}\r\n0\r\n\r\n"
        );
        let (status, text) = raw_status(&app, &request).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("urn:compactd:problem:bad-body"), "{text}");
        assert!(
            text.to_lowercase().contains("invalid chunk size"),
            "the cause: {text}"
        );
        assert!(!text.contains("query parameter"), "{text}");
    }
}
