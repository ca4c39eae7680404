//! SIGTERM on the real binary: in-flight requests finish, new connections are refused,
//! and a request that would outlast the grace period does not keep the process alive.

use std::process::Command;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::helpers::{small_session, spawn_process, Process as Server};

/// A model server that accepts connections and never answers: the summarizer call
/// runs until its per-attempt timeout.
async fn silent_upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    port
}

async fn start(upstream: u16, upstream_timeout_secs: u32, grace_secs: u32) -> Server {
    spawn_process(&[
        ("COMPACTD_SUMMARIZER", "openai".into()),
        ("COMPACTD_MODEL", "m".into()),
        (
            "COMPACTD_BASE_URL",
            format!("http://127.0.0.1:{upstream}/v1"),
        ),
        ("COMPACTD_RETRIES", "0".into()),
        (
            "COMPACTD_UPSTREAM_TIMEOUT_SECS",
            upstream_timeout_secs.to_string(),
        ),
        ("COMPACTD_SHUTDOWN_GRACE_SECS", grace_secs.to_string()),
    ])
    .await
}

fn signal(server: &Server, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(server.child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (polling, without blocking the runtime) for the process to exit.
async fn exit_status(server: &mut Server, within: Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < within {
        if let Some(status) = server.child.try_wait().unwrap() {
            return Some(status);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

fn compact(server: &Server) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
    let url = format!("{}/v1/compact?keepRecentTokens=100", server.base);
    tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .header("content-type", "application/x-ndjson")
            .body(small_session())
            .send()
            .await
    })
}

/// Waits until the server reports a request in flight.
async fn until_in_flight(server: &Server) {
    for _ in 0..200 {
        let metrics = reqwest::get(format!("{}/metrics", server.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // /metrics itself is never counted; the compaction is.
        if metrics
            .lines()
            .any(|l| l.starts_with("compactd_requests_in_flight") && !l.ends_with(" 0"))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the compaction never started");
}

#[tokio::test]
async fn sigterm_lets_in_flight_requests_finish() {
    let upstream = silent_upstream().await;
    // The upstream attempt times out after 2 s, then the extractive fallback answers.
    let mut server = start(upstream, 2, 30).await;
    let request = compact(&server);
    until_in_flight(&server).await;
    signal(&server, "TERM");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Not accepting any more…
    assert!(reqwest::get(format!("{}/healthz", server.base))
        .await
        .is_err());
    // …but the request in progress gets its answer.
    let res = request.await.unwrap().unwrap();
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["summarizer"], "extractive");
    let status = exit_status(&mut server, Duration::from_secs(10))
        .await
        .expect("compactd did not exit after its in-flight request finished");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn the_grace_period_bounds_shutdown() {
    let upstream = silent_upstream().await;
    // The upstream would hang for 10 minutes; the grace period is 1 s.
    let mut server = start(upstream, 600, 1).await;
    let request = compact(&server);
    until_in_flight(&server).await;
    signal(&server, "TERM");
    let status = exit_status(&mut server, Duration::from_secs(20))
        .await
        .expect("compactd outlived its grace period");
    assert!(status.success(), "{status:?}");
    // The abandoned request sees its connection closed, not an answer.
    assert!(request.await.unwrap().is_err());
}

#[tokio::test]
async fn a_second_signal_exits_at_once() {
    let upstream = silent_upstream().await;
    let mut server = start(upstream, 600, 600).await;
    let request = compact(&server);
    until_in_flight(&server).await;
    signal(&server, "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(server.child.try_wait().unwrap().is_none(), "exited early");
    signal(&server, "INT");
    let status = exit_status(&mut server, Duration::from_secs(20))
        .await
        .expect("a second signal did not stop compactd");
    assert!(status.success(), "{status:?}");
    assert!(request.await.unwrap().is_err());
}
