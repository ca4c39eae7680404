//! The static fallback summary and the failure's error text (section 12 of
//! `docs/hermes.md`; hermes 0.19.0 `_build_static_fallback_summary` 1923–2115).
//!
//! When the summarizer fails and the pipeline does not abort, hermes writes a summary
//! locally from the turns it drops: the last user ask, the actions and tool results, the
//! paths mentioned, error lines and the last dropped turns. [`build`] gathers the same data
//! the same way and fills our wording of that template (`prompts/hermes/fallback.md`).
//!
//! Design decisions:
//! * The data formats (`User asked: …`, `1. …`, `- …`, `None.`, the failure reason
//!   sentence) are hermes's, written by code, so the conformance harness can lift the slot
//!   values out of hermes's output and refill our text with them (`prompts/hermes/README.md`).
//! * Tool calls are read as hermes iterates them: a list's items, a string's characters
//!   and an object's keys all count as calls (the last two as calls without a name).
//! * The 8,000-character cut counts the prefix, as hermes's does.

use std::sync::LazyLock;

use fancy_regex::Regex;
use serde_json::Value;

use crate::hermes::answer::with_prefix;
use crate::hermes::py::{self, PyValue};
use crate::hermes::texts::{fill, HermesTexts};
use crate::hermes::{message, redact, tool_summary, Options};

/// Longest error text reported; longer ones are cut to [`ERROR_CUT`] + `...`.
const ERROR_MAX: usize = 220;
const ERROR_CUT: usize = 217;

/// Longest turn text kept (`_FALLBACK_TURN_MAX_CHARS`) and the cut that keeps the marker
/// within it.
const TURN_MAX: usize = 700;
const TURN_CUT: usize = 685;
/// Longest fallback summary, prefix included; the cut keeps the marker within it.
const SUMMARY_MAX: usize = 8000;
const SUMMARY_CUT: usize = 7958;
const SUMMARY_TRUNCATED: &str = "\n...[fallback summary truncated]";

/// `{task}` when no user ask was dropped.
pub const UNKNOWN_TASK: &str = "Unknown from deterministic fallback.";
/// `{completed}` when no action was dropped.
pub const NO_COMPLETED: &str = "None recoverable from compacted turns.";
/// An empty bullet list.
const NONE: &str = "None.";

/// Keys of tool arguments whose string values are paths.
const PATH_KEYS: [&str; 4] = ["path", "workdir", "file_path", "output_path"];
const MAX_FILES: usize = 12;
const MAX_DROPPED: usize = 8;
const MAX_NAMES: usize = 6;
const MAX_COMPLETED: usize = 12;
const MAX_BLOCKERS: usize = 5;

