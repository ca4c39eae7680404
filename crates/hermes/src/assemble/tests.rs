//! Expected lists come from hermes 0.19.0's `compress()` with its boundaries, pruning
//! and summary stubbed (`<END>`, `<DELIM>`, `<HEADER>` stand for the interop markers,
//! `<NOTE>` for the system note); user targets follow H5 instead, as marked.

use super::media::IMAGE_STRIPPED;
use super::pairs::{id_of, number_key};
use super::*;

const NOTE: &str = "Test note.";

fn texts() -> HermesTexts {
    HermesTexts::from_lookup(|name| (name == "sysnote.md").then(|| NOTE.to_string()))
}

fn expand(s: &str) -> String {
    s.replace("<END>", summaries::END_MARKER)
        .replace("<DELIM>", summaries::MERGE_DELIMITER)
        .replace("<HEADER>", summaries::PRIOR_CONTEXT_HEADER)
        .replace("<NOTE>", NOTE)
}

/// Parses `json` after expanding the placeholders.
fn list(json: &str) -> Vec<Value> {
    serde_json::from_str(&expand(json)).expect("test JSON")
}

fn run_with(input: &str, start: usize, end: usize, opts: Switches) -> Assembled {
    assemble(&list(input), start, end, "SUM", &texts(), &opts)
}

fn run(input: &str, start: usize, end: usize) -> Assembled {
    run_with(input, start, end, Switches::default())
}

/// Compares serialized, so key order counts.
fn same(got: &Assembled, want: &str) {
    let want = serde_json::to_string(&list(want)).expect("serializes");
    let got = serde_json::to_string(&got.messages).expect("serializes");
    assert_eq!(got, want);
}

#[test]
fn a_system_head_gets_the_note_and_a_user_tail_the_summary_first_h5() {
    let got = run(
        r#"[{"role":"system","content":"S"},{"role":"user","content":"u1"},{"role":"assistant","content":"a1"},
            {"role":"user","content":"u2","_db_persisted":true},{"role":"assistant","content":"a2"}]"#,
        1,
        3,
    );
    // hermes: "<HEADER>\nu2\n\n<DELIM>\n\nSUM\n\n<END>"
    same(
        &got,
        r#"[{"role":"system","content":"S\n\n<NOTE>"},
            {"role":"user","content":"SUM\n\n<END>\n\nu2","_compressed_summary":true},
            {"role":"assistant","content":"a2"}]"#,
    );
    assert_eq!(got.sources, [Some(0), Some(3), Some(4)]);
    assert_eq!(
        (got.summary_index, got.summary_role, got.merged),
        (1, "user", true)
    );
}

#[test]
fn an_assistant_head_and_user_tail_merge_dropping_the_sidecar_h5() {
    let got = run(
        r#"[{"role":"user","content":"u0"},{"role":"assistant","content":"a0"},{"role":"user","content":"x"},
            {"role":"user","content":"tail","api_content":"old","_db_persisted":1},{"role":"assistant","content":"z"}]"#,
        2,
        3,
    );
    same(
        &got,
        r#"[{"role":"user","content":"u0"},{"role":"assistant","content":"a0"},
            {"role":"user","content":"SUM\n\n<END>\n\ntail","_compressed_summary":true},
            {"role":"assistant","content":"z"}]"#,
    );
}

#[test]
fn an_assistant_target_gets_hermes_form_with_list_content() {
    let got = run(
        r#"[{"role":"user","content":"u0"},{"role":"assistant","content":"a"},{"role":"user","content":"x"},
            {"role":"assistant","content":[{"type":"text","text":"t"}],"api_content":"q"},{"role":"user","content":"z"}]"#,
        1,
        3,
    );
    same(
        &got,
        r#"[{"role":"user","content":"u0"},{"role":"assistant","content":[{"type":"text","text":"<HEADER>\n"},
            {"type":"text","text":"t"},{"type":"text","text":"\n\n<DELIM>\n\nSUM\n\n<END>"}],"_compressed_summary":true},
            {"role":"user","content":"z"}]"#,
    );
    assert_eq!(got.sources, [Some(0), Some(3), Some(4)]);
    assert_eq!(
        (got.summary_index, got.summary_role, got.merged),
        (1, "assistant", true)
    );
}

