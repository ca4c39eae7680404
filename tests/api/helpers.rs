use std::sync::Arc;

use compactd::config::Config;
use compactd::startup::Application;
use compactd::summarize::{Prompts, Summarize};
use serde_json::{json, Value};

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
}

/// Starts compactd on 127.0.0.1 with a random port.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts compactd with a summarizer of the test's own.
pub async fn spawn_app_with_summarizer(summarizer: Arc<dyn Summarize>) -> TestApp {
    start(
        Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..Config::default()
        },
        Some(summarizer),
    )
    .await
}

/// Starts compactd with a configuration and a summarizer of the test's own.
pub async fn spawn_app_custom(
    configure: impl FnOnce(&mut Config),
    summarizer: Arc<dyn Summarize>,
) -> TestApp {
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Config::default()
    };
    configure(&mut config);
    start(config, Some(summarizer)).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Config::default()
    };
    configure(&mut config);
    start(config, None).await
}

/// Builds the application as `compactd serve` does (with the test's summarizer when it
/// brings one) and serves it in the background until the test's runtime ends.
async fn start(config: Config, summarizer: Option<Arc<dyn Summarize>>) -> TestApp {
    let app = match summarizer {
        Some(summarizer) => Application::build_with(config, Prompts::builtin(), summarizer).await,
        None => Application::build(config).await,
    }
    .expect("the application starts");
    let address = format!("http://{}", app.address());
    tokio::spawn(app.run_until_stopped());
    TestApp {
        address,
        client: reqwest::Client::new(),
    }
}

impl TestApp {
    pub async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.address))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request failed")
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .expect("request failed")
    }

    pub async fn post_jsonl(
        &self,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        self.post(path, "application/x-ndjson", body).await
    }

    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.post(path, "application/json", serde_json::to_vec(body).unwrap())
            .await
    }
}

/// The text of one real pi session (`tests/fixtures/pi-sessions/`).
pub fn fixture(name: &str) -> String {
    crate::fixtures::read(name)
}

/// A JSONL session file as a JSON `entries` array.
pub fn entries_of(jsonl: &str) -> Vec<serde_json::Value> {
    jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Reads a problem+json answer, checking its status and slug.
pub async fn problem(res: reqwest::Response, status: u16, slug: &str) -> serde_json::Value {
    assert_eq!(res.status().as_u16(), status);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(
        body["type"],
        format!("urn:compactd:problem:{slug}"),
        "{body}"
    );
    assert_eq!(body["status"], status);
    body
}

/// A small v3 session: two user turns with a tool call each.
pub fn small_session() -> String {
    let mut lines = vec![r#"{"type":"session","version":3,"id":"sess-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/repo"}"#.to_string()];
    let mut parent = "null".to_string();
    let mut n = 0;
    let mut push = |lines: &mut Vec<String>, body: String| {
        n += 1;
        let id = format!("e{n:03}");
        lines.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:{:02}.000Z","message":{body}}}"#,
            n % 60
        ));
        parent = format!("\"{id}\"");
    };
    for turn in 0..4 {
        push(
            &mut lines,
            format!(
                r#"{{"role":"user","content":[{{"type":"text","text":"Please fix bug {turn} in src/lib{turn}.rs"}}]}}"#
            ),
        );
        push(
            &mut lines,
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"Reading it."}},{{"type":"toolCall","id":"c{turn}","name":"read","arguments":{{"path":"src/lib{turn}.rs"}}}}],"stopReason":"toolUse","usage":{{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":120}}}}"#
            ),
        );
        push(
            &mut lines,
            format!(
                r#"{{"role":"toolResult","toolCallId":"c{turn}","toolName":"read","content":[{{"type":"text","text":"{}"}}],"isError":false}}"#,
                "fn main() {}\\n".repeat(200)
            ),
        );
        push(
            &mut lines,
            format!(
                r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"w{turn}","name":"edit","arguments":{{"path":"src/lib{turn}.rs","oldText":"a","newText":"b"}}}}],"stopReason":"toolUse"}}"#
            ),
        );
        push(
            &mut lines,
            format!(
                r#"{{"role":"toolResult","toolCallId":"w{turn}","toolName":"edit","content":[{{"type":"text","text":"ok"}}],"isError":false}}"#
            ),
        );
    }
    lines.join("\n") + "\n"
}

