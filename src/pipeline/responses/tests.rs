use super::*;

fn wrapper() -> SummaryWrapper {
    summary_wrapper(&Wrappers::reference())
}

fn convert_str(body: &str) -> (Converted, Value) {
    let conv = convert(body, &wrapper()).unwrap();
    let session: Value = serde_json::from_str(&conv.session_json()).unwrap();
    (conv, session)
}

fn roles(session: &Value) -> Vec<String> {
    session["entries"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|e| match e["type"].as_str().unwrap() {
            "message" => e["message"]["role"].as_str().unwrap().to_string(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn calls_of_one_turn_are_one_assistant_entry_and_outputs_are_tool_results() {
    let body = r#"{"model":"m","input":[
        {"role":"user","content":"fix the bug"},
        {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"look first"}]},
        {"type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"a.rs\"}"},
        {"type":"function_call","call_id":"c2","name":"read","arguments":"not json"},
        {"type":"function_call_output","call_id":"c1","output":"fn a() {}"},
        {"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"b"}]},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}
    ]}"#;
    let (conv, session) = convert_str(body);
    assert_eq!(
        roles(&session),
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    let calls = &session["entries"][2]["message"]["content"];
    assert_eq!(
        calls[0],
        json!({"type": "thinking", "thinking": "look first"})
    );
    assert_eq!(calls[1]["arguments"], json!({"path": "a.rs"}));
    assert_eq!(calls[2]["arguments"], json!({"arguments": "not json"}));
    assert_eq!(session["entries"][3]["message"]["toolName"], "read");
    assert_eq!(conv.model.as_deref(), Some("m"));
    // The assistant entry starts at the reasoning item; the last one at item 6.
    assert_eq!(conv.entry_items["i2"], 1);
    assert_eq!(conv.entry_items["i5"], 6);
}

#[test]
fn the_output_is_the_summary_then_the_kept_items_byte_for_byte() {
    let body = r#"{"input":[{"role":"user","content":"one"},
        {"role":"assistant","content":"two"},
        {"role": "user" ,"content":"three",  "x-unknown": 1.50}]}"#;
    let (conv, _) = convert_str(body);
    let out = output(&conv, &wrapper(), "i3", "S");
    assert_eq!(out.len(), 2);
    let summary: Value = serde_json::from_str(out[0].get()).unwrap();
    assert_eq!(summary["role"], "user");
    assert_eq!(summary["content"][0]["text"], wrapper().wrap("S").as_str());
    assert_eq!(
        out[1].get(),
        r#"{"role": "user" ,"content":"three",  "x-unknown": 1.50}"#
    );
}

#[test]
fn a_fed_back_summary_is_the_previous_compaction() {
    let wrapped = wrapper().wrap("## Goal\nship it");
    let body = json!({"input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": wrapped}]},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok"},
    ]})
    .to_string();
    let (_, session) = convert_str(&body);
    assert_eq!(roles(&session), ["compaction", "user", "assistant"]);
    let c = &session["entries"][1];
    assert_eq!(c["summary"], "## Goal\nship it");
    assert_eq!(c["firstKeptEntryId"], "i2");
}

