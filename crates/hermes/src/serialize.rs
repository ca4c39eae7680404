//! The text the summarizer reads: the turns to summarize, one labelled part per message
//! (`_serialize_for_summary`, 1835; contract §9).
//!
//! Design decisions:
//! * The order of the steps is hermes's: content text, redaction, `MEDIA:` directives,
//!   think-strip (assistants only), then the per-role caps. Redaction runs before the
//!   think-strip, so a secret inside a reasoning block is gone either way.
//! * Shapes that crash hermes get the readings of H1: a null or non-string role is
//!   absent (`unknown`), a non-string `text` part is `""`, a `function` that is not an
//!   object is `{}`, null `arguments` are `""`, and a `type` that Python cannot hash
//!   (a list or object) is shown like any other unknown type.
//! * Everywhere else the values hermes formats with `str()` are *pystr*, so a `null`
//!   `tool_call_id` reads `None`, as hermes writes it.

use super::message;
use super::py;
use super::think::strip_think_blocks;
use super::Switches;
use fancy_regex::Regex;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::LazyLock;

/// Per-message cap: above `CONTENT_MAX` code points keep the head and the tail.
const CONTENT_MAX: usize = 6000;
const CONTENT_HEAD: usize = 4000;
const CONTENT_TAIL: usize = 1500;
/// Tool-call arguments above `ARGS_MAX` keep their first `ARGS_HEAD` code points.
const ARGS_MAX: usize = 1500;
const ARGS_HEAD: usize = 1200;

/// hermes's `_MEDIA_DIRECTIVE_RE` (325).
static MEDIA: LazyLock<Regex> = LazyLock::new(|| py::re::compile(r"MEDIA:\S+"));

/// The serialized turns, parts joined by a blank line.
pub fn serialize(turns: &[Value], opts: &Switches) -> String {
    turns
        .iter()
        .map(|m| serialize_message(m, opts))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One message's part: `[ROLE]: text`, `[TOOL RESULT id]: text`, or the assistant's
/// text followed by its tool calls.
pub(crate) fn serialize_message(msg: &Value, opts: &Switches) -> String {
    compactd_core::cancel::checkpoint();
    let role = message::role(msg).unwrap_or("unknown");
    let mut text = redact(&content_text(message::content(msg)), opts).into_owned();
    if let Ok(Cow::Owned(replaced)) = MEDIA.try_replacen(&text, 0, "[media attachment]") {
        text = replaced;
    }
    if role == "assistant" && !text.is_empty() {
        text = strip_think_blocks(&text);
    }
    match role {
        "tool" => {
            let id = msg.get("tool_call_id").map(py::str_of).unwrap_or_default();
            format!("[TOOL RESULT {id}]: {}", cap(&text))
        }
        "assistant" => {
            let mut out = format!("[ASSISTANT]: {}", cap(&text));
            let calls = call_lines(msg.get("tool_calls"), opts);
            if !calls.is_empty() {
                out.push_str("\n[Tool calls:\n");
                out.push_str(&calls.join("\n"));
                out.push_str("\n]");
            }
            out
        }
        other => format!("[{}]: {}", py::upper(other), cap(&text)),
    }
}

fn redact<'a>(text: &'a str, opts: &Switches) -> Cow<'a, str> {
    if opts.redact {
        Cow::Owned(super::redact::redact_sensitive_text(text))
    } else {
        Cow::Borrowed(text)
    }
}

/// The content as text: a list joins its parts with `\n`, a falsy value is `""`, any
/// other non-string is *pystr*.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(part_text)
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(s)) => s.clone(),
        Some(v) if py::is_truthy(v) => py::str_of(v),
        _ => String::new(),
    }
}

/// A list part: a text part's text, an image's label, `[type]` for other objects; a
/// string part as it is; other values are skipped.
fn part_text(part: &Value) -> Option<String> {
    match part {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => {
            let ptype = o.get("type");
            Some(match ptype {
                Some(Value::String(t)) if t == "text" => {
                    // H1: a null or non-string text reads as "".
                    o.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                }
                _ if message::is_image_part(part) => image_label(part),
                Some(t) if py::is_truthy(t) => format!("[{}]", py::str_of(t)),
                _ => "[attachment]".to_string(),
            })
        }
        _ => None,
    }
}

/// `_image_part_label` (672): the http(s) URL when there is one, else `[image]`.
fn image_label(part: &Value) -> String {
    let url = match part.get("image_url") {
        Some(Value::Object(o)) => match o.get("url") {
            Some(u) if py::is_truthy(u) => py::str_of(u),
            _ => String::new(),
        },
        Some(Value::String(s)) => s.clone(),
        _ => match part.get("url") {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
    };
    if url.starts_with("http://") || url.starts_with("https://") {
        format!("[image: {url}]")
    } else {
        "[image]".to_string()
    }
}

/// `cap(x)`: over 6000 code points, the first 4000, a marker and the last 1500.
fn cap(text: &str) -> Cow<'_, str> {
    if py::len(text) > CONTENT_MAX {
        Cow::Owned(format!(
            "{}\n...[truncated]...\n{}",
            py::head(text, CONTENT_HEAD),
            py::last(text, CONTENT_TAIL)
        ))
    } else {
        Cow::Borrowed(text)
    }
}

