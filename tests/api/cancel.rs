//! Work nobody waits for stops: a client that leaves a large compaction leaves the
//! server idle (its CPU time, read from /proc, stops growing).

use std::io::Write;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start(timeout_secs: u32) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .env_clear()
        .env("COMPACTD_LISTEN", format!("127.0.0.1:{port}"))
        .env("COMPACTD_MAX_BODY_BYTES", "200000000")
        .env("COMPACTD_REQUEST_TIMEOUT_SECS", timeout_secs.to_string())
        .env(
            "COMPACTD_PROMPTS_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/prompts"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, port };
    for _ in 0..200 {
        if let Ok(r) = reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await {
            if r.status() == 200 {
                return server;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("compactd did not start");
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
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = cpu_seconds(pid);
    // It stopped soon after the client left.
    assert!(
        after - left < 0.5,
        "{:.2} s of CPU in the 3 s after the client left",
        after - left
    );
}

#[tokio::test]
async fn a_passed_deadline_stops_the_work_too() {
    let server = start(1).await;
    let pid = server.child.id();
    let body = session(60_000);
    let started = cpu_seconds(pid);
    let res = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{}/v1/compact", server.port))
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
    let settled = cpu_seconds(pid);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = cpu_seconds(pid);
    assert!(
        after - settled < 0.5,
        "{:.2} s of CPU in the 3 s after the deadline answered",
        after - settled
    );
}
