//! Expected results come from hermes-agent 0.19.0's `_prune_old_tool_results` and
//! `_truncate_tool_call_args_json` run on the same messages.

use serde_json::json;

use super::*;

fn x(c: &str, n: usize) -> String {
    c.repeat(n)
}

fn content(p: &Pruned, i: usize) -> &Value {
    &p.messages[i]["content"]
}

/// Ten tool results of 300 distinct characters: E = 85 each.
fn ten() -> Vec<Value> {
    (0..10u8)
        .map(|i| {
            let c = char::from(b'A' + i).to_string();
            json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": c.repeat(300)})
        })
        .collect()
}

#[test]
fn boundary_walk() {
    let msgs = ten();
    assert_eq!(tokens::budget(&msgs[0]), 85);
    // (protect_last_n, budget) -> messages pruned (hermes: indexes 0..boundary change).
    let cases = [
        (1, 200, 7),
        (5, 200, 5),
        (4, 0, 6),
        (20, 0, 0),
        (3, 1_000_000_000, 0),
        // The message that overflows stays protected.
        (0, 85, 8),
        (0, 84, 9),
        (2, 170, 7),
    ];
    for (n, b, want) in cases {
        assert_eq!(prune_boundary(&msgs, n, b), want, "{n} {b}");
        let p = prune(&msgs, n, b);
        assert_eq!(p.changed, (0..want).collect::<Vec<_>>(), "{n} {b}");
        assert_eq!(p.pruned, want);
    }
    assert_eq!(
        prune(&[], 3, 100),
        Pruned {
            messages: vec![],
            changed: vec![],
            pruned: 0
        }
    );
}

/// The mixed session the reference was run on (protect 5, budget 0: boundary 19).
fn scenario() -> Vec<Value> {
    let args = |v: Value| Value::String(v.to_string());
    json!([
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"cargo test\"}"}},
            {"id": "r1", "type": "function", "function": {"name": "read_file", "arguments": args(json!({"path": "src/é.rs", "content_hint": x("x", 600)}))}},
            "junk",
            {"id": 1, "type": "function", "function": {"name": "web_search", "arguments": "{\"query\":\"q\"}"}},
            {"type": "function", "function": {"name": "patch", "arguments": format!("{{\"path\":\"p.py\",\"pad\":\"{}\"}}", x("p", 499))}},
            {"id": "w1", "type": "function", "function": {"name": "write_file", "arguments": format!("{{\"path\":\"w\",\"content\":\"{}\",\"pad\":\"{}\"}}", x("c", 100), x("d", 380))}},
            {"id": "n1", "function": {"arguments": "{\"k\":1}"}}
        ]},
        {"role": "tool", "tool_call_id": "t1", "content": format!("{{\"exit_code\": 0, \"output\": \"{}\"}}", x("ok\\n", 100))},
        {"role": "tool", "tool_call_id": "r1", "content": x("😀", 250)},
        {"role": "tool", "tool_call_id": 1.0, "content": x("r", 201)},
        {"role": "tool", "tool_call_id": true, "content": x("s", 201)},
        {"role": "tool", "content": x("u", 300)},
        {"role": "tool", "tool_call_id": "n1", "content": x("v", 300)},
        {"role": "tool", "tool_call_id": "zz", "content": x("w", 200)},
        {"role": "tool", "tool_call_id": "zz", "content": format!("[Duplicate tool output elsewhere{}", x("y", 300))},
        {"role": "tool", "tool_call_id": "zz", "content": CLEARED_PLACEHOLDER},
        {"role": "tool", "tool_call_id": "i1", "content": [{"type": "text", "text": x("t", 500)}, {"type": "image_url", "image_url": {"url": "data:x"}}, "s", {"type": "input_image", "image_url": "u"}, {"type": "image", "source": {}}]},
        {"role": "tool", "tool_call_id": "i2", "content": [{"type": "text", "text": x("t", 500)}]},
        {"role": "tool", "tool_call_id": "m1", "content": {"_multimodal": true, "content": [], "text_summary": x("é", 250)}},
        {"role": "tool", "tool_call_id": "m2", "content": {"_multimodal": true, "content": []}},
        {"role": "tool", "tool_call_id": "m3", "content": {"_multimodal": true, "text_summary": ["a", "b"]}},
        {"role": "tool", "tool_call_id": "m4", "content": {"_multimodal": false, "text_summary": "x"}},
        {"role": "tool", "tool_call_id": "d", "content": x("D", 250), "extra": 1},
        {"role": "user", "content": x("D", 250)},
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "tool_call_id": "d2", "content": x("D", 250)},
        {"role": "tool", "tool_call_id": "d2", "content": x("E", 199)},
        {"role": "tool", "tool_call_id": "d3", "content": x("E", 199)},
        {"role": "user", "content": "end"}
    ])
    .as_array()
    .cloned()
    .unwrap_or_default()
}

