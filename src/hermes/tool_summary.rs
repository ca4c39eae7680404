//! T: the one-line description that replaces an old tool result when pruning (contract
//! §6, hermes `_summarize_tool_result`), e.g. ``[terminal] ran `npm test` -> exit 0, 47
//! lines output``.
//!
//! Design decisions: the arguments are read as Python reads them (`json.loads` into a
//! [`PyValue`], values printed with `str()`), and every place where hermes would raise is
//! modelled explicitly as [`Raised`], which turns into hermes's guarded fallback line
//! `[{name}] ({len:,} chars result)`. The places are: a first `web_extract` url taken from
//! an object that is not a string (or a list) when more urls follow, a tool name that is a
//! list or an object (unhashable in a set test), and arguments holding an integer of more
//! than 4300 digits (Python 3.11's `int` conversion limit, a `ValueError`) or nested too
//! deep for the recursion limit (`RecursionError`), which `json.loads`'s caller does not
//! catch.

use std::sync::LazyLock;

use fancy_regex::Regex;
use serde_json::Value;

use crate::hermes::py::{self, PyValue};

/// Python 3.11's default `sys.get_int_max_str_digits()`.
const INT_MAX_STR_DIGITS: usize = 4300;
/// Nesting at which `py::loads` gives up as CPython's recursion limit does (about 1000
/// frames less the caller's stack; `py::json` settles on 900).
const NESTING_LIMIT: usize = 900;

static EXIT_CODE: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r#""exit_code"\s*:\s*(-?\d+)"#));
static TOTAL_COUNT: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r#""total_count"\s*:\s*(\d+)"#));

/// The browser tools, which share one line shape.
const BROWSER_TOOLS: [&str; 6] = [
    "browser_navigate",
    "browser_click",
    "browser_snapshot",
    "browser_type",
    "browser_scroll",
    "browser_vision",
];

/// Hermes raised while building the line; the guarded fallback line applies.
struct Raised;

/// T(name, args, content) for a call whose name and arguments are strings.
pub fn summarize(name: &str, args: &str, content: &str) -> String {
    let name = Value::String(name.to_owned());
    let args = Value::String(args.to_owned());
    summarize_value(&name, &args, content)
}

/// T for the values the call index holds: `name` and `args` may be any JSON value
/// (`function.name` and `function.arguments` as the model wrote them).
pub fn summarize_value(name: &Value, args: &Value, content: &str) -> String {
    match line(name, args, content) {
        Ok(line) => line,
        Err(Raised) => format!(
            "[{}] ({} chars result)",
            py::str_of(name),
            py::thousands(py::len(content))
        ),
    }
}

/// `_summarize_tool_result_unguarded`.
fn line(name: &Value, args: &Value, content: &str) -> Result<String, Raised> {
    let args = parse_args(args)?;
    let len = py::thousands(py::len(content));
    let lines = if py::strip(content).is_empty() {
        0
    } else {
        content.matches('\n').count() + 1
    };
    let get = |k: &str| args.get(k);
    // `str(args.get(k, default))`.
    let show = |k: &str, default: &str| get(k).map_or_else(|| default.to_owned(), PyValue::to_str);
    // `_str_arg(args, k)`: the string, else `str(value)`, else "" for absent or None.
    let str_arg = |k: &str| match get(k) {
        None | Some(PyValue::None) => String::new(),
        Some(PyValue::Str(s)) => s.clone(),
        Some(v) => v.to_str(),
    };
    let name = match name {
        Value::String(s) => s.as_str(),
        // Compared with `==` first, then tested for membership in a set: unhashable.
        Value::Array(_) | Value::Object(_) => return Err(Raised),
        // Hashable but never a known tool: the generic line.
        other => return Ok(generic(&py::str_of(other), &args, &len)),
    };
    let line = match name {
        "terminal" => {
            let cmd = cut(&str_arg("command"), 80, 77);
            let code = first_group(&EXIT_CODE, content).unwrap_or("?");
            format!("[terminal] ran `{cmd}` -> exit {code}, {lines} lines output")
        }
        "read_file" => format!(
            "[read_file] read {} from line {} ({len} chars)",
            show("path", "?"),
            show("offset", "1")
        ),
        "write_file" => {
            let written = if get("content").is_some_and(PyValue::is_truthy) {
                (str_arg("content").matches('\n').count() + 1).to_string()
            } else {
                "?".to_owned()
            };
            format!(
                "[write_file] wrote to {} ({written} lines)",
                show("path", "?")
            )
        }
        "search_files" => format!(
            "[search_files] {} search for '{}' in {} -> {} matches",
            show("target", "content"),
            show("pattern", "?"),
            show("path", "."),
            first_group(&TOTAL_COUNT, content).unwrap_or("?")
        ),
        "patch" => format!(
            "[patch] {} in {} ({len} chars result)",
            show("mode", "replace"),
            show("path", "?")
        ),
        n if BROWSER_TOOLS.contains(&n) => {
            let detail = match (get("url"), get("ref")) {
                (Some(url), _) if url.is_truthy() => format!(" {}", url.to_str()),
                (_, Some(r)) if r.is_truthy() => format!(" ref={}", r.to_str()),
                _ => String::new(),
            };
            format!("[{n}]{detail} ({len} chars)")
        }
        "web_search" => format!(
            "[web_search] query='{}' ({len} chars result)",
            show("query", "?")
        ),
        "web_extract" => format!(
            "[web_extract] {} ({len} chars)",
            web_extract_urls(get("urls"))?
        ),
        "delegate_task" => format!(
            "[delegate_task] '{}' ({len} chars result)",
            cut(&str_arg("goal"), 60, 57)
        ),
        "execute_code" => {
            let code = str_arg("code");
            let mut preview = py::head(&code, 60).replace('\n', " ");
            if py::len(&code) > 60 {
                preview.push_str("...");
            }
            format!("[execute_code] `{preview}` ({lines} lines output)")
        }
        "skill_view" | "skills_list" | "skill_manage" => {
            format!("[{name}] name={} ({len} chars)", show("name", "?"))
        }
        "vision_analyze" => format!(
            "[vision_analyze] '{}' ({len} chars)",
            py::head(&str_arg("question"), 50)
        ),
        "memory" => format!(
            "[memory] {} on {}",
            show("action", "?"),
            show("target", "?")
        ),
        "todo" => "[todo] updated task list".to_owned(),
        "clarify" => "[clarify] asked user a question".to_owned(),
        "text_to_speech" => format!("[text_to_speech] generated audio ({len} chars)"),
        "cronjob" => format!("[cronjob] {}", show("action", "?")),
        "process" => format!(
            "[process] {} session={}",
            show("action", "?"),
            show("session_id", "?")
        ),
        other => generic(other, &args, &len),
    };
    Ok(line)
}

