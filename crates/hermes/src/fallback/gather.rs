//! The data hermes gathers from the dropped turns for its fallback summary (passes A and
//! B of `_build_static_fallback_summary`, hermes 0.19.0 1944–2036).

use std::collections::HashMap;
use std::sync::LazyLock;

use fancy_regex::Regex;
use serde_json::Value;

use super::{MAX_DROPPED, MAX_FILES};
use crate::answer::{redact_if, squeeze_spaces};
use crate::py::{self, PyValue};
use crate::{message, tool_summary, Switches};

/// Longest turn text kept (`_FALLBACK_TURN_MAX_CHARS`) and the cut that keeps the marker
/// within it.
const TURN_MAX: usize = 700;
const TURN_CUT: usize = 685;
/// Keys of tool arguments whose string values are paths.
const PATH_KEYS: [&str; 4] = ["path", "workdir", "file_path", "output_path"];
const MAX_NAMES: usize = 6;

static GH_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r"\bgh[pousr]_[A-Za-z0-9_]{8,}\b"));
static GH_TOKEN_TAIL: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r"\bgh[pousr]_[A-Za-z0-9_.-]+"));
static PATH_MENTION: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r#"(?:/|~/?|[A-Za-z]:\\)[^\s`'")\]}<>]+"#));
static BLOCKER: LazyLock<Regex> = LazyLock::new(|| {
    py::re::compile(r"(?i)\b(error|failed|exception|traceback|timeout|timed out|fatal)\b")
});

/// The lists hermes gathers from the dropped turns, in its order.
#[derive(Default)]
pub(super) struct Gathered {
    pub(super) asks: Vec<String>,
    pub(super) actions: Vec<String>,
    pub(super) tool_actions: Vec<String>,
    pub(super) files: Vec<String>,
    pub(super) blockers: Vec<String>,
    pub(super) dropped: Vec<String>,
}

/// Call id → (name, redacted arguments), from pass A (the last call of an id wins, as
/// with hermes' dict).
pub(super) type CallIndex = HashMap<String, (String, String)>;

impl Gathered {
    /// Pass A: the tool calls of assistant turns, indexed by id, their arguments scanned
    /// for paths.
    pub(super) fn pass_a(&mut self, turns: &[Value], opts: &Switches) -> CallIndex {
        let mut index = CallIndex::new();
        for msg in turns {
            if message::role(msg) != Some("assistant") {
                continue;
            }
            for call in calls_of(msg) {
                let (name, raw_args) = name_and_args(call);
                let args = redact_if(&raw_args, opts);
                let id = call
                    .and_then(|c| c.get("id"))
                    .filter(|v| py::is_truthy(v))
                    .map(py::str_of)
                    .unwrap_or_default();
                if !id.is_empty() {
                    index.insert(id, (name, args.clone()));
                }
                if !args.is_empty() {
                    match py::loads(&args) {
                        Some(parsed) => self.paths_in_json(&parsed),
                        None => self.path_mentions(&args),
                    }
                }
            }
        }
        index
    }