#[test]
fn scenario_matches_the_reference() {
    let input = scenario();
    let before = input.clone();
    let p = prune(&input, 5, 0);
    assert_eq!(input, before, "the input is never modified");
    assert_eq!(p.changed, vec![2, 3, 4, 5, 6, 7, 8, 12, 14, 15, 16, 18]);
    assert_eq!(p.pruned, 11);
    let s = |i| content(&p, i).as_str().unwrap_or_default().to_owned();
    assert_eq!(
        s(3),
        "[terminal] ran `cargo test` -> exit 0, 1 lines output"
    );
    assert_eq!(s(4), "[read_file] read src/é.rs from line 1 (250 chars)");
    // Ids 1, 1.0 and true are one dictionary key.
    assert_eq!(s(5), "[web_search] query='q' (201 chars result)");
    assert_eq!(s(6), "[web_search] query='q' (201 chars result)");
    // No tool_call_id: "" — the id-less patch call overwrote the non-object call's "".
    assert_eq!(s(7), "[patch] replace in p.py (300 chars result)");
    assert_eq!(s(8), "[unknown] k=1 (300 chars result)");
    assert_eq!(s(14), format!("[screenshot removed] {}", x("é", 200)));
    assert_eq!(
        s(15),
        "[screenshot removed] [screenshot removed to save context]"
    );
    assert_eq!(s(16), "[screenshot removed] ['a', 'b']");
    // Older duplicate (key order and extra fields kept); the user copy is not a tool.
    assert_eq!(
        serde_json::to_string(&p.messages[18]).unwrap_or_default(),
        format!(r#"{{"role":"tool","tool_call_id":"d","content":"{DUPLICATE_MARKER}","extra":1}}"#)
    );
    let removed = json!({"type": "text", "text": SCREENSHOT_REMOVED});
    assert_eq!(
        content(&p, 12),
        &json!([{"type": "text", "text": x("t", 500)}, removed, "s", removed, removed])
    );
    for i in [0, 1, 9, 10, 11, 13, 17, 19, 20, 21, 22, 23] {
        assert_eq!(p.messages[i], input[i], "{i}");
    }
}

#[test]
fn scenario_arguments_are_shrunk_in_place() {
    let p = prune(&scenario(), 5, 0);
    let calls = p.messages[2]["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let args: Vec<&str> = calls
        .iter()
        .filter_map(|c| c["function"]["arguments"].as_str())
        .collect();
    let cut = |c: &str| format!("{}...[truncated]", x(c, 200));
    assert_eq!(
        args,
        vec![
            "{\"command\": \"cargo test\"}".to_owned(),
            format!(
                "{{\"path\": \"src/é.rs\", \"content_hint\": \"{}\"}}",
                cut("x")
            ),
            "{\"query\":\"q\"}".to_owned(),
            format!("{{\"path\": \"p.py\", \"pad\": \"{}\"}}", cut("p")),
            format!(
                "{{\"path\": \"w\", \"content\": \"{}\", \"pad\": \"{}\"}}",
                x("c", 100),
                cut("d")
            ),
            "{\"k\":1}".to_owned(),
        ]
    );
    assert_eq!(calls[2], json!("junk"));
    assert_eq!(
        calls[1]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "id".to_owned(),
            "type".to_owned(),
            "function".to_owned()
        ])
    );
}