/// The arguments as hermes reads them: `json.loads(args) if args else {}`, and `{}` for
/// anything that is not an object. A non-string `args` makes `json.loads` raise the
/// TypeError hermes catches; an over-long integer raises the ValueError it does not.
fn parse_args(args: &Value) -> Result<PyValue, Raised> {
    let empty = PyValue::Dict(Vec::new());
    let Value::String(s) = args else {
        return Ok(empty);
    };
    if s.is_empty() {
        return Ok(empty);
    }
    match py::loads(s) {
        Some(v) if has_huge_int(&v) => Err(Raised),
        Some(v @ PyValue::Dict(_)) => Ok(v),
        // Too deep for Python's recursion limit: RecursionError, not a decode error.
        None if crate::json::max_depth(s) >= NESTING_LIMIT => Err(Raised),
        _ => Ok(empty),
    }
}

/// An integer `json.loads` refuses to convert (more than 4300 digits).
fn has_huge_int(v: &PyValue) -> bool {
    match v {
        PyValue::Int(digits) => digits.trim_start_matches('-').len() > INT_MAX_STR_DIGITS,
        PyValue::List(items) => items.iter().any(has_huge_int),
        PyValue::Dict(entries) => entries.iter().any(|(_, v)| has_huge_int(v)),
        _ => false,
    }
}

/// The generic line: up to two `key=value` pairs, values as `str(v)[:40]`.
fn generic(name: &str, args: &PyValue, len: &str) -> String {
    let mut first = String::new();
    if let PyValue::Dict(entries) = args {
        for (k, v) in entries.iter().take(2) {
            first.push_str(&format!(" {k}={}", py::head(&v.to_str(), 40)));
        }
    }
    format!("[{name}]{first} ({len} chars result)")
}

/// `web_extract`'s url description: the first url (unwrapped from a search-result
/// object) and how many more follow.
fn web_extract_urls(urls: Option<&PyValue>) -> Result<String, Raised> {
    let list = match urls {
        Some(PyValue::List(items)) => Some(items),
        _ => None,
    };
    let question = PyValue::Str("?".to_owned());
    let first = match list.and_then(|items| items.first()) {
        Some(PyValue::Dict(_)) => {
            let item = list.and_then(|items| items.first());
            let pick = |k: &str| item.and_then(|d| d.get(k)).filter(|v| v.is_truthy());
            pick("url")
                .or_else(|| pick("href"))
                .cloned()
                .unwrap_or(question)
        }
        Some(s @ PyValue::Str(_)) => s.clone(),
        _ => question,
    };
    let more = list.map_or(0, Vec::len);
    if more <= 1 {
        return Ok(first.to_str());
    }
    let suffix = format!(" (+{} more)", more - 1);
    match first {
        PyValue::Str(s) => Ok(s + &suffix),
        // `list += str` extends the list with the string's characters.
        PyValue::List(mut items) => {
            items.extend(suffix.chars().map(|c| PyValue::Str(c.to_string())));
            Ok(PyValue::List(items).to_str())
        }
        // `dict + str`, `int + str`, ...: TypeError.
        _ => Err(Raised),
    }
}

/// `s` cut to `keep` code points + `...` when longer than `max`.
fn cut(s: &str, max: usize, keep: usize) -> String {
    if py::len(s) > max {
        format!("{}...", py::head(s, keep))
    } else {
        s.to_owned()
    }
}

/// The first group of the first match, as `re.search(...).group(1)`.
fn first_group<'a>(re: &Regex, text: &'a str) -> Option<&'a str> {
    let caps = re.captures(text).ok()??;
    caps.get(1).map(|m| m.as_str())
}

#[cfg(test)]
mod tests {
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
}
