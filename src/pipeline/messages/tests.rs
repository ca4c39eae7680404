use serde_json::{json, Value};

use super::*;

fn request(body: Value) -> MessagesRequest {
    serde_json::from_value(body).unwrap()
}

fn messages(body: Value) -> Vec<Value> {
    session_entries(&request(json!({"messages": body})).messages)
}

#[test]
fn tool_results_become_pi_tool_results_named_after_their_call() {
    let e = messages(json!([
        {"role": "user", "content": "Fix the bug"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look first", "signature": "s"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.rs"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "fn a() {}"}]},
            {"type": "text", "text": "go on"}
        ]}
    ]));
    assert_eq!(e[0]["type"], "session");
    assert_eq!(e[2]["message"]["content"][1]["type"], "toolCall");
    assert_eq!(e[2]["message"]["content"][1]["arguments"]["path"], "a.rs");
    assert_eq!(e[3]["message"]["role"], "toolResult");
    assert_eq!(e[3]["message"]["toolName"], "read");
    assert_eq!(e[3]["message"]["content"][0]["text"], "fn a() {}");
    assert_eq!(e[4]["message"]["content"][0]["text"], "go on");
    // The empty user message the cut is made at, last.
    assert_eq!(e[5]["message"]["content"][0]["text"], "");
    assert_eq!(e[5]["parentId"], "m4");
}

#[test]
fn unknown_blocks_images_and_documents_become_text() {
    let e = messages(json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "document", "title": "Spec", "source": {"type": "text", "media_type": "text/plain", "data": "the spec"}},
        {"type": "mystery", "x": 1, "blob": "Q".repeat(5000)}
    ]}]));
    let text = e[1]["message"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("[image: image/png]"), "{text}");
    assert!(!text.contains("AAAA"), "{text}");
    assert!(text.contains("the spec"), "{text}");
    assert!(
        text.contains("[mystery block]") && text.contains("\"x\":1"),
        "{text}"
    );
    // Long strings (base64 data) are elided, as on /v1/responses/compact.
    assert!(text.contains("[5000 characters]"), "{text}");
    assert!(!text.contains("QQQQ"), "{text}");
}

#[test]
fn a_fed_back_compaction_block_is_a_compaction_entry_keeping_what_follows() {
    let e = messages(json!([
        {"role": "assistant", "content": [{"type": "compaction", "content": "Earlier: fixed login.", "signature": "x"}]},
        {"role": "user", "content": "Now the logout"}
    ]));
    assert_eq!(e[1]["type"], "compaction");
    assert_eq!(e[1]["summary"], "Earlier: fixed login.");
    assert_eq!(e[1]["firstKeptEntryId"], e[2]["id"]);
}

#[test]
fn a_failed_compaction_block_stands_for_nothing() {
    let e = messages(json!([
        {"role": "assistant", "content": [{"type": "compaction", "content": null}]},
        {"role": "user", "content": "hi"}
    ]));
    assert_eq!(e.len(), 3);
}

#[test]
fn the_body_summarizes_everything_with_the_requests_budget_model_and_instructions() {
    let req = request(json!({
        "model": "claude-x", "max_tokens": 1000, "system": [{"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": "hi"}],
        "compaction": {"type": "summarize", "instructions": "Keep file names."}
    }));
    let body: Value = serde_json::from_slice(&compact_body(&req, 16_384).unwrap()).unwrap();
    assert_eq!(body["keepRecentTokens"], 0);
    assert_eq!(body["reserveTokens"], 1250);
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["promptOverride"], "Keep file names.");
    assert!(body["additionalContext"][0]
        .as_str()
        .unwrap()
        .ends_with("Be brief."));
}

#[test]
fn the_reserve_gives_exactly_max_tokens() {
    use crate::summarize::templates::four_fifths;
    for m in [1, 2, 3, 4, 5, 999, 4096, 64_000] {
        assert_eq!(four_fifths(reserve_for(m)), m, "{m}");
    }
}

#[test]
fn another_compaction_type_is_refused() {
    let req = request(
        json!({"messages": [{"role": "user", "content": "hi"}], "compaction": {"type": "clear"}}),
    );
    assert!(compact_body(&req, 16_384).is_err());
}

#[test]
fn the_blocks_encrypted_content_is_read_back_as_details_when_it_is_compactds() {
    let details = json!({"readFiles": ["a.rs"], "modifiedFiles": []});
    let e = messages(json!([
        {"role": "assistant", "content": [
            {"type": "compaction", "content": "s", "encrypted_content": details.to_string()}
        ]},
        {"role": "assistant", "content": [
            {"type": "compaction", "content": "t", "encrypted_content": "opaque bytes"}
        ]}
    ]));
    assert_eq!(e[1]["details"], details);
    assert!(e[2].get("details").is_none());
}

#[test]
fn max_tokens_only_lowers_the_configured_budget() {
    let body = |max_tokens: u64| -> Value {
        let req = request(
            json!({"max_tokens": max_tokens, "messages": [{"role": "user", "content": "hi"}],
                                 "compaction": {"type": "summarize"}}),
        );
        serde_json::from_slice(&compact_body(&req, 16_384).unwrap()).unwrap()
    };
    assert_eq!(body(64_000).get("reserveTokens"), None);
    assert_eq!(body(u64::MAX).get("reserveTokens"), None);
    assert_eq!(body(13_107).get("reserveTokens"), None);
    assert_eq!(body(13_106)["reserveTokens"], 16_383);
    assert_eq!(body(1_000)["reserveTokens"], 1_250);
}

#[test]
fn server_tool_results_are_tool_results_and_redacted_thinking_is_left_out() {
    let e = messages(json!([
        {"role": "user", "content": "Search the docs"},
        {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "ENCRYPTED"},
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "pi compaction"}},
            {"type": "web_search_tool_result", "tool_use_id": "srv_1",
             "content": [{"type": "web_search_result", "title": "Compaction", "url": "https://example.com/c"}]},
            {"type": "text", "text": "Found it."}
        ]}
    ]));
    assert_eq!(e[2]["message"]["content"][0]["type"], "toolCall");
    assert_eq!(e[2]["message"]["content"].as_array().unwrap().len(), 1);
    assert_eq!(e[3]["message"]["role"], "toolResult");
    assert_eq!(e[3]["message"]["toolName"], "web_search");
    let result = e[3]["message"]["content"][0]["text"].as_str().unwrap();
    assert!(result.contains("https://example.com/c"), "{result}");
    assert_eq!(e[4]["message"]["content"][0]["text"], "Found it.");
    assert!(!serde_json::to_string(&e).unwrap().contains("ENCRYPTED"));
}
