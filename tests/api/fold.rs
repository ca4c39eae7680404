//! Chunked folding of rendered prompts (`/v1/chat/completions`, `/v1/summarize`): a
//! prompt larger than the model's window reaches a fake upstream in calls that each fit,
//! every turn in exactly one of them, and the client's own instructions only in the last.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::helpers::{spawn_app_with, TestApp};
use crate::upstreams::{config, openai};

const WINDOW: u64 = 3_000;

/// An OpenAI upstream answering call `n` (from 1) with `summary of pass n`.
async fn counting_upstream() -> MockServer {
    let server = MockServer::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(move |_: &Request| {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            ResponseTemplate::new(200).set_body_json(json!({
                "id": "x", "object": "chat.completion", "created": 1, "model": "gpt-test",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("summary of pass {n}")}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            }))
        })
        .mount(&server)
        .await;
    server
}

async fn app_with_small_window(server: &MockServer) -> TestApp {
    let mut model = openai("local", server);
    model.context_window = WINDOW;
    spawn_app_with(|c| c.llm = config(vec![model])).await
}

/// The upstream's requests as (system + user text, max_tokens).
async fn calls(server: &MockServer) -> Vec<(String, u64)> {
    let requests = server.received_requests().await.unwrap();
    requests
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            let text = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join("\n");
            (text, body["max_tokens"].as_u64().unwrap())
        })
        .collect()
}

