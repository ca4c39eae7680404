//! Expected lines come from hermes-agent 0.19.0's `_summarize_tool_result` run on the
//! same arguments and content.

use super::*;

fn t(name: &str, args: &str, content: &str) -> String {
    summarize(name, args, content)
}

fn x(c: &str, n: usize) -> String {
    c.repeat(n)
}

#[test]
fn terminal() {
    let out = "{\"output\": \"ok\", \"exit_code\": 0}\nmore";
    assert_eq!(
        t("terminal", r#"{"command": "npm test"}"#, out),
        "[terminal] ran `npm test` -> exit 0, 2 lines output"
    );
    // Cut at 80 code points to 77 + "...", whitespace of any kind around the colon.
    let args = format!(r#"{{"command": "{}"}}"#, x("\\u00e9", 81));
    let want = format!(
        "[terminal] ran `{}...` -> exit -12, 1 lines output",
        x("é", 77)
    );
    assert_eq!(t("terminal", &args, "\"exit_code\" :\t-12 trailing"), want);
    // \d is Unicode: Arabic-Indic digits are an exit code; a number command prints.
    assert_eq!(
        t("terminal", r#"{"command": 5}"#, "\"exit_code\": ٣٤"),
        "[terminal] ran `5` -> exit ٣٤, 1 lines output"
    );
    // Blank content has 0 lines; null command is "".
    assert_eq!(
        t("terminal", r#"{"command": null}"#, "   \n  "),
        "[terminal] ran `` -> exit ?, 0 lines output"
    );
    for args in ["[1,2]", "not json", ""] {
        assert_eq!(
            t("terminal", args, "abc"),
            "[terminal] ran `` -> exit ?, 1 lines output"
        );
    }
    assert_eq!(
        t("terminal", "", "a\nb\n"),
        "[terminal] ran `` -> exit ?, 3 lines output"
    );
}

#[test]
fn files() {
    assert_eq!(
        t(
            "read_file",
            r#"{"path": "src/main.rs", "offset": 1E2}"#,
            &x("x", 12345)
        ),
        "[read_file] read src/main.rs from line 100.0 (12,345 chars)"
    );
    assert_eq!(
        t("read_file", r#"{"path": null}"#, "x"),
        "[read_file] read None from line 1 (1 chars)"
    );
    assert_eq!(
        t("read_file", r#"{"offset": 12345678901234567890123}"#, ""),
        "[read_file] read ? from line 12345678901234567890123 (0 chars)"
    );
    let w = |args: &str| t("write_file", args, "ok");
    assert_eq!(
        w(r#"{"path": "a.txt", "content": "l1\nl2\nl3"}"#),
        "[write_file] wrote to a.txt (3 lines)"
    );
    assert_eq!(
        w(r#"{"path": "a.txt", "content": ""}"#),
        "[write_file] wrote to a.txt (? lines)"
    );
    // str() of a list escapes the newline: one line.
    assert_eq!(
        w(r#"{"path": "a.txt", "content": ["a\nb", 1]}"#),
        "[write_file] wrote to a.txt (1 lines)"
    );
    assert_eq!(
        w(r#"{"path": "a.txt", "content": 0}"#),
        "[write_file] wrote to a.txt (? lines)"
    );
    assert_eq!(
        t(
            "search_files",
            r#"{"pattern": "fn main", "path": "src/"}"#,
            r#"{"total_count": 12, "matches": []}"#
        ),
        "[search_files] content search for 'fn main' in src/ -> 12 matches"
    );
    assert_eq!(
        t(
            "search_files",
            r#"{"target": "files", "pattern": ["a"], "path": {"a": 1.5}}"#,
            r#"{"total_count": -1}"#
        ),
        "[search_files] files search for '['a']' in {'a': 1.5} -> ? matches"
    );
    assert_eq!(
        t("patch", r#"{"path": "x.py"}"#, "done"),
        "[patch] replace in x.py (4 chars result)"
    );
    assert_eq!(
        t(
            "patch",
            r#"{"mode": "diff", "path": "x.py"}"#,
            &x("z", 1000)
        ),
        "[patch] diff in x.py (1,000 chars result)"
    );
}

#[test]
fn browser() {
    assert_eq!(
        t(
            "browser_navigate",
            r#"{"url": "https://ex.com", "ref": "e1"}"#,
            &x("p", 2048)
        ),
        "[browser_navigate] https://ex.com (2,048 chars)"
    );
    assert_eq!(
        t("browser_click", r#"{"url": "", "ref": "e12"}"#, "p"),
        "[browser_click] ref=e12 (1 chars)"
    );
    assert_eq!(
        t("browser_snapshot", r#"{"url": 0, "ref": 0}"#, "p"),
        "[browser_snapshot] (1 chars)"
    );
    assert_eq!(
        t("browser_vision", r#"{"ref": [1]}"#, "p"),
        "[browser_vision] ref=[1] (1 chars)"
    );
}

#[test]
fn web() {
    assert_eq!(
        t("web_search", r#"{"query": "rust \"serde\""}"#, &x("r", 999)),
        "[web_search] query='rust \"serde\"' (999 chars result)"
    );
    assert_eq!(
        t("web_search", "{}", "r"),
        "[web_search] query='?' (1 chars result)"
    );
    let we = |args: &str, content: &str| t("web_extract", args, content);
    assert_eq!(
        we(
            r#"{"urls": ["https://a", "https://b", "https://c"]}"#,
            &x("q", 5000)
        ),
        "[web_extract] https://a (+2 more) (5,000 chars)"
    );
    assert_eq!(
        we(r#"{"urls": ["https://a"]}"#, "q"),
        "[web_extract] https://a (1 chars)"
    );
    assert_eq!(we(r#"{"urls": []}"#, "q"), "[web_extract] ? (1 chars)");
    assert_eq!(
        we(r#"{"urls": "https://a"}"#, "q"),
        "[web_extract] ? (1 chars)"
    );
    assert_eq!(
        we(r#"{"urls": [{"url": "", "href": "https://h"}, 2]}"#, "q"),
        "[web_extract] https://h (+1 more) (1 chars)"
    );
    assert_eq!(
        we(r#"{"urls": [{"title": "t"}, 2]}"#, "q"),
        "[web_extract] ? (+1 more) (1 chars)"
    );
    assert_eq!(
        we(r#"{"urls": [{"url": 5}]}"#, "q"),
        "[web_extract] 5 (1 chars)"
    );
    assert_eq!(
        we(r#"{"urls": [7, "b"]}"#, "q"),
        "[web_extract] ? (+1 more) (1 chars)"
    );
}

#[test]
fn web_extract_python_raises_or_extends() {
    // int + str raises: the guarded fallback line.
    assert_eq!(
        t(
            "web_extract",
            r#"{"urls": [{"url": 5}, "b"]}"#,
            &x("q", 1234)
        ),
        "[web_extract] (1,234 chars result)"
    );
    // list += str extends the list with the characters.
    assert_eq!(
        t(
            "web_extract",
            r#"{"urls": [{"url": ["u"]}, "b", "c"]}"#,
            "q"
        ),
        "[web_extract] ['u', ' ', '(', '+', '2', ' ', 'm', 'o', 'r', 'e', ')'] (1 chars)"
    );
}

#[test]
fn agents_and_code() {
    let goal = |n| format!(r#"{{"goal": "{}"}}"#, x("g", n));
    assert_eq!(
        t("delegate_task", &goal(61), "r"),
        format!("[delegate_task] '{}...' (1 chars result)", x("g", 57))
    );
    assert_eq!(
        t("delegate_task", &goal(60), "r"),
        format!("[delegate_task] '{}' (1 chars result)", x("g", 60))
    );
    let code = format!(r#"{{"code": "import os\nprint(1)\n{}"}}"#, x("z", 50));
    assert_eq!(
        t("execute_code", &code, "1\n2\n"),
        format!(
            "[execute_code] `import os print(1) {}...` (3 lines output)",
            x("z", 41)
        )
    );
    assert_eq!(
        t("execute_code", r#"{"code": "a\nb"}"#, ""),
        "[execute_code] `a b` (0 lines output)"
    );
}

#[test]
fn the_small_tools() {
    assert_eq!(
        t("skill_view", r#"{"name": "pdf"}"#, &x("s", 3000)),
        "[skill_view] name=pdf (3,000 chars)"
    );
    assert_eq!(
        t("skills_list", "{}", "s"),
        "[skills_list] name=? (1 chars)"
    );
    let q = format!(r#"{{"question": "{}"}}"#, x("😀", 60));
    assert_eq!(
        t("vision_analyze", &q, "v"),
        format!("[vision_analyze] '{}' (1 chars)", x("😀", 50))
    );
    assert_eq!(
        t("memory", r#"{"action": "add", "target": "user"}"#, "m"),
        "[memory] add on user"
    );
    assert_eq!(t("memory", "{}", "m"), "[memory] ? on ?");
    assert_eq!(
        t("todo", r#"{"todos": []}"#, "t"),
        "[todo] updated task list"
    );
    assert_eq!(t("clarify", "{}", "t"), "[clarify] asked user a question");
    assert_eq!(
        t("text_to_speech", "{}", &x("a", 1001)),
        "[text_to_speech] generated audio (1,001 chars)"
    );
    assert_eq!(t("cronjob", r#"{"action": "list"}"#, "c"), "[cronjob] list");
    assert_eq!(
        t("process", r#"{"action": "poll", "session_id": 42}"#, "c"),
        "[process] poll session=42"
    );
    assert_eq!(t("process", "{}", "c"), "[process] ? session=?");
}

#[test]
fn generic_line() {
    let args = format!(
        r#"{{"alpha": "{}", "beta": {{"k": [1, 2.0, null, true]}}, "gamma": 3}}"#,
        x("a", 50)
    );
    assert_eq!(
        t("my_tool", &args, &x("o", 201)),
        format!(
            "[my_tool] alpha={} beta={{'k': [1, 2.0, None, True]}} (201 chars result)",
            x("a", 40)
        )
    );
    // Duplicate keys: first position, last value. NaN/Infinity and float spellings.
    assert_eq!(
        t("my_tool", r#"{"a": 1, "a": 2}"#, ""),
        "[my_tool] a=2 (0 chars result)"
    );
    assert_eq!(
        t("my_tool", r#"{"x": NaN, "y": -Infinity}"#, "o"),
        "[my_tool] x=nan y=-inf (1 chars result)"
    );
    assert_eq!(
        t("my_tool", r#"{"x": 1e400, "y": 1E2}"#, "o"),
        "[my_tool] x=inf y=100.0 (1 chars result)"
    );
    assert_eq!(t("", "{}", "o"), "[] (1 chars result)");
    assert_eq!(
        t("my_tool", r#"{"s": "e\u0301\u200b"}"#, "o"),
        "[my_tool] s=e\u{301}\u{200b} (1 chars result)"
    );
    // JSON whitespace around the document is fine; trailing data or a raw tab is not.
    assert_eq!(
        t("my_tool", " {\"k\": \"v\"} ", "o"),
        "[my_tool] k=v (1 chars result)"
    );
    assert_eq!(
        t("my_tool", "{\"k\": \"v\"} x", "o"),
        "[my_tool] (1 chars result)"
    );
    assert_eq!(
        t("my_tool", "{\"k\": \"a\tb\"}", "o"),
        "[my_tool] (1 chars result)"
    );
}

#[test]
fn integers_over_4300_digits_raise_into_the_fallback() {
    let big = |n| format!(r#"{{"big": {}}}"#, x("9", n));
    let content = x("o", 1500);
    assert_eq!(
        t("my_tool", &big(4301), &content),
        "[my_tool] (1,500 chars result)"
    );
    assert_eq!(
        t("terminal", &big(4301), &content),
        "[terminal] (1,500 chars result)"
    );
    assert_eq!(
        t("terminal", &big(4300), &content),
        "[terminal] ran `` -> exit ?, 1 lines output"
    );
}

#[test]
fn nesting_past_the_recursion_limit_raises_into_the_fallback() {
    let deep = |d| format!(r#"{{"command": {}{}}}"#, x("[", d), x("]", d));
    assert_eq!(
        t("terminal", &deep(800), "x"),
        format!(
            "[terminal] ran `{}...` -> exit ?, 1 lines output",
            x("[", 77)
        )
    );
    assert_eq!(
        t("terminal", &deep(5000), "x"),
        "[terminal] (1 chars result)"
    );
    // Brackets inside strings do not nest; a syntax error stays a decode error ({}).
    let quoted = format!(r#"{{"command": "{}"}} x"#, x("[", 5000));
    assert_eq!(
        t("terminal", &quoted, "x"),
        "[terminal] ran `` -> exit ?, 1 lines output"
    );
}

#[test]
fn non_string_names_and_arguments() {
    let tv = |name: &str, args: &str| {
        let name: Value = serde_json::from_str(name).expect("test JSON");
        let args: Value = serde_json::from_str(args).expect("test JSON");
        summarize_value(&name, &args, "ab\ncd")
    };
    assert_eq!(tv("null", r#""{\"a\": 1}""#), "[None] a=1 (5 chars result)");
    assert_eq!(tv("5", r#""""#), "[5] (5 chars result)");
    assert_eq!(tv("true", r#""{}""#), "[True] (5 chars result)");
    // Unhashable names raise at the first set test: the fallback line.
    assert_eq!(
        tv(r#"["x"]"#, r#""{\"command\": \"ls\"}""#),
        "[['x']] (5 chars result)"
    );
    assert_eq!(tv(r#"{"n": 1}"#, r#""{}""#), "[{'n': 1}] (5 chars result)");
    // Arguments that are not a string read as {}.
    let want = "[terminal] ran `` -> exit ?, 2 lines output";
    assert_eq!(tv(r#""terminal""#, r#"{"command": "ls"}"#), want);
    assert_eq!(tv(r#""terminal""#, "null"), want);
    assert_eq!(tv(r#""my_tool""#, "7"), "[my_tool] (5 chars result)");
}
