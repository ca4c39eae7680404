//! Each provider configured the way `docs/configuration.md` shows (a TOML file loaded by
//! `Config::load_from`), against the fakes with the real servers' rules
//! (`tests/support/model_servers.rs`): OpenAI reasoning models, Anthropic extended
//! thinking, Azure OpenAI, a gateway with extra headers and query parameters, and a
//! server that cuts the prompt silently.

use std::sync::atomic::Ordering;
use std::time::Duration;

use compactd::config::{Config, ConfigError, LlmConfig};
use compactd::summarize::llm::Engine;
use compactd::summarize::{Mode, Silent, Summarize, SummarizerKind, SummaryRequest};
use serde_json::Value;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use crate::helpers::*;
use crate::model_servers::{openai_error, AnthropicServer, OpenAiServer};

/// `Config::load_from` on `toml` written to a file of its own, with `env` as the environment.
fn load_config(toml: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let file = std::env::temp_dir().join(format!(
        "compactd-providers-{}-{}.toml",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::write(&file, toml).unwrap();
    let loaded = Config::load_from(Some(&file), |k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    });
    let _ = std::fs::remove_file(&file);
    loaded
}

/// The summarizer settings of a config file (and environment), with test timeouts.
fn load(toml: &str, env: &[(&str, &str)]) -> LlmConfig {
    let mut llm = load_config(toml, env).expect("the configuration loads").llm;
    llm.upstream_timeout = Duration::from_secs(3);
    llm.deadline = Duration::from_secs(10);
    llm.backoff_base = Duration::from_millis(5);
    llm.backoff_cap = Duration::from_millis(20);
    llm
}

/// The settings of one `[[models]]` entry whose URLs name the fake `server` as `{server}`.
fn config_for(server: &MockServer, entry: &str, env: &[(&str, &str)]) -> LlmConfig {
    let entry = entry.replace("{server}", &server.uri());
    load(&format!("[[models]]\n{entry}\n"), env)
}

/// A fake model server that answers every POST, whatever its path, with `responder`.
async fn serve(responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

fn body(r: &wiremock::Request) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

#[tokio::test]
async fn an_openai_reasoning_model_gets_max_completion_tokens_and_no_temperature() {
    let server = MockServer::start().await;
    let model = OpenAiServer::new(200_000).reasoning();
    let answered = model.answered.clone();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(model)
        .mount(&server)
        .await;
    let llm = config_for(
        &server,
        r#"
            kind = "openai"
            model = "o4-mini"
            base_url = "{server}/v1"
            api_key_env = "OPENAI_API_KEY"
            context_window = 200000
            reasoning_effort = "high"
            temperature = 0.2
            "#,
        &[("OPENAI_API_KEY", "sk-test-openai")],
    );
    let engine = engine(&llm);
    let s = engine
        .summarize(&request("the conversation"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    assert_eq!(s.usage.reasoning, 64, "{:?}", s.usage);
    assert_eq!(answered.load(Ordering::SeqCst), 1, "no 400 first");
    let sent = body(&requests(&server).await[0]);
    assert_eq!(sent["max_completion_tokens"], 512);
    assert_eq!(sent["reasoning_effort"], "high");
    assert!(
        sent.get("max_tokens").is_none() && sent.get("temperature").is_none(),
        "{sent}"
    );
}

#[tokio::test]
async fn an_unknown_reasoning_model_is_learned_from_its_400s_once() {
    let server = serve(OpenAiServer::new(200_000).reasoning()).await;
    // A gateway's own id: nothing says it is a reasoning model.
    let llm = config_for(
        &server,
        r#"
            kind = "openai"
            model = "house-reasoner"
            base_url = "{server}/v1"
            temperature = 0.2
            "#,
        &[],
    );
    let engine = engine(&llm);
    let s = engine
        .summarize(&request("one"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    assert_eq!(s.retries, 0, "learning is not retrying");
    let sent: Vec<Value> = requests(&server).await.iter().map(body).collect();
    assert_eq!(
        sent.len(),
        3,
        "max_tokens refused, temperature refused, answered"
    );
    assert!(sent[0].get("max_tokens").is_some());
    assert!(sent[1].get("max_completion_tokens").is_some() && sent[1]["temperature"] == 0.2);
    assert!(sent[2].get("temperature").is_none());
    // Remembered for the candidate: the next call is answered at once.
    engine
        .summarize(&request("two"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(requests(&server).await.len(), 4);
}

#[tokio::test]
async fn a_server_without_max_completion_tokens_gets_max_tokens_back() {
    let server = serve(OpenAiServer::new(200_000).legacy()).await;
    let llm = config_for(
        &server,
        r#"
            kind = "openai"
            model = "o3-mini"
            base_url = "{server}/v1"
            "#,
        &[],
    );
    let engine = engine(&llm);
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    let sent: Vec<Value> = requests(&server).await.iter().map(body).collect();
    assert_eq!(sent.len(), 2);
    assert!(sent[1].get("max_tokens").is_some());
}

#[tokio::test]
async fn the_token_parameter_is_switched_only_once() {
    // A server that refuses both: compactd does not flip back and forth.
    let refusal = openai_error(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        Some("max_tokens"),
        Some("unsupported_parameter"),
    );
    let server = serve(refusal).await;
    let llm = config_for(
        &server,
        "kind = \"openai\"\nmodel = \"m\"\nbase_url = \"{server}/v1\"",
        &[],
    );
    let engine = engine(&llm);
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn anthropic_extended_thinking_follows_the_budget_rules() {
    let server = MockServer::start().await;
    let model = AnthropicServer::new(200_000, 64_000);
    let answered = model.answered.clone();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .respond_with(model)
        .mount(&server)
        .await;
    let llm = config_for(
        &server,
        r#"
            kind = "anthropic"
            model = "claude-sonnet-4-5"
            base_url = "{server}"
            api_key_env = "ANTHROPIC_API_KEY"
            context_window = 200000
            thinking_budget = 4096
            max_output_tokens = 32000
            "#,
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    let engine = engine(&llm);
    for max_tokens in [512, 13_107, 0, 40_000] {
        let req = SummaryRequest {
            max_tokens,
            ..request(&format!("conversation {max_tokens}"))
        };
        let s = engine
            .summarize(&req, Mode::WithFallback, &Silent)
            .await
            .unwrap();
        assert_eq!(s.summarizer, SummarizerKind::Llm, "{max_tokens}");
        assert_eq!(
            s.text, "## Goal\nThought it through.",
            "thinking is never the summary"
        );
    }
    assert_eq!(answered.load(Ordering::SeqCst), 4);
    let sent: Vec<Value> = requests(&server).await.iter().map(body).collect();
    assert_eq!(sent[0]["thinking"]["budget_tokens"], 4096);
    assert_eq!(sent[0]["max_tokens"], 4096 + 512);
    assert_eq!(
        sent[2]["max_tokens"], 32_000,
        "no cap: the candidate's output limit"
    );
    assert_eq!(sent[3]["max_tokens"], 32_000, "capped");
}

#[test]
fn anthropic_thinking_rules_are_refused_at_start_up() {
    for (toml, named) in [
        ("thinking_budget = 512", "thinking_budget"),
        ("thinking_budget = 8192", "max_output_tokens"),
        ("thinking_budget = 2048\ntemperature = 0.5", "temperature"),
        ("thinking_budget = 2048\ntop_p = 0.5", "top_p"),
    ] {
        let entry = format!("[[models]]\nkind = \"anthropic\"\nmodel = \"claude-x\"\n{toml}\n");
        let err = load_config(&entry, &[]).unwrap_err().to_string();
        assert!(err.contains(&format!("models[0].{named}")), "{toml}: {err}");
    }
}

#[tokio::test]
async fn azure_openai_url_and_key_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/summarizer-4o/chat/completions"))
        .and(query_param("api-version", "2024-10-21"))
        .and(header("api-key", "azure-test-key"))
        .respond_with(OpenAiServer::new(128_000))
        .expect(1)
        .mount(&server)
        .await;
    let llm = config_for(
        &server,
        r#"
            name = "azure"
            kind = "azure-openai"
            model = "gpt-4o"
            deployment = "summarizer-4o"
            api_version = "2024-10-21"
            base_url = "{server}"
            api_key_env = "AZURE_OPENAI_API_KEY"
            "#,
        &[("AZURE_OPENAI_API_KEY", "azure-test-key")],
    );
    let engine = engine(&llm);
    let s = engine
        .summarize(&request("p"), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.model, "azure/gpt-4o");
    let sent = &requests(&server).await[0];
    assert!(sent.headers.get("authorization").is_none());
    let described = engine.describe().to_string();
    assert!(!described.contains("azure-test-key"), "{described}");
}

#[tokio::test]
async fn a_gateway_gets_its_headers_and_query_and_its_key_never_shows() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/chat/completions"))
        .and(header(
            "HTTP-Referer",
            "https://github.com/example/compactd",
        ))
        .and(header("X-Title", "compactd"))
        .and(header("X-Gateway-Key", "gw-SECRET-777"))
        .and(query_param("route", "fallback"))
        .respond_with(ResponseTemplate::new(400).set_body_json(serde_json::json!({
            "error": {"message": "bad gateway key gw-SECRET-777", "code": 400}
        })))
        .mount(&server)
        .await;
    let llm = config_for(
        &server,
        r#"
            name = "openrouter"
            kind = "openai"
            model = "anthropic/claude-haiku-4.5"
            base_url = "{server}/api/v1"
            headers = { "HTTP-Referer" = "https://github.com/example/compactd", "X-Title" = "compactd" }
            headers_env = { "X-Gateway-Key" = "GATEWAY_KEY" }
            query = { route = "fallback" }
            "#,
        &[("GATEWAY_KEY", "gw-SECRET-777")],
    );
    assert!(!format!("{llm:?}").contains("gw-SECRET-777"));
    let engine = engine(&llm);
    assert!(!format!("{engine:?}").contains("gw-SECRET-777"));
    let described = engine.describe().to_string();
    assert!(!described.contains("gw-SECRET-777"), "{described}");
    assert!(
        described.contains(r#""headers":["HTTP-Referer","X-Title","X-Gateway-Key"]"#),
        "{described}"
    );
    match engine
        .summarize(&request("p"), Mode::ModelOnly, &Silent)
        .await
    {
        Err(e) => {
            let e = e.to_string();
            assert!(e.contains("bad gateway key [REDACTED]"), "{e}");
        }
        Ok(s) => panic!("{s:?}"),
    }
    assert_eq!(requests(&server).await.len(), 1, "all matchers held");
}

#[tokio::test]
async fn a_silently_truncating_server_is_noticed() {
    let server = serve(OpenAiServer::new(4_096).truncating()).await;
    let llm = config_for(
        &server,
        r#"
            name = "local"
            kind = "openai"
            model = "qwen2.5-coder:7b"
            base_url = "{server}/v1"
            context_window = 32768
            "#,
        &[],
    );
    let engine = engine(&llm);
    let big = "fn main() { let x = compute(1); }\n".repeat(1_500);
    let s = engine
        .summarize(&request(&big), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert_eq!(s.summarizer, SummarizerKind::Llm);
    assert_eq!(s.warnings.len(), 1, "{s:?}");
    assert!(
        s.warnings[0].contains("local/qwen2.5-coder:7b reported 4096 prompt tokens"),
        "{}",
        s.warnings[0]
    );
    // A prompt the server keeps whole: no warning.
    let s = engine
        .summarize(&request(&big[..6_000]), Mode::WithFallback, &Silent)
        .await
        .unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

/// Every TOML example of the "Model servers" section of `docs/configuration.md` loads as it
/// is written.
#[test]
fn the_documented_examples_load() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    let start = page.find("## Model servers").expect("the section");
    let end = start
        + page[start..]
            .find("\n## When the request")
            .expect("its end");
    let section = &page[start..end];
    let blocks: Vec<&str> = section
        .split("```toml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    assert_eq!(blocks.len(), 6, "one example per provider");
    let env = [
        ("OPENAI_API_KEY", "sk-o"),
        ("ANTHROPIC_API_KEY", "sk-a"),
        ("AZURE_OPENAI_API_KEY", "az"),
        ("OPENROUTER_API_KEY", "or"),
    ];
    for block in blocks {
        let llm = load(block, &env);
        assert_eq!(llm.models.len(), 1, "{block}");
        Engine::new(&llm, fallback()).unwrap_or_else(|e| panic!("{block}: {e}"));
    }
}
