//! Slot values and summaries checked against hermes 0.19.0's fallback (its output
//! parsed back into slots; the texts here are test stand-ins).

use super::*;
use serde_json::json;

const PLAIN: Switches = Switches {
    redact: false,
    no_head_role_user: false,
};

fn slots(turns: &[Value]) -> Slots {
    Slots::gather(turns, None, None, &PLAIN)
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn tool(id: &str, text: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": text})
}

#[test]
fn error_text_is_stripped_and_cut_at_217_plus_dots() {
    assert_eq!(error_text("  boom \n"), "boom");
    let exact = "e".repeat(220);
    assert_eq!(error_text(&exact), exact);
    let long = format!("{}  {}", "a".repeat(216), "b".repeat(20));
    assert_eq!(error_text(&long), format!("{}...", "a".repeat(216)));
    let astral = "😀".repeat(221);
    assert_eq!(error_text(&astral), format!("{}...", "😀".repeat(217)));
}

#[test]
fn the_task_is_the_last_user_ask_as_python_repr() {
    let s = slots(&[user("first"), user("it's   done\n now"), user("   ")]);
    assert_eq!(s.task, "User asked: \"it's done now\"");
    assert_eq!(s.dropped, "- USER: first\n- USER: it's done now");
    assert_eq!(s.count, "3");
    let s = slots(&[
        json!({"role": "assistant", "content": "hi"}),
        json!({"content": "no role"}),
    ]);
    assert_eq!(s.task, UNKNOWN_TASK);
    assert_eq!(s.completed, "1. hi");
    assert_eq!(s.dropped, "- ASSISTANT: hi\n- UNKNOWN: no role");
}

#[test]
fn the_previous_note_needs_a_non_empty_previous_summary() {
    let turns = [user("x")];
    assert!(Slots::gather(&turns, Some("old body"), None, &PLAIN).previous_note);
    assert!(!Slots::gather(&turns, Some(""), None, &PLAIN).previous_note);
    assert!(!Slots::gather(&turns, None, None, &PLAIN).previous_note);
}

#[test]
fn completed_lists_actions_then_tool_actions_twelve_at_most() {
    let calls: Vec<Value> = (0..7)
        .map(|i| json!({"id": format!("a{i}"), "function": {"name": format!("t{i}"), "arguments": ""}}))
        .collect();
    let mut turns = vec![json!({"role": "assistant", "content": "", "tool_calls": calls})];
    turns.extend((0..7).map(|i| tool(&format!("a{i}"), &format!("out {i}"))));
    turns.push(json!({"role": "assistant", "content": "plain words"}));
    turns.push(json!({"role": "assistant", "tool_calls": ["junk", {"function": null}, {"function": {"name": 7}}]}));
    let s = slots(&turns);
    let mut want = vec![
        "1. Called tool(s): t0, t1, t2, t3, t4, t5".to_string(),
        "2. plain words".to_string(),
        "3. Called tool(s): unknown, unknown, 7".to_string(),
    ];
    want.extend((0..7).map(|i| format!("{}. [t{i}] (5 chars result)", i + 4)));
    assert_eq!(s.completed, want.join("\n"));
    assert_eq!(s.task, UNKNOWN_TASK);
    assert_eq!(
        s.dropped,
        "- TOOL: out 1\n- TOOL: out 2\n- TOOL: out 3\n- TOOL: out 4\n- TOOL: out 5\n\
         - TOOL: out 6\n- ASSISTANT: plain words\n- ASSISTANT: tool calls: unknown, unknown, 7"
    );
    assert_eq!(slots(&[]).completed, NO_COMPLETED);
}

#[test]
fn blockers_are_tool_texts_with_error_words_first_500_five_distinct() {
    let texts = [
        "FAILED: build".to_string(),
        "errors everywhere".to_string(),
        "a Timed Out b".to_string(),
        "fatal".to_string(),
        "fatal".to_string(),
        "exception!".to_string(),
        "Traceback".to_string(),
        format!("error {}", "y".repeat(600)),
    ];
    let turns: Vec<Value> = texts.iter().map(|t| tool("x", t)).collect();
    let s = slots(&turns);
    assert_eq!(
        s.blockers,
        "- FAILED: build\n- a Timed Out b\n- fatal\n- exception!\n- Traceback"
    );
    // The long one: compacted to 420 + " ... " + 160 (585) before the summary line.
    assert!(
        s.completed.ends_with("8. [unknown] (585 chars result)"),
        "{}",
        s.completed
    );
    assert_eq!(slots(&[]).blockers, "None.");
}

#[test]
fn files_come_from_path_keys_and_path_mentions_twelve_at_most() {
    let args = json!({"path": " /a/b.txt ", "nested": [{"workdir": "rel/dir"}, "see /etc/x.conf;"],
                      "file_path": 5, "output_path": "out.bin"})
    .to_string();
    let turns = [
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "p", "function": {"name": "w", "arguments": args}},
            {"id": "q", "function": {"name": "bad", "arguments": "not json /tmp/raw, ok"}}]}),
        user("look at ~/notes.md: and D:\\w\\x.py. and (/in/paren) and `/tick`"),
        json!({"role": "user", "content": [{"type": "text", "text": "/l1 /l2 /l3 /l4 /l5 /l6 /l7 /l8 /l9 /l10"}]}),
    ];
    let s = slots(&turns);
    assert_eq!(
        s.files,
        "- /a/b.txt\n- rel/dir\n- /dir\n- /etc/x.conf\n- out.bin\n- /tmp/raw\n- ~/notes.md\n\
         - D:\\w\\x.py\n- /in/paren\n- /tick\n- /l1\n- /l2"
    );
    assert_eq!(s.completed, "1. Called tool(s): w, bad");
    assert_eq!(
        s.task,
        "User asked: '/l1 /l2 /l3 /l4 /l5 /l6 /l7 /l8 /l9 /l10'"
    );
}