#[test]
fn assistant_targets_with_null_or_other_content_and_an_existing_flag() {
    let head = r#"{"role":"user","content":"u0"},{"role":"user","content":"u1"},{"role":"user","content":"x"}"#;
    let got = run(
        &format!(
            r#"[{head},{{"role":"assistant","content":null,"_compressed_summary":false,"k":1}},{{"role":"user","content":"z"}}]"#
        ),
        2,
        3,
    );
    same(
        &got,
        r#"[{"role":"user","content":"u0"},{"role":"user","content":"u1"},
            {"role":"assistant","content":"<HEADER>\n\n\n<DELIM>\n\nSUM\n\n<END>","_compressed_summary":true,"k":1},
            {"role":"user","content":"z"}]"#,
    );
    let got = run(
        &format!(
            r#"[{head},{{"role":"assistant","content":false}},{{"role":"user","content":"z"}}]"#
        ),
        2,
        3,
    );
    same(
        &got,
        r#"[{"role":"user","content":"u0"},{"role":"user","content":"u1"},
            {"role":"assistant","content":"<HEADER>\nFalse\n\n<DELIM>\n\nSUM\n\n<END>","_compressed_summary":true},
            {"role":"user","content":"z"}]"#,
    );
}

#[test]
fn a_user_head_and_user_tail_flip_to_a_standalone_assistant_summary() {
    let got = run(
        r#"[{"role":"system","content":[{"type":"text","text":"S"}]},{"role":"user","content":"u0"},
            {"role":"assistant","content":"a"},{"role":"user","content":"x"},{"role":"user","content":"z"}]"#,
        2,
        4,
    );
    same(
        &got,
        r#"[{"role":"system","content":[{"type":"text","text":"S"},{"type":"text","text":"<NOTE>"}]},
            {"role":"user","content":"u0"},{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},
            {"role":"user","content":"z"}]"#,
    );
    assert_eq!(got.sources, [Some(0), Some(1), None, Some(4)]);
    assert_eq!(
        (got.summary_index, got.summary_role, got.merged),
        (2, "assistant", false)
    );
}

#[test]
fn with_no_user_left_the_summary_is_a_user_message() {
    let got = run(
        r#"[{"role":"assistant","content":"a0"},{"role":"user","content":"x"},{"role":"tool","content":"r"},
            {"role":"user","content":"x"},{"role":"assistant","content":"t"}]"#,
        0,
        4,
    );
    same(
        &got,
        r#"[{"role":"user","content":"SUM\n\n<END>","_compressed_summary":true},{"role":"assistant","content":"t"}]"#,
    );
    assert_eq!(got.sources, [None, Some(4)]);
}

const NO_HEAD_USER_TAIL: &str = r#"[{"role":"user","content":"x"},{"role":"assistant","content":"y"},
    {"role":"user","content":"x"},{"role":"user","content":"t1"},{"role":"assistant","content":"t2"}]"#;
const NO_HEAD_ASSISTANT_TAIL: &str = r#"[{"role":"user","content":"x"},{"role":"assistant","content":"y"},
    {"role":"user","content":"x"},{"role":"assistant","content":"t1","tool_calls":[]},{"role":"user","content":"t2"}]"#;

#[test]
fn with_no_head_hermes_assumes_a_user_head() {
    same(
        &run(NO_HEAD_USER_TAIL, 0, 3),
        r#"[{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},
            {"role":"user","content":"t1"},{"role":"assistant","content":"t2"}]"#,
    );
    same(
        &run(NO_HEAD_ASSISTANT_TAIL, 0, 3),
        r#"[{"role":"assistant","content":"<HEADER>\nt1\n\n<DELIM>\n\nSUM\n\n<END>","tool_calls":[],"_compressed_summary":true},
            {"role":"user","content":"t2"}]"#,
    );
}