/// Runs the `compactd` binary (with no `COMPACTD_CONFIG` file), expects success, and
/// returns what it printed.
pub fn cli_output(args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(args)
        .env_remove("COMPACTD_CONFIG")
        .output()
        .expect("compactd runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// [`cli_output`], parsed as JSON.
pub fn cli_json(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&cli_output(args)).expect("compactd prints JSON")
}

/// What a test model answers: an LLM summary with no usage, no retries, not cached.
pub fn llm_summary(text: &str, model: &str) -> compactd::summarize::Summary {
    compactd::summarize::Summary {
        text: text.into(),
        usage: Default::default(),
        model: model.into(),
        summarizer: compactd::summarize::SummarizerKind::Llm,
        retries: 0,
        cached: false,
        moa: None,
        warnings: Vec::new(),
    }
}

/// The summarizer settings of one model, `name`, served by the silent upstream on `port`
/// (`upstreams::silent_upstream`: it takes the request and never answers), with deadlines
/// long enough that only a cancellation ends the call.
pub async fn silent_model(name: &str, port: u16) -> compactd::config::LlmConfig {
    let mut llm = crate::upstreams::config(vec![compactd::config::ModelConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        ..crate::upstreams::openai(name, &wiremock::MockServer::start().await)
    }]);
    llm.upstream_timeout = std::time::Duration::from_secs(30);
    llm.deadline = std::time::Duration::from_secs(30);
    llm
}

/// The real `compactd` binary, started on a free loopback port with only the given
/// environment (and the repository's prompts); killed when dropped.
pub struct Process {
    pub child: std::process::Child,
    pub port: u16,
    /// `http://127.0.0.1:{port}`.
    pub base: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary and waits until `/healthz` answers 200.
pub async fn spawn_process(env: &[(&str, String)]) -> Process {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .env_clear()
        .env("COMPACTD_LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "COMPACTD_PROMPTS_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/prompts"),
        )
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let process = Process {
        child,
        port,
        base: format!("http://127.0.0.1:{port}"),
    };
    for _ in 0..200 {
        if let Ok(r) = reqwest::get(format!("{}/healthz", process.base)).await {
            if r.status() == 200 {
                return process;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("compactd did not start");
}

/// Writes JSONL entries: each `(id, message)` a `message` entry child of the one before.
pub struct SessionWriter {
    lines: Vec<String>,
    pub parent: Option<String>,
    n: usize,
}

impl Default for SessionWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionWriter {
    pub fn new() -> Self {
        SessionWriter {
            lines: vec![json!({"type": "session", "version": 3, "id": "checked-1",
                "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/repo"})
            .to_string()],
            parent: None,
            n: 0,
        }
    }

    pub fn push(&mut self, message: Value) -> String {
        self.n += 1;
        let id = format!("m{:03}", self.n);
        self.lines.push(
            json!({"type": "message", "id": id, "parentId": self.parent,
                "timestamp": format!("2026-01-01T00:{:02}:{:02}.000Z", self.n / 60, self.n % 60),
                "message": message})
            .to_string(),
        );
        self.parent = Some(id.clone());
        id
    }

    pub fn user(&mut self, text: &str) -> String {
        self.push(json!({"role": "user", "content": [{"type": "text", "text": text}]}))
    }

    pub fn assistant(&mut self, text: &str) -> String {
        self.push(
            json!({"role": "assistant", "content": [{"type": "text", "text": text}],
            "stopReason": "stop"}),
        )
    }

    /// An entry as an answer gives it (`parentId` already set), appended as is.
    pub fn append_entry(&mut self, entry: &Value) {
        self.lines.push(entry.to_string());
        self.parent = entry["id"].as_str().map(str::to_string);
    }

    pub fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}