#[test]
fn dropped_keeps_the_last_eight_labelled_turns() {
    let mut turns: Vec<Value> = (0..7).map(|i| user(&format!("u{i}"))).collect();
    let calls: Vec<Value> = (0..8)
        .map(|i| json!({"function": {"name": format!("n{i}")}}))
        .collect();
    turns.push(json!({"role": "assistant", "content": "  ", "tool_calls": calls}));
    turns.push(json!({"content": "roleless"}));
    turns.push(json!({"role": "tool", "content": ""}));
    turns.push(json!({"role": "system", "content": "sys"}));
    let s = slots(&turns);
    assert_eq!(
        s.dropped,
        "- USER: u2\n- USER: u3\n- USER: u4\n- USER: u5\n- USER: u6\n\
         - ASSISTANT: tool calls: n0, n1, n2, n3, n4, n5\n- UNKNOWN: roleless\n- SYSTEM: sys"
    );
    assert_eq!(
        s.completed,
        "1. Called tool(s): n0, n1, n2, n3, n4, n5\n2. [unknown] (0 chars result)"
    );
    assert_eq!(s.count, "11");
}

#[test]
fn turn_texts_are_squeezed_cut_at_700_and_github_tokens_masked() {
    let long_ask = "word ".repeat(150);
    let tokens = format!(
        "token ghp_abcdefgh12 and ghs_x.y-z tail {}",
        "q".repeat(700)
    );
    let s = slots(&[user(&long_ask), user(&tokens)]);
    // 700 cut: the first 685 right-stripped + " ...[truncated]".
    let first = format!("{}word ...[truncated]", "word ".repeat(136));
    // The short token is masked only after the cut, so the cut counts it unmasked.
    let second = format!(
        "token [REDACTED] and [REDACTED] tail {} ...[truncated]",
        "q".repeat(649)
    );
    assert_eq!(s.dropped, format!("- USER: {first}\n- USER: {second}"));
    // Asks over 600: the first 420 right-stripped + " ... " + the last 160.
    let ask = format!("{} ... {}", py::head(&second, 420), py::last(&second, 160));
    assert_eq!(s.task, format!("User asked: '{ask}'"));
}

#[test]
fn the_reason_is_a_sentence_after_the_count() {
    let s = Slots::gather(&[], None, Some("it broke"), &PLAIN);
    assert_eq!(s.reason, " Summary failure reason: it broke.");
    assert_eq!(s.count, "0");
    assert_eq!(s.dropped, "None.");
    assert_eq!(Slots::gather(&[], None, Some(""), &PLAIN).reason, "");
}