#[test]
fn h4_with_no_head_the_summary_is_a_user_message() {
    let opts = Switches {
        no_head_role_user: true,
        ..Switches::default()
    };
    let got = run_with(NO_HEAD_USER_TAIL, 0, 3, opts);
    same(
        &got,
        r#"[{"role":"user","content":"SUM\n\n<END>\n\nt1","_compressed_summary":true},{"role":"assistant","content":"t2"}]"#,
    );
    assert_eq!(
        (got.summary_index, got.summary_role, got.merged),
        (0, "user", true)
    );
    let got = run_with(NO_HEAD_ASSISTANT_TAIL, 0, 3, opts);
    same(
        &got,
        r#"[{"role":"user","content":"SUM\n\n<END>","_compressed_summary":true},
            {"role":"assistant","content":"t1","tool_calls":[]},{"role":"user","content":"t2"}]"#,
    );
    assert_eq!(
        (got.summary_index, got.summary_role, got.merged),
        (0, "user", false)
    );
}

#[test]
fn h3_a_merge_with_no_tail_becomes_a_standalone_user_summary() {
    let input = r#"[{"role":"user","content":"u"},{"role":"assistant","content":"a"},{"role":"user","content":"x"},
        {"role":"assistant","content":"y"},{"role":"user","content":"w"}]"#;
    // hermes: [u, a], the summary lost.
    let got = run(input, 2, 5);
    same(
        &got,
        r#"[{"role":"user","content":"u"},{"role":"assistant","content":"a"},
            {"role":"user","content":"SUM\n\n<END>","_compressed_summary":true}]"#,
    );
    assert_eq!(
        (got.summary_index, got.summary_role, got.merged),
        (2, "user", false)
    );
    // No merge needed: hermes's own choice stands.
    let input = r#"[{"role":"user","content":"u"},{"role":"user","content":"a"},{"role":"user","content":"x"},
        {"role":"assistant","content":"y"},{"role":"user","content":"w"}]"#;
    same(
        &run(input, 2, 5),
        r#"[{"role":"user","content":"u"},{"role":"user","content":"a"},
            {"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true}]"#,
    );
}

#[test]
fn a_missing_role_counts_as_user_and_a_null_role_as_no_role() {
    // Missing roles: no user survives (the test is `role == "user"`), so a user summary
    // that collides with the (missing = user) tail is merged; H5 form.
    same(
        &run(
            r#"[{"content":"h"},{"role":"assistant","content":"y"},{"role":"user","content":"x"},
                {"content":"t1"},{"role":"assistant","content":"t2"}]"#,
            1,
            3,
        ),
        r#"[{"content":"h"},{"content":"SUM\n\n<END>\n\nt1","_compressed_summary":true},{"role":"assistant","content":"t2"}]"#,
    );
    same(
        &run(
            r#"[{"role":"user","content":"h"},{"role":"assistant","content":"y"},{"role":"user","content":"x"},
                {"role":null,"content":"t1"},{"role":"assistant","content":"t2"}]"#,
            1,
            3,
        ),
        r#"[{"role":"user","content":"h"},{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},
            {"role":null,"content":"t1"},{"role":"assistant","content":"t2"}]"#,
    );
}