/// `n` turns of about 100 tokens, each with a unique marker `Tnn;`.
fn turns(n: usize, label: impl Fn(usize) -> &'static str) -> String {
    (0..n)
        .map(|i| format!("[{}]: T{i:02}; {}", label(i), "word ".repeat(78)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Every call fits the window (chars/4), and every turn marker is in exactly one call.
fn check_calls(calls: &[(String, u64)], n: usize) {
    assert!(calls.len() >= 2, "{} calls", calls.len());
    for (text, max_tokens) in calls {
        let tokens = text.encode_utf16().count().div_ceil(4) as u64;
        assert!(tokens + max_tokens <= WINDOW, "{tokens} + {max_tokens}");
    }
    for i in 0..n {
        let marker = format!("T{i:02};");
        let seen = calls.iter().filter(|(t, _)| t.contains(&marker)).count();
        assert_eq!(seen, 1, "{marker} in {seen} calls");
    }
}

#[tokio::test]
async fn a_pi_prompt_larger_than_the_window_is_folded_and_answered_by_the_client_instructions() {
    let server = counting_upstream().await;
    let app = app_with_small_window(&server).await;
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\n<previous-summary>\nPREVIOUS-GOAL\n</previous-summary>\n\nMerge the new messages into the summary. CLIENT-INSTRUCTIONS",
        turns(60, |i| if i % 2 == 0 { "User" } else { "Assistant" })
    );
    let res = app
        .post_json(
            "/v1/chat/completions",
            &json!({"model": "local", "max_tokens": 400, "messages": [
                {"role": "system", "content": "CLIENT-SYSTEM"},
                {"role": "user", "content": prompt}
            ]}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    let calls = calls(&server).await;
    check_calls(&calls, 60);
    let n = calls.len();
    assert!(n >= 3, "{n} calls");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        format!("summary of pass {n}")
    );
    assert_eq!(body["usage"]["prompt_tokens"], 100 * n as u64);
    let (last, max_tokens) = &calls[n - 1];
    assert_eq!(*max_tokens, 400);
    assert!(last.starts_with(
        "CLIENT-SYSTEM\n<conversation>\n[Earlier conversation, summarized]: summary of pass "
    ));
    assert!(last.contains(&format!("summary of pass {}\n\n[", n - 1)));
    assert!(last.ends_with("PREVIOUS-GOAL\n</previous-summary>\n\nMerge the new messages into the summary. CLIENT-INSTRUCTIONS"));
    for (text, _) in &calls[..n - 1] {
        assert!(!text.contains("CLIENT") && !text.contains("PREVIOUS-GOAL"));
    }
    // Each folding pass after the first updates the previous pass's summary.
    assert!(calls[1].0.contains("summary of pass 1"));
}

#[tokio::test]
async fn a_hermes_prompt_without_max_tokens_is_folded_in_its_own_labels() {
    let server = counting_upstream().await;
    let app = app_with_small_window(&server).await;
    let prompt = format!(
        "PREAMBLE\n\nPREVIOUS SUMMARY:\nEARLIER-WORK\n\nTURNS:\n{}\n\nWrite the summary. HERMES-INSTRUCTIONS",
        turns(50, |i| if i % 2 == 0 { "USER" } else { "ASSISTANT" })
    );
    let res = app
        .post_json(
            "/v1/chat/completions",
            &json!({"model": "some-aux-model", "messages": [{"role": "user", "content": prompt}]}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let calls = calls(&server).await;
    check_calls(&calls, 50);
    let last = &calls.last().unwrap().0;
    assert!(last.starts_with(
        "PREAMBLE\n\nPREVIOUS SUMMARY:\nEARLIER-WORK\n\nTURNS:\n[EARLIER TURNS, SUMMARIZED]: summary of pass "
    ));
    assert!(last.ends_with("HERMES-INSTRUCTIONS"));
    assert!(calls[..calls.len() - 1]
        .iter()
        .all(|(t, _)| !t.contains("EARLIER-WORK") && !t.contains("HERMES")));
}

#[tokio::test]
async fn the_remote_endpoint_folds_too_and_a_fitting_prompt_is_one_call() {
    let server = counting_upstream().await;
    let app = app_with_small_window(&server).await;
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\nSummarize.",
        turns(40, |_| "User")
    );
    let res = app
        .post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "SYS", "prompt": prompt, "maxTokens": 300}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    // The passes, then the short summary's call over the folded summary.
    let mut folded = calls(&server).await;
    let short = folded.pop().unwrap();
    check_calls(&folded, 40);
    assert_eq!(body["summary"], format!("summary of pass {}", folded.len()));
    assert!(short.0.contains(&format!(
        "<summary>\nsummary of pass {}\n</summary>",
        folded.len()
    )));
    assert_eq!(
        body["shortSummary"],
        format!("summary of pass {}", folded.len() + 1)
    );

    let small =
        "<conversation>\n[User]: T00; hello\n\n[User]: T01; again\n</conversation>\n\nSummarize.";
    let res = app
        .post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "SYS", "prompt": small, "maxTokens": 300}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let all = calls(&server).await;
    assert_eq!(
        all.len(),
        folded.len() + 3,
        "one call, and its short summary's"
    );
    assert_eq!(all[all.len() - 2].0, format!("SYS\n{small}"));
}

#[tokio::test]
async fn a_context_overflow_folds_the_facade_prompt_for_the_smaller_window() {
    use crate::model_servers::OpenAiServer;
    let server = MockServer::start().await;
    // compactd is told 64,000 tokens; the server has 4,000 and counts 3 characters a token.
    let model = OpenAiServer::new(4_000);
    let answered = model.answered.clone();
    Mock::given(method("POST"))
        .respond_with(model)
        .mount(&server)
        .await;
    let llm = config(vec![openai("local", &server)]);
    let app = spawn_app_with(move |c| c.llm = llm).await;
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\nSummarize. CLIENT-INSTRUCTIONS",
        turns(60, |i| if i % 2 == 0 { "User" } else { "Assistant" })
    );
    let res = app
        .post_json(
            "/v1/chat/completions",
            &json!({"max_tokens": 500, "messages": [{"role": "user", "content": prompt}]}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["model"], "local/gpt-test", "{body}");
    let received = server.received_requests().await.unwrap();
    let answered = answered.load(Ordering::SeqCst);
    assert!(
        answered >= 2 && received.len() > answered,
        "{answered} of {}",
        received.len()
    );
    let last: Value = serde_json::from_slice(&received.last().unwrap().body).unwrap();
    let text = last["messages"][0]["content"].as_str().unwrap();
    assert!(text.starts_with("<conversation>\n[Earlier conversation, summarized]: "));
    assert!(text.ends_with("CLIENT-INSTRUCTIONS"));
}

#[tokio::test]
async fn a_folding_pass_the_upstream_truncated_silently_is_reported_in_the_answer() {
    use crate::model_servers::OpenAiServer;
    let server = MockServer::start().await;
    // The server keeps 500 of its tokens (1,500 characters) and says nothing.
    Mock::given(method("POST"))
        .respond_with(OpenAiServer::new(500).truncating())
        .mount(&server)
        .await;
    let app = app_with_small_window(&server).await;
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\nSummarize.",
        turns(60, |_| "User")
    );
    let body: Value = app
        .post_json(
            "/v1/summarize",
            &json!({"systemPrompt": "SYS", "prompt": prompt, "maxTokens": 300}),
        )
        .await
        .json()
        .await
        .unwrap();
    let calls = server.received_requests().await.unwrap().len();
    assert!(calls >= 2, "{calls}");
    let warnings = body["warnings"].as_array().unwrap();
    // The folding passes' warnings too, not only the final call's.
    assert!(warnings.len() >= 2, "{body}");
    assert!(warnings[0].as_str().unwrap().contains("local"), "{body}");
}