/// One line per tool call, as hermes iterates a truthy `tool_calls`: the items of a list,
/// the keys of an object, the characters of a string (none of which is a call object,
/// so each reads `?(...)`). Other truthy values crash hermes; they give no lines (H1).
fn call_lines(calls: Option<&Value>, opts: &Switches) -> Vec<String> {
    let opaque = |n: usize| vec!["  ?(...)".to_string(); n];
    match calls {
        Some(Value::Array(items)) => items.iter().map(|tc| call_line(tc, opts)).collect(),
        Some(Value::Object(keys)) => opaque(keys.len()),
        Some(Value::String(s)) => opaque(s.chars().count()),
        _ => Vec::new(),
    }
}

/// `  name(args)`, args redacted and cut to 1200 + `...` when over 1500.
fn call_line(tc: &Value, opts: &Switches) -> String {
    if !tc.is_object() {
        return "  ?(...)".to_string();
    }
    // H1: a `function` that is null (or any non-object) counts as {}.
    let function = tc.get("function").filter(|f| f.is_object());
    let field = |key: &str| function.and_then(|f| f.get(key));
    let name = field("name").map(py::str_of).unwrap_or_else(|| "?".into());
    let raw = match field("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(v) => py::str_of(v),
    };
    let args = redact(&raw, opts);
    if py::len(&args) > ARGS_MAX {
        format!("  {name}({}...)", py::head(&args, ARGS_HEAD))
    } else {
        format!("  {name}({args})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Switches = Switches {
        redact: false,
        no_head_role_user: false,
    };

    fn ser(turns: Value) -> String {
        serialize(turns.as_array().unwrap(), &PLAIN)
    }

    // Expected texts: hermes 0.19.0 `_serialize_for_summary`, HERMES_REDACT_SECRETS=false.

    #[test]
    fn roles_label_the_parts_and_missing_roles_are_unknown() {
        let turns = json!([
            {"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
            {"content": "norole"}, {"role": "developer", "content": "dev ß"},
            {"role": "user", "content": null}, {"role": "user"}
        ]);
        assert_eq!(
            ser(turns),
            "[SYSTEM]: sys\n\n[USER]: hi\n\n[UNKNOWN]: norole\n\n[DEVELOPER]: dev ß\n\n[USER]: \n\n[USER]: "
        );
        // H1: a null role reads as absent; a non-object message has neither role nor text.
        assert_eq!(
            ser(json!([{"role": null, "content": "x"}, 5])),
            "[UNKNOWN]: x\n\n[UNKNOWN]: "
        );
        // str.upper is the full mapping.
        assert_eq!(
            ser(json!([{"role": "straße", "content": ""}])),
            "[STRASSE]: "
        );
    }

    #[test]
    fn list_parts_text_images_and_markers() {
        let turns = json!([{"role": "user", "content": [
            "s1", {"type": "text", "text": "t1"}, {"type": "text"},
            {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            {"type": "image_url", "image_url": "http://y/b.png"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAA"},
            {"type": "image", "url": "https://z"}, {"type": "image", "source": {"data": "x"}},
            {"type": "image_url", "image_url": {"url": 5}},
            {"type": "input_text", "text": "hidden"}, {"type": "file"}, {"x": 1},
            {"type": ""}, {"type": 7}, 5, null
        ]}]);
        assert_eq!(
            ser(turns),
            "[USER]: s1\nt1\n\n[image: https://x/a.png]\n[image: http://y/b.png]\n[image]\n[image: https://z]\n[image]\n[image]\n[input_text]\n[file]\n[attachment]\n[attachment]\n[7]"
        );
        // H1: non-string text is "" (hermes raises in the join).
        assert_eq!(
            ser(json!([{"role": "user", "content": [{"type": "text", "text": null}, "a"]}])),
            "[USER]: \na"
        );
    }

    #[test]
    fn scalar_and_object_content_is_pystr_and_falsy_is_empty() {
        let turns = json!([
            {"role": "user", "content": 0}, {"role": "user", "content": 12.50},
            {"role": "user", "content": {"_multimodal": true, "text_summary": "s"}},
            {"role": "user", "content": []}, {"role": "user", "content": false},
            {"role": "user", "content": true}
        ]);
        assert_eq!(
            ser(turns),
            "[USER]: \n\n[USER]: 12.5\n\n[USER]: {'_multimodal': True, 'text_summary': 's'}\n\n[USER]: \n\n[USER]: \n\n[USER]: True"
        );
    }

    #[test]
    fn media_directives_become_a_marker() {
        let turns = json!([{"role": "user",
            "content": "see MEDIA:/tmp/a.png and MEDIA: x MEDIA:https://q\u{3000}done"}]);
        // U+3000 is whitespace to Python, so the directive stops before it.
        assert_eq!(
            ser(turns),
            "[USER]: see [media attachment] and MEDIA: x [media attachment]\u{3000}done"
        );
    }

    #[test]
    fn tool_results_carry_the_call_id_as_pystr() {
        let turns = json!([
            {"role": "tool", "tool_call_id": "call_1", "content": "out"},
            {"role": "tool", "content": "noid"},
            {"role": "tool", "tool_call_id": null, "content": "nullid"},
            {"role": "tool", "tool_call_id": 7, "content": ""}
        ]);
        assert_eq!(
            ser(turns),
            "[TOOL RESULT call_1]: out\n\n[TOOL RESULT ]: noid\n\n[TOOL RESULT None]: nullid\n\n[TOOL RESULT 7]: "
        );
    }

    #[test]
    fn assistants_lose_reasoning_and_list_their_calls() {
        let turns = json!([
            {"role": "assistant", "content": "<think>plan</think>answer", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"x\"}"}},
                {"id": "b", "function": {"arguments": "{}"}},
                {"id": "c", "function": {"name": null, "arguments": {"a": 1}}},
                {"id": "d"}, "junk", 5
            ]},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "assistant", "content": "x", "tool_calls": {"k1": 1, "k2": 2}},
            {"role": "assistant", "content": "", "tool_calls": "ab"}
        ]);
        assert_eq!(
            ser(turns),
            "[ASSISTANT]: answer\n[Tool calls:\n  read_file({\"path\": \"x\"})\n  ?({})\n  None({'a': 1})\n  ?()\n  ?(...)\n  ?(...)\n]\n\n[ASSISTANT]: \n\n[ASSISTANT]: x\n[Tool calls:\n  ?(...)\n  ?(...)\n]\n\n[ASSISTANT]: \n[Tool calls:\n  ?(...)\n  ?(...)\n]"
        );
        // H1: function null is {}, arguments null is "".
        assert_eq!(
            ser(json!([{"role": "assistant", "content": "", "tool_calls": [
                {"function": null}, {"function": {"name": "n", "arguments": null}}]}])),
            "[ASSISTANT]: \n[Tool calls:\n  ?()\n  n()\n]"
        );
        // Only assistants are think-stripped.
        assert_eq!(
            ser(
                json!([{"role": "user", "content": "<think>kept for users</think>"},
                       {"role": "assistant", "content": "<think>only thoughts</think>"}])
            ),
            "[USER]: <think>kept for users</think>\n\n[ASSISTANT]: "
        );
    }

    #[test]
    fn long_texts_and_arguments_are_capped_in_code_points() {
        let turns = json!([
            {"role": "user", "content": "é".repeat(6001)},
            {"role": "user", "content": "a".repeat(6000)},
            {"role": "tool", "tool_call_id": "t", "content": "\u{1F600}".repeat(7000)},
            {"role": "assistant", "content": "b".repeat(3000) + &"c".repeat(3001), "tool_calls": [
                {"function": {"name": "w", "arguments": "z".repeat(1501)}},
                {"function": {"name": "w", "arguments": "y".repeat(1500)}}
            ]}
        ]);
        let out = ser(turns);
        // hermes: 25,339 code points, md5 prefix 82b5b367afbd.
        assert_eq!(py::len(&out), 25_339);
        assert_eq!(py::md5_key(&out), "82b5b367afbd");
        let marker = "\n...[truncated]...\n";
        assert!(out.starts_with(&format!(
            "[USER]: {}{marker}{}\n\n",
            "é".repeat(4000),
            "é".repeat(1500)
        )));
        assert!(out.contains(&format!("\n\n[USER]: {}\n\n", "a".repeat(6000))));
        assert!(out.contains(&format!(
            "  w({}...)\n  w({})\n]",
            "z".repeat(1200),
            "y".repeat(1500)
        )));
    }

    #[test]
    fn redaction_runs_before_the_think_strip_and_on_arguments() {
        // hermes with redaction on: the masked assignment swallows `</think>done`, so the
        // now unterminated reasoning block takes the rest of the text.
        let turns = json!([
            {"role": "user", "content": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 ok"},
            {"role": "assistant", "content": "<think>OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx</think>done",
             "tool_calls": [{"function": {"name": "terminal",
                "arguments": "{\"command\": \"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\"}"}}]}
        ]);
        assert_eq!(
            serialize(turns.as_array().unwrap(), &Switches::default()),
            "[USER]: my key is sk-pro...6789 ok\n\n[ASSISTANT]: \n[Tool calls:\n  terminal({\"command\": \"export GITHUB_TOKEN=***)\n]"
        );
    }
}