fn texts(fallback: &str) -> HermesTexts {
    let fallback = fallback.to_string();
    HermesTexts::from_lookup(move |name| match name {
        "prefix.md" => Some("[CONTEXT COMPACTION — REFERENCE ONLY] P.".to_string()),
        "fallback.md" => Some(fallback.clone()),
        "fallback-note.md" => Some("NOTE".to_string()),
        _ => None,
    })
}

#[test]
fn build_fills_the_text_and_prefixes_it() {
    let t = texts("T {task}{previous_note}\nC {completed}\nB {blockers}\nF {files}\nD {dropped}\nN {count}{reason}");
    let got = build(&[user("go /x")], Some("p"), Some("r"), &t, &PLAIN);
    assert_eq!(
        got,
        "[CONTEXT COMPACTION — REFERENCE ONLY] P.\nT User asked: 'go /x'\n\nNOTE\n\
         C None recoverable from compacted turns.\nB None.\nF - /x\nD - USER: go /x\n\
         N 1 Summary failure reason: r."
    );
}

#[test]
fn build_cuts_at_8000_counting_the_prefix() {
    // prefix (40) + "\n" + body: over 8000 → the first 7958 right-stripped + marker.
    let t = texts(&format!(
        "{}  {{count}}{}",
        "a".repeat(7916),
        "b".repeat(100)
    ));
    let got = build(&[], None, None, &t, &PLAIN);
    let want = format!(
        "[CONTEXT COMPACTION — REFERENCE ONLY] P.\n{}{SUMMARY_TRUNCATED}",
        "a".repeat(7916)
    );
    assert_eq!(got, want);
    let t = texts(&"a".repeat(7959));
    assert_eq!(py::len(&build(&[], None, None, &t, &PLAIN)), 8000);
}

#[test]
fn the_body_is_extracted_so_a_merge_delimiter_cuts_before_it() {
    let turns = [user(&format!("x {} y", crate::summaries::MERGE_DELIMITER))];
    let t = texts("A {dropped} Z");
    let got = build(&turns, None, None, &t, &PLAIN);
    assert_eq!(got, "[CONTEXT COMPACTION — REFERENCE ONLY] P.\ny Z");
}

#[test]
fn odd_shapes_do_not_panic() {
    let turns: Vec<Value> = serde_json::from_str(
        r#"[5,"text",null,{"role":7,"content":{"a":1},"tool_calls":"xy"},
            {"role":"assistant","tool_calls":{"k":1}},
            {"role":"assistant","tool_calls":[{"id":[1],"function":"f"},{"function":{"name":null,"arguments":{"path":"/p"}}},7]},
            {"role":"tool","tool_call_id":[1],"content":[{"type":"image"}]},
            {"role":"tool","tool_call_id":{"a":1},"content":"error"}]"#,
    )
    .expect("test JSON");
    let s = slots(&turns);
    assert_eq!(s.count, "8");
}

#[test]
fn calls_are_iterated_as_python_iterates_them() {
    let turns = [
        json!({"role": "assistant", "tool_calls": [{"function": {"name": null, "arguments": {"path": "/p"}}}]}),
        json!({"role": "assistant", "tool_calls": {"k": 1}}),
        json!({"role": "tool", "tool_call_id": {"a": 1}, "content": "error"}),
    ];
    let s = slots(&turns);
    // An object's keys are calls without a name; arguments that are an object are read as
    // their Python str, which is not JSON, so only path mentions count.
    assert_eq!(
        s.completed,
        "1. Called tool(s): unknown\n2. Called tool(s): unknown\n3. [unknown] (5 chars result)"
    );
    assert_eq!(s.files, "- /p");
    assert_eq!(s.blockers, "- error");
    assert_eq!(s.dropped, "- ASSISTANT: tool calls: unknown\n- TOOL: error");
}

#[test]
fn turns_arguments_and_the_body_are_redacted_when_redaction_is_on() {
    let secret = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789";
    let turns = [
        user(&format!("key {secret} /src/a.rs")),
        json!({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "t", "arguments": format!("{{\"k\": \"{secret}\"}}")}}]}),
        tool("c", "ok"),
    ];
    let t = texts("{task} {files} {completed} {dropped}{reason}");
    let on = build(&turns, None, Some(secret), &t, &Switches::default());
    assert!(!on.contains(secret), "{on}");
    assert!(build(&turns, None, None, &t, &PLAIN).contains(secret));
}
