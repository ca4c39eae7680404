//! Fake OpenAI-compatible models for Mixture-of-Agents tests, each a real HTTP server on
//! 127.0.0.1 (axum) answering `POST /v1/chat/completions` as a model server does.
//!
//! A fake is a proposer for requests without drafts and an aggregator for requests
//! holding `<draft n="…">` blocks, each with its own reply. Proposer requests can wait at
//! a shared [`Gate`]: a proposer answers only once every expected proposer request has
//! arrived, which proves the calls are in flight together without timing anything; a
//! gate still closed after 5 s answers HTTP 400 (not retried) and marks the gate missed,
//! so a sequential caller fails the test instead of hanging it. Every request body is
//! kept for inspection. Included with `#[path = "../support/moa.rs"] mod moa_fakes;`.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use compactd::config::{ModelConfig, ModelKind};
use serde_json::{json, Value};

/// What a fake answers.
#[derive(Clone, Debug)]
pub enum Reply {
    Text(String),
    /// An HTTP error status (400: not retried).
    Status(u16),
}

pub fn text(t: &str) -> Reply {
    Reply::Text(t.to_string())
}

/// Opens when `expected` proposer requests have arrived.
pub struct Gate {
    barrier: tokio::sync::Barrier,
    missed: AtomicBool,
}

impl Gate {
    pub fn new(expected: usize) -> Arc<Gate> {
        Arc::new(Gate {
            barrier: tokio::sync::Barrier::new(expected),
            missed: AtomicBool::new(false),
        })
    }

    /// Whether a proposer waited in vain (its peers never arrived while it waited).
    pub fn missed(&self) -> bool {
        self.missed.load(Ordering::SeqCst)
    }
}

struct Fake {
    proposer: Reply,
    aggregator: Reply,
    gate: Option<Arc<Gate>>,
    bodies: Mutex<Vec<Value>>,
}

/// One running fake model.
pub struct FakeModel {
    pub base_url: String,
    fake: Arc<Fake>,
}

impl FakeModel {
    pub async fn start(proposer: Reply, aggregator: Reply, gate: Option<Arc<Gate>>) -> FakeModel {
        let fake = Arc::new(Fake {
            proposer,
            aggregator,
            gate,
            bodies: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(answer))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeModel {
            base_url: format!("http://{addr}/v1"),
            fake,
        }
    }

    /// The candidate named `name` pointing at this fake.
    pub fn config(&self, name: &str) -> ModelConfig {
        ModelConfig {
            name: name.into(),
            kind: ModelKind::Openai,
            model: format!("{name}-model"),
            base_url: self.base_url.clone(),
            context_window: 64_000,
            api_key: None,
            options: Default::default(),
        }
    }

    /// Every request body received, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.fake.bodies.lock().unwrap().clone()
    }

    /// The user message of every aggregation request received.
    pub fn aggregations(&self) -> Vec<String> {
        self.bodies()
            .iter()
            .map(user_text)
            .filter(|t| is_aggregation(t))
            .collect()
    }

    /// The user message of every proposer request received.
    pub fn proposals(&self) -> Vec<String> {
        self.bodies()
            .iter()
            .map(user_text)
            .filter(|t| !is_aggregation(t))
            .collect()
    }
}

fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn is_aggregation(text: &str) -> bool {
    text.contains("<draft n=\"1\">")
}

async fn answer(State(fake): State<Arc<Fake>>, Json(body): Json<Value>) -> Response {
    let user = user_text(&body);
    fake.bodies.lock().unwrap().push(body);
    let reply = if is_aggregation(&user) {
        fake.aggregator.clone()
    } else {
        if let Some(gate) = &fake.gate {
            let opened = tokio::time::timeout(Duration::from_secs(5), gate.barrier.wait()).await;
            if opened.is_err() {
                gate.missed.store(true, Ordering::SeqCst);
                return (StatusCode::BAD_REQUEST, "the other proposers never came").into_response();
            }
        }
        fake.proposer.clone()
    };
    match reply {
        Reply::Status(code) => (
            StatusCode::from_u16(code).unwrap(),
            Json(json!({"error": {"message": "fake failure", "type": "server_error"}})),
        )
            .into_response(),
        Reply::Text(t) => Json(json!({
            "id": "chatcmpl-moa",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": t},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        }))
        .into_response(),
    }
}