    /// Pass B: every turn, in order, into asks, actions, tool actions, blockers and the
    /// last dropped turns.
    pub(super) fn pass_b(&mut self, turns: &[Value], calls: &CallIndex, opts: &Switches) {
        for msg in turns {
            let role = message::role(msg);
            let mut text = compact(message::content(msg), opts);
            self.path_mentions(&text);

            let names: Vec<String> = if role == Some("assistant") {
                calls_of(msg).map(|c| name_and_args(c).0).collect()
            } else {
                Vec::new()
            };
            let mut turn_text = text.clone();
            if !names.is_empty() {
                let prefix = format!("tool calls: {}", first_names(&names));
                turn_text = if turn_text.is_empty() {
                    prefix
                } else {
                    format!("{prefix}; {turn_text}")
                };
            }
            self.remember_dropped(&py::upper(role.unwrap_or("unknown")), &turn_text);

            if py::len(&text) > 600 {
                text = format!(
                    "{} ... {}",
                    py::rstrip(py::head(&text, 420)),
                    py::lstrip(py::last(&text, 160))
                );
            }
            match role {
                Some("user") if !text.is_empty() => self.asks.push(text),
                Some("assistant") => {
                    if !names.is_empty() {
                        self.actions
                            .push(format!("Called tool(s): {}", first_names(&names)));
                    } else if !text.is_empty() {
                        self.actions.push(text);
                    }
                }
                Some("tool") => {
                    let id = msg
                        .get("tool_call_id")
                        .filter(|v| py::is_truthy(v))
                        .map(py::str_of)
                        .unwrap_or_default();
                    let (name, args) = calls
                        .get(&id)
                        .map(|v| (v.0.as_str(), v.1.as_str()))
                        .unwrap_or(("unknown", ""));
                    self.tool_actions
                        .push(tool_summary::summarize(name, args, &text));
                    if BLOCKER.is_match(&text).unwrap_or(false) {
                        self.blockers.push(py::head(&text, 500).to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// `_remember_dropped_turn`: `LABEL: text` when the text is not blank, the last 8 kept.
    fn remember_dropped(&mut self, label: &str, text: &str) {
        let text = py::strip(text);
        if text.is_empty() {
            return;
        }
        self.dropped.push(format!("{label}: {text}"));
        if self.dropped.len() > MAX_DROPPED {
            self.dropped.remove(0);
        }
    }

    /// `_collect_paths_from_jsonish`: string values under path keys, and path mentions in
    /// every string, walking objects and arrays.
    fn paths_in_json(&mut self, value: &PyValue) {
        match value {
            PyValue::Dict(pairs) => {
                for (key, val) in pairs {
                    if let PyValue::Str(s) = val {
                        if PATH_KEYS.contains(&key.as_str()) {
                            self.add_file(s);
                        }
                    }
                    self.paths_in_json(val);
                }
            }
            PyValue::List(items) => items.iter().for_each(|v| self.paths_in_json(v)),
            PyValue::Str(s) => self.path_mentions(s),
            _ => {}
        }
    }

    /// `_collect_path_mentions`: each path-like run, right-stripped of `.,:;`.
    fn path_mentions(&mut self, text: &str) {
        let mentions: Vec<String> = PATH_MENTION
            .find_iter(text)
            .filter_map(Result::ok)
            .map(|m| {
                m.as_str()
                    .trim_end_matches(['.', ',', ':', ';'])
                    .to_string()
            })
            .collect();
        for m in mentions {
            self.add_file(&m);
        }
    }

    /// `_dedupe_append` with the limit of 12.
    fn add_file(&mut self, value: &str) {
        let value = py::strip(value);
        if !value.is_empty()
            && !self.files.iter().any(|f| f == value)
            && self.files.len() < MAX_FILES
        {
            self.files.push(value.to_string());
        }
    }
}

/// The calls of a message as hermes iterates `msg.get("tool_calls") or []`: the items of
/// a list (`Some` for objects, `None` for anything else), one `None` per character of a
/// string or key of an object; nothing for a falsy or other value (H1: a truthy number
/// crashes hermes).
fn calls_of(msg: &Value) -> Box<dyn Iterator<Item = Option<&Value>> + '_> {
    match msg.get("tool_calls") {
        Some(Value::Array(items)) => Box::new(items.iter().map(|c| c.is_object().then_some(c))),
        Some(Value::String(s)) => Box::new(s.chars().map(|_| None)),
        Some(Value::Object(map)) => Box::new(map.keys().map(|_| None)),
        _ => Box::new(std::iter::empty()),
    }
}

/// `_extract_tool_call_name_and_args`: `str(name or "unknown")`, `str(arguments or "")`;
/// a call that is not an object is `("unknown", "")`, and so is its function when that
/// is not an object (H1: hermes crashes on a truthy non-object function).
fn name_and_args(call: Option<&Value>) -> (String, String) {
    let function = call
        .and_then(|c| c.get("function"))
        .filter(|f| f.is_object());
    let field = |key: &str| {
        function
            .and_then(|f| f.get(key))
            .filter(|v| py::is_truthy(v))
            .map(py::str_of)
    };
    (
        field("name").unwrap_or_else(|| "unknown".to_string()),
        field("arguments").unwrap_or_default(),
    )
}

/// The first six names joined by `, `.
fn first_names(names: &[String]) -> String {
    names
        .iter()
        .take(MAX_NAMES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `_compact_fallback_turn`: the text view, redacted, GitHub tokens masked, whitespace
/// runs made one space, stripped, cut at 700.
fn compact(content: Option<&Value>, opts: &Switches) -> String {
    let text = redact_if(&message::text_view(content), opts);
    let text = replace_all(&GH_TOKEN, &text, "[REDACTED]");
    let squeezed = squeeze_spaces(&text);
    let mut text = py::strip(&squeezed).to_string();
    if py::len(&text) > TURN_MAX {
        text = format!("{} ...[truncated]", py::rstrip(py::head(&text, TURN_CUT)));
    }
    replace_all(&GH_TOKEN_TAIL, &text, "[REDACTED]")
}

/// Every match of `re` replaced by the literal `with` (the text unchanged should the
/// engine give up, which these linear patterns do not).
fn replace_all(re: &Regex, text: &str, with: &str) -> String {
    re.try_replacen(text, 0, fancy_regex::NoExpand(with))
        .map(|s| s.into_owned())
        .unwrap_or_else(|_| text.to_string())
}