static GH_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r"\bgh[pousr]_[A-Za-z0-9_]{8,}\b"));
static GH_TOKEN_TAIL: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r"\bgh[pousr]_[A-Za-z0-9_.-]+"));
static PATH_MENTION: LazyLock<Regex> =
    LazyLock::new(|| py::re::compile(r#"(?:/|~/?|[A-Za-z]:\\)[^\s`'")\]}<>]+"#));
static BLOCKER: LazyLock<Regex> = LazyLock::new(|| {
    py::re::compile(r"(?i)\b(error|failed|exception|traceback|timeout|timed out|fatal)\b")
});

/// The error text of a failure as hermes reports it: the message stripped (the exception
/// type's name when that is empty), and when over 220 code points, its first 217
/// right-stripped + `...`.
pub fn error_text(message: &str, type_name: &str) -> String {
    let text = match py::strip(message) {
        "" => type_name,
        t => t,
    };
    if py::len(text) > ERROR_MAX {
        format!("{}...", py::rstrip(py::head(text, ERROR_CUT)))
    } else {
        text.to_string()
    }
}

/// The static fallback summary of `turns` (prefix included), with the failure `reason`.
/// `previous_summary` is the state's (or the one found in the messages); a non-empty one
/// adds the note that an earlier summary existed.
pub fn build(
    turns: &[Value],
    previous_summary: Option<&str>,
    reason: Option<&str>,
    texts: &HermesTexts,
    opts: &Options,
) -> String {
    let s = Slots::gather(turns, previous_summary, reason, opts);
    let previous_note = if s.previous_note {
        format!("\n\n{}", texts.fallback_note)
    } else {
        String::new()
    };
    let body = fill(
        &texts.fallback,
        &[
            ("task", &s.task),
            ("previous_note", &previous_note),
            ("completed", &s.completed),
            ("blockers", &s.blockers),
            ("files", &s.files),
            ("dropped", &s.dropped),
            ("count", &s.count),
            ("reason", &s.reason),
        ],
    );
    let summary = with_prefix(&redact_if(py::strip(&body), opts), texts);
    if py::len(&summary) > SUMMARY_MAX {
        format!(
            "{}{SUMMARY_TRUNCATED}",
            py::rstrip(py::head(&summary, SUMMARY_CUT))
        )
    } else {
        summary
    }
}

/// The values of the fallback's slots, each written as hermes writes its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slots {
    /// `User asked: pyrepr(last ask)`, or [`UNKNOWN_TASK`].
    pub task: String,
    /// Whether the note that a previous summary existed goes in.
    pub previous_note: bool,
    /// `1. …` lines (actions, then tool actions, at most 12), or [`NO_COMPLETED`].
    pub completed: String,
    /// `- …` lines (at most 5), or `None.`.
    pub blockers: String,
    /// `- …` lines (at most 12), or `None.`.
    pub files: String,
    /// `- LABEL: …` lines (the last 8), or `None.`.
    pub dropped: String,
    /// The number of turns.
    pub count: String,
    /// ` Summary failure reason: {reason}.`, or `""`.
    pub reason: String,
}

impl Slots {
    /// Gathers the slot values from the dropped `turns`.
    pub fn gather(
        turns: &[Value],
        previous_summary: Option<&str>,
        reason: Option<&str>,
        opts: &Options,
    ) -> Slots {
        let mut data = Gathered::default();
        let calls = data.pass_a(turns, opts);
        data.pass_b(turns, &calls, opts);
        let completed: Vec<String> = data
            .actions
            .iter()
            .chain(&data.tool_actions)
            .take(MAX_COMPLETED)
            .enumerate()
            .map(|(i, item)| format!("{}. {item}", i + 1))
            .collect();
        Slots {
            task: match data.asks.last() {
                Some(ask) => format!("User asked: {}", py::repr_str(ask)),
                None => UNKNOWN_TASK.to_string(),
            },
            previous_note: previous_summary.is_some_and(|p| !p.is_empty()),
            completed: if completed.is_empty() {
                NO_COMPLETED.to_string()
            } else {
                completed.join("\n")
            },
            blockers: bullets(&data.blockers, MAX_BLOCKERS),
            files: bullets(&data.files, MAX_FILES),
            dropped: bullets(&data.dropped, MAX_DROPPED),
            count: turns.len().to_string(),
            reason: match reason {
                Some(r) if !r.is_empty() => format!(" Summary failure reason: {r}."),
                _ => String::new(),
            },
        }
    }
}

/// The lists hermes gathers from the dropped turns, in its order.
#[derive(Default)]
struct Gathered {
    asks: Vec<String>,
    actions: Vec<String>,
    tool_actions: Vec<String>,
    files: Vec<String>,
    blockers: Vec<String>,
    dropped: Vec<String>,
}

/// Call id → (name, redacted arguments), from pass A.
type CallIndex = Vec<(String, (String, String))>;

impl Gathered {
    /// Pass A: the tool calls of assistant turns, indexed by id, their arguments scanned
    /// for paths.
    fn pass_a(&mut self, turns: &[Value], opts: &Options) -> CallIndex {
        let mut index: CallIndex = Vec::new();
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
                    match index.iter_mut().find(|(k, _)| *k == id) {
                        Some(entry) => entry.1 = (name, args.clone()),
                        None => index.push((id, (name, args.clone()))),
                    }
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
    fn pass_b(&mut self, turns: &[Value], calls: &CallIndex, opts: &Options) {
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
                        .iter()
                        .find(|(k, _)| *k == id)
                        .map(|(_, v)| (v.0.as_str(), v.1.as_str()))
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
fn compact(content: Option<&Value>, opts: &Options) -> String {
    let text = redact_if(&message::text_view(content), opts);
    let text = replace_all(&GH_TOKEN, &text, "[REDACTED]");
    let squeezed = squeeze_spaces(&text);
    let mut text = py::strip(&squeezed).to_string();
    if py::len(&text) > TURN_MAX {
        text = format!("{} ...[truncated]", py::rstrip(py::head(&text, TURN_CUT)));
    }
    replace_all(&GH_TOKEN_TAIL, &text, "[REDACTED]")
}

/// `_bullets`: the first `limit` distinct non-blank items, stripped, as `- item` lines,
/// or `None.`.
fn bullets(items: &[String], limit: usize) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for item in items {
        let item = py::strip(item);
        if item.is_empty() || unique.contains(&item) {
            continue;
        }
        unique.push(item);
        if unique.len() >= limit {
            break;
        }
    }
    if unique.is_empty() {
        return NONE.to_string();
    }
    unique
        .iter()
        .map(|item| format!("- {item}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every match of `re` replaced by the literal `with` (the text unchanged should the
/// engine give up, which these linear patterns do not).
fn replace_all(re: &Regex, text: &str, with: &str) -> String {
    re.try_replacen(text, 0, fancy_regex::NoExpand(with))
        .map(|s| s.into_owned())
        .unwrap_or_else(|_| text.to_string())
}

/// `re.sub(r"\s+", " ", text)`.
fn squeeze_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.chars() {
        if py::is_space(c) {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out
}

fn redact_if(text: &str, opts: &Options) -> String {
    if opts.redact {
        redact::redact_sensitive_text(text)
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Options = Options {
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
        assert_eq!(error_text("  boom \n", "RuntimeError"), "boom");
        assert_eq!(error_text(" ", "TimeoutError"), "TimeoutError");
        let exact = "e".repeat(220);
        assert_eq!(error_text(&exact, "E"), exact);
        let long = format!("{}  {}", "a".repeat(216), "b".repeat(20));
        assert_eq!(error_text(&long, "E"), format!("{}...", "a".repeat(216)));
        let astral = "😀".repeat(221);
        assert_eq!(error_text(&astral, "E"), format!("{}...", "😀".repeat(217)));
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
        let args =
            json!({"path": " /a/b.txt ", "nested": [{"workdir": "rel/dir"}, "see /etc/x.conf;"],
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
        let turns = [user(&format!(
            "x {} y",
            crate::hermes::summaries::MERGE_DELIMITER
        ))];
        let t = texts("A {dropped} Z");
        let got = build(&turns, None, None, &t, &PLAIN);
        assert_eq!(got, "[CONTEXT COMPACTION — REFERENCE ONLY] P.\ny Z");
    }
}