#[test]
fn the_system_note_replaces_null_appends_to_other_values_and_is_not_repeated() {
    let rest = r#"{"role":"user","content":"u"},{"role":"assistant","content":"x"},{"role":"user","content":"y"},{"role":"assistant","content":"z"}"#;
    let tail = r#"{"role":"user","content":"u"},{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},{"role":"user","content":"y"},{"role":"assistant","content":"z"}"#;
    let system = |content: &str| {
        let input =
            format!(r#"[{{"role":"system","content":{content},"_db_persisted":true}},{rest}]"#);
        let got = run(&input, 2, 3);
        serde_json::to_string(&got.messages[0]).expect("serializes")
    };
    assert_eq!(
        system("null"),
        expand(r#"{"role":"system","content":"<NOTE>"}"#)
    );
    assert_eq!(
        system(r#""""#),
        expand(r#"{"role":"system","content":"<NOTE>"}"#)
    );
    assert_eq!(
        system("false"),
        expand(r#"{"role":"system","content":"False<NOTE>"}"#)
    );
    assert_eq!(
        system("{}"),
        expand(r#"{"role":"system","content":"{}<NOTE>"}"#)
    );
    let carried = serde_json::to_string("pre Test note. post").expect("serializes");
    let want = format!(r#"{{"role":"system","content":{carried}}}"#);
    assert_eq!(system(&carried), want);
    // hermes's note counts whole: its opening alone (here padded with Python
    // whitespace) gets our note like any other text.
    let opening = format!("pre {}\u{85}", HERMES_SYSNOTE.opening);
    let content = serde_json::to_string(&opening).expect("serializes");
    let want = serde_json::to_string(&format!("{opening}\n\n{NOTE}")).expect("serializes");
    assert_eq!(
        system(&content),
        format!(r#"{{"role":"system","content":{want}}}"#)
    );
    let got = run(
        &format!(r#"[{{"role":"system","content":"S"}},{rest}]"#),
        2,
        3,
    );
    same(
        &got,
        &format!(r#"[{{"role":"system","content":"S\n\n<NOTE>"}},{tail}]"#),
    );
}

#[test]
fn sanitation_drops_unpaired_results_and_calls_with_python_id_equality() {
    let got = run(
        r#"[{"role":"system","content":"S"},{"role":"assistant","content":"","tool_calls":[{"id":"gone","function":{"name":"f"}}]},
            {"role":"tool","tool_call_id":"gone","content":"r"},
            {"role":"user","content":"x"},
            {"role":"assistant","content":"  ","tool_calls":[{"id":"a","call_id":"ca","function":{}},{"id":"b"},"weird",{"id":""}]},
            {"role":"tool","tool_call_id":"ca","content":"ok"},{"role":"tool","tool_call_id":"a","content":"orphan"},
            {"role":"tool","content":"no id"},{"role":"tool","tool_call_id":"","content":"empty id"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"pending"}]},
            {"role":"assistant","content":"keep","tool_calls":[{"id":1}]},{"role":"tool","tool_call_id":1.0,"content":"num"},
            {"role":"assistant","content":"","tool_calls":[{"id":true}]},{"role":"tool","tool_call_id":1,"content":"num2"},
            {"role":"assistant","content":"s","tool_calls":[{"id":"7"}]},{"role":"tool","tool_call_id":7,"content":"mismatch"}]"#,
        1,
        3,
    );
    // hermes merges into the user "x" in its form; H5 here.
    same(
        &got,
        r#"[{"role":"system","content":"S\n\n<NOTE>"},
            {"role":"user","content":"SUM\n\n<END>\n\nx","_compressed_summary":true},
            {"role":"assistant","content":"  ","tool_calls":[{"id":"a","call_id":"ca","function":{}},"weird",{"id":""}]},
            {"role":"tool","tool_call_id":"ca","content":"ok"},{"role":"tool","content":"no id"},
            {"role":"tool","tool_call_id":"","content":"empty id"},{"role":"assistant","content":"(tool call removed)"},
            {"role":"assistant","content":"keep","tool_calls":[{"id":1}]},{"role":"tool","tool_call_id":1.0,"content":"num"},
            {"role":"assistant","content":"","tool_calls":[{"id":true}]},{"role":"tool","tool_call_id":1,"content":"num2"},
            {"role":"assistant","content":"s"}]"#,
    );
    let want: Vec<Option<usize>> = [0, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14]
        .into_iter()
        .map(Some)
        .collect();
    assert_eq!(got.sources, want);
    assert_eq!(got.summary_index, 1);
}

#[test]
fn images_before_the_newest_user_image_are_replaced() {
    let got = run(
        r#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"t"}],"api_content":"x"},
            {"role":"assistant","content":"a"},{"role":"user","content":"x"},
            {"role":"assistant","content":[{"type":"input_image","image_url":"i"}],"api_content":"y","z":1},
            {"role":"tool","tool_call_id":"","content":[{"type":"image","source":{}}]},
            {"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{}}]},
            {"role":"assistant","content":[{"type":"image_url","image_url":"later"}]}]"#,
        2,
        3,
    );
    let stripped = format!(r#"{{"type":"text","text":"{IMAGE_STRIPPED}"}}"#);
    same(
        &got,
        &format!(
            r#"[{{"role":"user","content":[{stripped},{{"type":"text","text":"t"}}]}},{{"role":"assistant","content":"a"}},
                {{"role":"user","content":"SUM\n\n<END>","_compressed_summary":true}},
                {{"role":"assistant","content":[{stripped}],"z":1}},{{"role":"tool","tool_call_id":"","content":[{stripped}]}},
                {{"role":"user","content":[{{"type":"text","text":"look"}},{{"type":"image","source":{{}}}}]}},
                {{"role":"assistant","content":[{{"type":"image_url","image_url":"later"}}]}}]"#
        ),
    );
    // The only user image is the first message: nothing before it to strip.
    let got = run(
        r#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}}]},{"role":"assistant","content":"a"},
            {"role":"user","content":"x"},{"role":"user","content":"t"},{"role":"assistant","content":[{"type":"image"}]}]"#,
        0,
        3,
    );
    same(
        &got,
        r#"[{"role":"assistant","content":"SUM\n\n<END>","_compressed_summary":true},{"role":"user","content":"t"},
            {"role":"assistant","content":[{"type":"image"}]}]"#,
    );
}

#[test]
fn number_keys_follow_python_equality() {
    assert_eq!(number_key("1"), number_key("1.0"));
    assert_eq!(number_key("1"), number_key("1e0"));
    assert_eq!(number_key("-0"), number_key("0"));
    assert_ne!(number_key("1"), number_key("1.5"));
    assert_eq!(id_of(&Value::Bool(true)), id_of(&serde_json::json!(1)));
    assert_ne!(id_of(&serde_json::json!("1")), id_of(&serde_json::json!(1)));
    assert_eq!(id_of(&serde_json::json!(0)), None);
    assert_eq!(id_of(&serde_json::json!([1])), None);
}

#[test]
fn an_assistant_left_without_calls_and_blank_content_gets_a_placeholder() {
    let got = run(
        r#"[{"role":"user","content":"u"},{"role":"assistant","content":"a"},{"role":"user","content":"x"},
            {"role":"assistant","content":" \n","tool_calls":[{"id":"p"}]},
            {"role":"assistant","content":[],"tool_calls":[{"call_id":"q"}]},
            {"role":"assistant","content":0,"tool_calls":[{"id":"r"}]},
            {"role":"assistant","content":" x","tool_calls":[{"id":"s"}]}]"#,
        2,
        3,
    );
    same(
        &got,
        r#"[{"role":"user","content":"u"},{"role":"assistant","content":"a"},
            {"role":"user","content":"SUM\n\n<END>","_compressed_summary":true},
            {"role":"assistant","content":"(tool call removed)"},{"role":"assistant","content":"(tool call removed)"},
            {"role":"assistant","content":"(tool call removed)"},{"role":"assistant","content":" x"}]"#,
    );
}

#[test]
fn odd_shapes_and_boundaries_do_not_panic() {
    let input = list(
        r#"[5,"text",null,{"role":7,"content":{"a":1},"tool_calls":"xy"},
            {"role":"assistant","tool_calls":[{"id":[1]},{"call_id":{"a":1}},7]},
            {"role":"tool","tool_call_id":[1],"content":[{"type":"image"}]},
            {"role":"user","content":[{"type":"image_url"}]}]"#,
    );
    let t = texts();
    for (start, end) in [(0, 0), (0, 7), (3, 2), (9, 9), (2, 4), (7, 12), (1, 1)] {
        for no_head_role_user in [false, true] {
            let opts = Switches {
                no_head_role_user,
                ..Switches::default()
            };
            let got = assemble(&input, start, end, "SUM", &t, &opts);
            assert_eq!(got.messages.len(), got.sources.len());
            assert!(got.summary_index < got.messages.len());
        }
    }
}

#[test]
fn a_known_text_is_found_whole_by_its_opening_length_and_digest() {
    // Made up: its length in code points and the MD5 of its UTF-8 bytes.
    let text = "[Note: é made-up 𝒳 note.]";
    let known = KnownText {
        opening: "[Note: é",
        chars: 25,
        md5: "e7d3652d26ccc1546779f6bdadd48e6d",
    };
    assert_eq!(py::len(text), known.chars);
    assert!(contains_known(&format!("a\n\n{text}  "), &known));
    // A later occurrence counts too; the opening alone and a cut text do not.
    assert!(contains_known(&format!("[Note: é {text}"), &known));
    assert!(!contains_known("x [Note: é made-up", &known));
    assert!(!contains_known(&text[..text.len() - 1], &known));
    assert!(!contains_known(&text.replace("note", "nute"), &known));
}