#[test]
fn a_string_input_is_one_user_message_and_options_pass_through() {
    let body = r#"{"input":"hello","instructions":"be terse","keepRecentTokens":5,"settings":{"reserveTokens":100}}"#;
    let (conv, session) = convert_str(body);
    assert_eq!(roles(&session), ["user"]);
    assert_eq!(session["keepRecentTokens"], 5);
    assert_eq!(session["settings"]["reserveTokens"], 100);
    assert_eq!(
        session["additionalContext"],
        json!([system_prompt_context("be terse")])
    );
    let out = output(&conv, &wrapper(), "i1", "S");
    assert_eq!(out[1].get(), r#"{"role":"user","content":"hello"}"#);
}

#[test]
fn provider_compaction_items_stay_in_front_and_unknown_items_are_described() {
    let long = "x".repeat(2000);
    let body = json!({"input": [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"},
        {"role": "user", "content": "draw"},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": long},
        {"role": "user", "content": "thanks"},
    ]})
    .to_string();
    let (conv, session) = convert_str(&body);
    assert_eq!(roles(&session), ["user", "assistant", "user"]);
    let described = session["entries"][2]["message"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(described.contains("image_generation_call"), "{described}");
    assert!(described.contains("[2000 characters]"), "{described}");
    let out = output(&conv, &wrapper(), "i3", "S");
    assert!(out[0].get().contains("cmp_1"));
    assert!(out[2].get().contains("thanks"));
    assert_eq!(out.len(), 3);
}

#[test]
fn bad_requests_name_the_field() {
    let err = |body: &str| match convert(body, &wrapper()) {
        Err(InputError::Invalid(v)) => v[0].pointer.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(err(r#"{"model":"m"}"#), "/input");
    assert_eq!(
        err(r#"{"input":[{"role":"user","content":"a"},3]}"#),
        "/input/1"
    );
    assert_eq!(
        err(r#"{"input":[{"role":"robot","content":"a"}]}"#),
        "/input/0"
    );
    assert_eq!(
        err(r#"{"input":"a","previous_response_id":"resp_1"}"#),
        "/previous_response_id"
    );
    assert!(matches!(
        convert("{\"input\":", &wrapper()),
        Err(InputError::Malformed { .. })
    ));
}

#[test]
fn lone_surrogates_read_as_replacement_characters_and_the_item_stays_as_sent() {
    let body = r#"{"input":[{"role":"user","content":"half \ud800 done","n":1E5},
        {"role":"assistant","content":"ok"},{"role":"user","content":"next"}],
        "model":"m","model":"last wins"}"#;
    let (conv, session) = convert_str(body);
    assert_eq!(
        session["entries"][1]["message"]["content"][0]["text"],
        "half \u{fffd} done"
    );
    assert_eq!(conv.model.as_deref(), Some("last wins"));
    let out = output(&conv, &wrapper(), "i1", "S");
    assert_eq!(
        out[1].get(),
        r#"{"role":"user","content":"half \ud800 done","n":1E5}"#
    );
}

#[test]
fn an_entries_property_does_not_replace_the_session() {
    let body = r#"{"input":"hello","entries":[]}"#;
    let (_, session) = convert_str(body);
    assert_eq!(roles(&session), ["user"]);
}

#[test]
fn an_unknown_role_is_named_but_not_echoed_whole() {
    let role = "r".repeat(10_000);
    let body = json!({"input": [{"role": role, "content": "x"}]}).to_string();
    match convert(&body, &wrapper()) {
        Err(InputError::Invalid(v)) => {
            assert_eq!(v[0].pointer, "/input/0");
            assert!(v[0].message.len() < 200, "{}", v[0].message);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn items_before_a_fed_back_summary_stay_in_front_as_sent() {
    let wrapped = wrapper().wrap("## Goal\nship it");
    let body = json!({"input": [
        {"role": "developer", "content": "Never push to main."},
        {"role": "user", "content": [{"type": "input_text", "text": wrapped}]},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok"},
    ]})
    .to_string();
    let (conv, session) = convert_str(&body);
    assert_eq!(roles(&session), ["user", "compaction", "user", "assistant"]);
    let out = output(&conv, &wrapper(), "i4", "new summary");
    let texts: Vec<Value> = out
        .iter()
        .map(|r| serde_json::from_str::<Value>(r.get()).unwrap()["content"].clone())
        .collect();
    assert_eq!(texts[0], "Never push to main.");
    assert_eq!(texts[1][0]["text"], wrapper().wrap("new summary").as_str());
    assert_eq!(texts[2], "ok");
    assert_eq!(out.len(), 3);
}