#[test]
fn dedupe_reaches_into_the_protected_tail() {
    let msgs = vec![
        json!({"role": "tool", "tool_call_id": "a", "content": x("z", 200)}),
        json!({"role": "tool", "tool_call_id": "b", "content": x("z", 200)}),
        json!({"role": "tool", "tool_call_id": "c", "content": x("z", 200)}),
    ];
    let p = prune(&msgs, 10, 0);
    assert_eq!(p.changed, vec![0, 1]);
    assert_eq!(content(&p, 1), &json!(DUPLICATE_MARKER));
    assert_eq!(content(&p, 2), &json!(x("z", 200)));
}

#[test]
fn h1_shapes_do_not_panic() {
    let msgs = vec![
        json!({"role": "assistant", "tool_calls": [
            {"id": "f", "function": null},
            {"id": "g", "function": "text"},
            {"id": "h", "function": {"name": "terminal", "arguments": null}},
            {"id": ["unhashable"], "function": {"name": "x"}},
            {"id": "n", "function": {"name": null, "arguments": {"command": "ls"}}}
        ]}),
        json!({"role": "assistant", "tool_calls": 7}),
        json!({"role": "tool", "tool_call_id": "f", "content": x("a", 201)}),
        json!({"role": "tool", "tool_call_id": "g", "content": x("b", 201)}),
        json!({"role": "tool", "tool_call_id": "h", "content": x("c", 201)}),
        json!({"role": "tool", "tool_call_id": {"k": 1}, "content": x("d", 201)}),
        json!({"role": "tool", "tool_call_id": "n", "content": x("e", 201)}),
        json!({"role": "tool", "content": {"_multimodal": true, "text_summary": 5}}),
        json!({"role": null, "content": x("f", 201)}),
        json!("not a message"),
        json!({"role": "user", "content": "tail"}),
    ];
    let p = prune(&msgs, 1, 0);
    let s = |i| content(&p, i).as_str().unwrap_or_default().to_owned();
    assert_eq!(s(2), "[unknown] (201 chars result)");
    assert_eq!(s(3), "[unknown] (201 chars result)");
    assert_eq!(s(4), "[terminal] ran `` -> exit ?, 1 lines output");
    assert_eq!(s(5), "[unknown] (201 chars result)");
    assert_eq!(s(6), "[None] (201 chars result)");
    assert_eq!(
        s(7),
        "[screenshot removed] [screenshot removed to save context]"
    );
    assert_eq!(p.changed, vec![2, 3, 4, 5, 6, 7]);
}

#[test]
fn pass3_keeps_arguments_it_cannot_shrink() {
    let big_int = format!(r#"{{"big":{},"pad":"{}"}}"#, x("9", 4301), x("p", 300));
    let msgs = vec![
        json!({"role": "assistant", "tool_calls": [
            {"id": "a", "function": {"name": "t", "arguments": big_int}},
            {"id": "b", "function": {"name": "t", "arguments": x("n", 600)}},
            {"id": "c", "function": {"name": "t", "arguments": format!("{{\"a\": \"{}\"}}", x("q", 200)) + &x(" ", 300)}}
        ]}),
        json!({"role": "user", "content": "tail"}),
    ];
    let p = prune(&msgs, 1, 0);
    // Only the third changes: trailing whitespace is dropped by re-serializing.
    assert_eq!(p.changed, vec![0]);
    assert_eq!(p.pruned, 0);
    let calls = &p.messages[0]["tool_calls"];
    assert_eq!(calls[0], msgs[0]["tool_calls"][0]);
    assert_eq!(calls[1], msgs[0]["tool_calls"][1]);
    assert_eq!(
        calls[2]["function"]["arguments"],
        json!(format!("{{\"a\": \"{}\"}}", x("q", 200)))
    );
}
