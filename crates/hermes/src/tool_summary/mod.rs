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

use crate::py::{self, PyValue};

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
pub(crate) fn summarize_value(name: &Value, args: &Value, content: &str) -> String {
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
        None if compactd_core::json::max_depth(s) >= NESTING_LIMIT => Err(Raised),
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
mod tests;
