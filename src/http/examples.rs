//! Example requests of the OpenAPI description, shared by the handlers' annotations (and
//! the schemathesis run, which starts from them to reach the 200 answers).

use serde_json::{json, Value};

/// A small v3 session with something to summarize (`keepRecentTokens` 5): the example
/// request of the session endpoints, which also lets schemathesis reach their 200 answers.
pub fn session_example() -> Value {
    json!({
        "entries": example_entries(),
        "settings": {"keepRecentTokens": 5}
    })
}

/// The same session as a pi session file.
pub fn session_jsonl_example() -> Value {
    let lines: Vec<String> = example_entries().iter().map(Value::to_string).collect();
    Value::String(lines.join("\n") + "\n")
}

/// The example session with a second branch from `a2`; going back there leaves `a5`.
pub fn branch_example() -> Value {
    let mut entries = example_entries();
    entries.push(message("b1", "a2", 6, json!({"role": "user", "content": [{"type": "text", "text": "Try another approach instead."}]})));
    json!({"entries": entries, "oldLeafId": "a5", "targetId": "b1"})
}

/// A remoteEndpoint body.
pub fn summarize_example() -> Value {
    json!({
        "systemPrompt": "",
        "prompt": "<conversation>\n[User]: Fix the failing test in src/lib.rs\n\n[Assistant]: add subtracts; fixed it to a + b.\n</conversation>"
    })
}

/// A Responses API conversation to compact, with a tool call and a kept option.
pub fn responses_compact_example() -> Value {
    json!({
        "model": "default",
        "input": [
            {"role": "user", "content": "Fix the failing test in src/lib.rs. Never push to main."},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"src/lib.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "pub fn add(a: i32, b: i32) -> i32 { a - b }"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "add subtracts; fixed it to a + b."}]},
            {"role": "user", "content": "Now run the tests."}
        ],
        "keepRecentTokens": 20
    })
}

/// A hermes conversation: system prompt, an ask, tool work, and the latest ask.
pub fn hermes_example() -> Value {
    json!({
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test in src/lib.rs"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/lib.rs\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn add(a: i32, b: i32) -> i32 { a - b }"},
            {"role": "assistant", "content": "add subtracts; fixed it to a + b."},
            {"role": "user", "content": "Thanks. Now add a test for negative numbers."},
            {"role": "assistant", "content": "Added `add_handles_negatives`; cargo test passes."},
            {"role": "user", "content": "Commit it."}
        ],
        "contextLength": 200000,
        "settings": {"protectFirstN": 1},
        "state": {"compressionCount": 0, "previousSummary": null},
        "today": "2026-01-15"
    })
}

pub fn hermes_recall_example() -> Value {
    json!({
        "messages": [
            {"role": "user", "content": "Fix the failing test in src/lib.rs"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"cargo test\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "test add_handles_negatives ... FAILED: expected -3, got 1"}
        ],
        "q": "add_handles_negatives",
        "limit": 5
    })
}

fn message(id: &str, parent: &str, second: u32, message: Value) -> Value {
    json!({
        "type": "message", "id": id, "parentId": parent,
        "timestamp": format!("2026-01-01T00:00:{second:02}.000Z"),
        "message": message
    })
}

fn example_entries() -> Vec<Value> {
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    let mut first = message(
        "a1",
        "",
        1,
        json!({"role": "user", "content": text("Fix the failing test in src/lib.rs")}),
    );
    first["parentId"] = Value::Null;
    vec![
        json!({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/repo"}),
        first,
        message(
            "a2",
            "a1",
            2,
            json!({"role": "assistant", "content": [{"type": "text", "text": "Reading it."}, {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/lib.rs"}}], "stopReason": "toolUse"}),
        ),
        message(
            "a3",
            "a2",
            3,
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": text("fn add(a: i32, b: i32) -> i32 { a - b }"), "isError": false}),
        ),
        message(
            "a4",
            "a3",
            4,
            json!({"role": "assistant", "content": text("add subtracts; fixed it to a + b."), "stopReason": "stop"}),
        ),
        message(
            "a5",
            "a4",
            5,
            json!({"role": "user", "content": text("Thanks. Now run the tests.")}),
        ),
    ]
}
