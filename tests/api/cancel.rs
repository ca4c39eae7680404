//! Work nobody waits for stops: a client that leaves a large compaction leaves the
//! server idle (its CPU time, read from /proc, stops growing).

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::helpers::{spawn_process, Process};

async fn start(timeout_secs: u32) -> Process {
    spawn_process(&[
        ("COMPACTD_MAX_BODY_BYTES", "200000000".into()),
        ("COMPACTD_REQUEST_TIMEOUT_SECS", timeout_secs.to_string()),
    ])
    .await
}

/// User time + system time of a process, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses): utime is the 14th field
    // of the line, stime the 15th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // USER_HZ is 100 on every Linux this runs on.
    ticks / 100.0
}

/// The CPU seconds the process spends in the 3 s after `from` was read.
async fn cpu_in_the_next_3_s(pid: u32, from: f64) -> f64 {
    tokio::time::sleep(Duration::from_secs(3)).await;
    cpu_seconds(pid) - from
}

/// A pi session of `n` short messages (user, assistant with a tool call, tool result,
/// assistant), every user message with a rule in it.
fn session(n: usize) -> String {
    let mut out = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    out.push('\n');
    let mut parent = "null".to_string();
    for i in 0..n {
        let message = match i % 4 {
            0 => format!(
                r#"{{"role":"user","content":[{{"type":"text","text":"From now on never touch part {i}. Then fix the parser for case {i} and run the tests."}}],"timestamp":{i}}}"#
            ),
            1 => format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"Reading the parser."}},{{"type":"toolCall","id":"c{i}","name":"read","arguments":{{"path":"src/p{i}.rs"}}}}],"stopReason":"toolUse","timestamp":{i}}}"#
            ),
            2 => format!(
                r#"{{"role":"toolResult","toolCallId":"c{}","toolName":"read","content":[{{"type":"text","text":"fn parse() {{ case {i} }}"}}],"isError":false,"timestamp":{i}}}"#,
                i - 1
            ),
            _ => format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"Decided to handle case {i} in the parser."}}],"stopReason":"stop","timestamp":{i}}}"#
            ),
        };
        out.push_str(&format!(
            r#"{{"type":"message","id":"e{i:07x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        ));
        out.push('\n');
        parent = format!("\"e{i:07x}\"");
    }
    out
}

#[tokio::test]
async fn a_client_that_leaves_a_large_compaction_leaves_the_server_idle() {
    let server = start(120).await;
    let pid = server.child.id();
    let body = session(60_000);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        stream,
        "POST /v1/compact HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    // The client leaves once the server has spent half a second of CPU on its request
    // (about a second of waiting on a quiet machine; longer when other tests share the
    // cores), so the work is surely under way.
    let sent = cpu_seconds(pid);
    let mut waited = 0;
    while cpu_seconds(pid) - sent < 0.5 {
        assert!(waited < 600, "the server never got to work");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    let left = cpu_seconds(pid);
    drop(stream);
    // It stopped soon after the client left.
    let spent = cpu_in_the_next_3_s(pid, left).await;
    assert!(
        spent < 0.5,
        "{spent:.2} s of CPU in the 3 s after the client left"
    );
}

#[tokio::test]
async fn a_passed_deadline_stops_the_work_too() {
    let server = start(1).await;
    let pid = server.child.id();
    let body = session(60_000);
    let started = cpu_seconds(pid);
    let res = reqwest::Client::new()
        .post(format!("{}/v1/compact", server.base))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .unwrap();
    // The client stays; the deadline answers it.
    assert_eq!(res.status().as_u16(), 504);
    let answered = cpu_seconds(pid);
    assert!(answered - started > 0.3, "the server was not at work");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let spent = cpu_in_the_next_3_s(pid, cpu_seconds(pid)).await;
    assert!(
        spent < 0.5,
        "{spent:.2} s of CPU in the 3 s after the deadline answered"
    );
}
