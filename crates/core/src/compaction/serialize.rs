//! The conversation text a summarizer reads (pi's `convertToLlm` followed by
//! `serializeConversation`). Wrapper wording comes from our templates (D3).

use crate::session::entry::value_of;
use crate::session::{Block, Content, Message, Role, Text};
use serde_json::Value;

use super::message::AgentMessage;
use super::stringify::{
    entries_in_js_order, js_number_string, push_string, stringify_into, tool_arguments_raw, Sink,
};
use super::template::Template;

/// Tool results are cut to this many UTF-16 units in the serialized text.
pub(crate) const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// How non-chat messages are put into words for the summarizer.
#[derive(Debug, Clone)]
pub struct Wrappers {
    pub bash_command: Template,
    pub bash_output: Template,
    pub bash_no_output: Template,
    pub bash_cancelled: Template,
    pub bash_exit_code: Template,
    pub bash_truncated: Template,
    pub compaction_summary: Template,
    pub branch_summary: Template,
}

impl Wrappers {
    /// The reference's own wording (pi-coding-agent 0.73.1 `messages.js`). Used by the
    /// conformance tests to compare serialized text exactly.
    pub fn reference() -> Self {
        let t = Template::parse;
        Wrappers {
            bash_command: t("Ran `{command}`\n"),
            bash_output: t("```\n{output}\n```"),
            bash_no_output: t("(no output)"),
            bash_cancelled: t("\n\n(command cancelled)"),
            bash_exit_code: t("\n\nCommand exited with code {exitCode}"),
            bash_truncated: t("\n\n[Output truncated. Full output: {fullOutputPath}]"),
            compaction_summary: t("The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n</summary>"),
            branch_summary: t("The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}</summary>"),
        }
    }
}

/// Where the conversation text goes: the text itself (`String`), or its JSON-escaped
/// bytes (`conversation_json::JsonText`). One serializer writes both, so the two
/// cannot disagree on what the text is.
pub(crate) trait ConversationOut: Sink {
    /// Appends the decoded characters of `t`.
    fn push_text(&mut self, t: &Text);
    /// Appends at most `max_units` UTF-16 units of `t` (`Text::push_prefix_to`).
    fn push_text_prefix(&mut self, t: &Text, max_units: usize);
    /// How much has been written, for [`ConversationOut::truncate`].
    fn mark(&self) -> usize;
    /// Drops what was written after `mark`.
    fn truncate(&mut self, mark: usize);
}

impl ConversationOut for String {
    fn push_text(&mut self, t: &Text) {
        t.push_to(self);
    }

    fn push_text_prefix(&mut self, t: &Text, max_units: usize) {
        t.push_prefix_to(self, max_units);
    }

    fn mark(&self) -> usize {
        self.len()
    }

    fn truncate(&mut self, mark: usize) {
        String::truncate(self, mark);
    }
}

/// Serializes messages, joining the parts with a blank line.
pub fn serialize_conversation<'s, 'a: 's>(
    messages: impl IntoIterator<Item = AgentMessage<'s, 'a>>,
    wrappers: &Wrappers,
) -> String {
    let mut out = String::new();
    write_conversation(messages, wrappers, &mut out, &mut true);
    out
}

/// [`serialize_conversation`] into `out`. `first` says that no part was written yet
/// (no separator before the next one), and is left false once one is: a text written
/// in pieces joins them with `\n\n` when both wrote a part.
pub(crate) fn write_conversation<'s, 'a: 's, O: ConversationOut>(
    messages: impl IntoIterator<Item = AgentMessage<'s, 'a>>,
    wrappers: &Wrappers,
    out: &mut O,
    first: &mut bool,
) {
    let mut sep = |out: &mut O| {
        if !std::mem::take(first) {
            out.push_str("\n\n");
        }
    };
    for msg in messages {
        crate::cancel::checkpoint();
        match msg {
            AgentMessage::Stored(m) => match m.role {
                Role::User => push_user_content(&m.content, out_sep(out, &mut sep)),
                Role::Assistant => push_assistant(m, out, &mut sep),
                Role::ToolResult => push_tool_result(&m.content, out, &mut sep),
                Role::Custom => push_user_content(&m.content, out_sep(out, &mut sep)),
                Role::BashExecution => {
                    if let Some(text) = bash_text(m, wrappers) {
                        sep(out);
                        out.push_str("[User]: ");
                        out.push_str(&text);
                    }
                }
                Role::BranchSummary | Role::CompactionSummary => {
                    let tpl = if m.role == Role::BranchSummary {
                        &wrappers.branch_summary
                    } else {
                        &wrappers.compaction_summary
                    };
                    push_summary(m.summary.as_ref(), tpl, out, &mut sep);
                }
                Role::HookMessage | Role::Other => {}
            },
            AgentMessage::Custom(content) => push_user_content(content, out_sep(out, &mut sep)),
            AgentMessage::BranchSummary(s) => {
                push_summary(Some(s), &wrappers.branch_summary, out, &mut sep)
            }
            AgentMessage::CompactionSummary(s) => {
                push_summary(Some(s), &wrappers.compaction_summary, out, &mut sep)
            }
        }
    }
}

/// A user-role part that is only written when its content is non-empty.
struct PendingPart<'o, O, F: FnMut(&mut O)> {
    out: &'o mut O,
    sep: &'o mut F,
}

fn out_sep<'o, O, F: FnMut(&mut O)>(out: &'o mut O, sep: &'o mut F) -> PendingPart<'o, O, F> {
    PendingPart { out, sep }
}

fn push_user_content<O: ConversationOut, F: FnMut(&mut O)>(
    content: &Content,
    part: PendingPart<'_, O, F>,
) {
    let empty = match content {
        Content::Absent => true,
        Content::Text(t) => t.is_empty(),
        Content::Blocks(bs) => bs
            .iter()
            .all(|b| !matches!(b, Block::Text(t) if !t.is_empty())),
    };
    if empty {
        return;
    }
    (part.sep)(part.out);
    part.out.push_str("[User]: ");
    match content {
        Content::Absent => {}
        Content::Text(t) => part.out.push_text(t),
        Content::Blocks(bs) => {
            for b in bs {
                if let Block::Text(t) = b {
                    part.out.push_text(t);
                }
            }
        }
    }
}

fn push_summary<O: ConversationOut, F: FnMut(&mut O)>(
    summary: Option<&Text>,
    tpl: &Template,
    out: &mut O,
    sep: &mut F,
) {
    let summary = summary.map(|s| s.decode()).unwrap_or_default();
    let text = tpl.render(|v| (v == "summary").then_some(summary.as_ref()));
    if text.is_empty() {
        return;
    }
    sep(out);
    out.push_str("[User]: ");
    out.push_str(&text);
}

fn push_assistant<O: ConversationOut, F: FnMut(&mut O)>(m: &Message, out: &mut O, sep: &mut F) {
    let Content::Blocks(blocks) = &m.content else {
        return;
    };
    let mut thinking = Vec::new();
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b {
            Block::Text(t) => texts.push(t),
            Block::Thinking(t) => thinking.push(t),
            Block::ToolCall(c) => calls.push(c),
            Block::Image | Block::Other => {}
        }
    }
    let mut group = |label: &str, items: &[&Text], out: &mut O| {
        if items.is_empty() {
            return;
        }
        sep(out);
        out.push_str(label);
        for (i, t) in items.iter().enumerate() {
            if i > 0 {
                out.push_str("\n");
            }
            out.push_text(t);
        }
    };
    group("[Assistant thinking]: ", &thinking, out);
    group("[Assistant]: ", &texts, out);
    if !calls.is_empty() {
        sep(out);
        out.push_str("[Assistant tool calls]: ");
        for (i, c) in calls.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_text(&c.name);
            out.push_str("(");
            let mark = out.mark();
            if tool_arguments_raw(c.arguments.get(), out).is_err() {
                out.truncate(mark);
                let mut args = String::new();
                push_arguments(&value_of(c.arguments), &mut args);
                out.push_str(&args);
            }
            out.push_str(")");
        }
    }
}

/// `Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")`.
fn push_arguments(args: &Value, out: &mut String) {
    match args {
        Value::Object(map) => {
            for (i, (k, v)) in entries_in_js_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                stringify_into(v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&i.to_string());
                out.push('=');
                stringify_into(v, out);
            }
        }
        Value::String(s) => {
            // A string's entries are its UTF-16 code units.
            for (i, unit) in s.encode_utf16().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&i.to_string());
                out.push('=');
                match char::from_u32(unit as u32) {
                    Some(c) => push_string(c.encode_utf8(&mut [0; 4]), out),
                    None => out.push_str(&format!("\"\\u{unit:04x}\"")),
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn push_tool_result<O: ConversationOut, F: FnMut(&mut O)>(
    content: &Content,
    out: &mut O,
    sep: &mut F,
) {
    let texts: Vec<&Text> = match content {
        Content::Absent => Vec::new(),
        Content::Text(t) => vec![t],
        Content::Blocks(bs) => bs
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t),
                _ => None,
            })
            .collect(),
    };
    if texts.iter().all(|t| t.is_empty()) {
        return;
    }
    // No text is longer in UTF-16 units than in bytes (escaped or not): a result of
    // at most 2000 bytes is not cut, and needs no count.
    let bytes: usize = texts.iter().map(|t| t.byte_len()).sum();
    if bytes <= TOOL_RESULT_MAX_CHARS {
        sep(out);
        out.push_str("[Tool result]: ");
        for t in texts {
            out.push_text(t);
        }
        return;
    }
    // Each length once: counting is a pass over the whole (possibly long) text.
    let lens: Vec<usize> = texts.iter().map(|t| t.utf16_len()).collect();
    let total: usize = lens.iter().sum();
    if total == 0 {
        return;
    }
    sep(out);
    out.push_str("[Tool result]: ");
    if total <= TOOL_RESULT_MAX_CHARS {
        for t in texts {
            out.push_text(t);
        }
        return;
    }
    // D5: the cut never splits a surrogate pair; the count still says total − 2000.
    let mut budget = TOOL_RESULT_MAX_CHARS;
    for (t, len) in texts.into_iter().zip(lens) {
        if len <= budget {
            out.push_text(t);
            budget -= len;
        } else {
            out.push_text_prefix(t, budget);
            break;
        }
    }
    out.push_str(&format!(
        "\n\n[... {} more characters truncated]",
        total - TOOL_RESULT_MAX_CHARS
    ));
}

/// pi's `bashExecutionToText` with our wording; `None` when excluded from context.
fn bash_text(m: &Message, w: &Wrappers) -> Option<String> {
    let b = m.bash.as_ref()?;
    if b.exclude_from_context {
        return None;
    }
    let command = b.command.decode();
    let mut text = w
        .bash_command
        .render(|v| (v == "command").then_some(command.as_ref()));
    if !b.output.is_empty() {
        let output = b.output.decode();
        w.bash_output
            .render_into(&mut text, |v| (v == "output").then_some(output.as_ref()));
    } else {
        w.bash_no_output.render_into(&mut text, |_| None);
    }
    if b.cancelled {
        w.bash_cancelled.render_into(&mut text, |_| None);
    } else if let Some(code) = exit_code_text(b.exit_code) {
        w.bash_exit_code
            .render_into(&mut text, |v| (v == "exitCode").then_some(code.as_str()));
    }
    if b.truncated {
        if let Some(p) = &b.full_output_path {
            let p = p.decode();
            w.bash_truncated
                .render_into(&mut text, |v| (v == "fullOutputPath").then_some(p.as_ref()));
        }
    }
    Some(text)
}

/// The exit code as JavaScript prints it, or `None` for null, absent and 0.
fn exit_code_text(raw: Option<crate::session::entry::RawJson>) -> Option<String> {
    let raw = raw?;
    match value_of(raw) {
        Value::Null => None,
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            (f != 0.0).then(|| js_number_string(f))
        }
        Value::String(s) => Some(s),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_session::{messages, parse, SessionText};
    use serde_json::json;

    /// The conversation text of every message in `s`, with the reference wording.
    fn text_of(s: SessionText) -> String {
        let text = s.jsonl();
        let session = parse(&text);
        serialize_conversation(messages(&session), &Wrappers::reference())
    }

    fn result_blocks(texts: &[&str]) -> SessionText {
        let blocks: Vec<Value> = texts
            .iter()
            .map(|t| json!({ "type": "text", "text": t }))
            .collect();
        SessionText::new()
            .message(json!({ "role": "toolResult", "toolName": "bash", "content": blocks }))
    }

    #[test]
    fn parts_are_joined_by_a_blank_line() {
        let s = SessionText::new().user("a").assistant("b").tool_result("c");
        assert_eq!(
            text_of(s),
            "[User]: a\n\n[Assistant]: b\n\n[Tool result]: c"
        );
    }

    #[test]
    fn user_text_blocks_are_joined_without_a_separator() {
        let content = json!([
            { "type": "text", "text": "a" },
            { "type": "image", "data": "AAAA", "mimeType": "image/png" },
            { "type": "text", "text": "b" }
        ]);
        let s = SessionText::new().message(json!({ "role": "user", "content": content }));
        assert_eq!(text_of(s), "[User]: ab");
    }

    #[test]
    fn empty_messages_write_no_part() {
        let s = SessionText::new()
            .user("a")
            .user("")
            .tool_result("")
            .assistant_blocks(json!([]))
            .user("b");
        assert_eq!(text_of(s), "[User]: a\n\n[User]: b");
    }

    #[test]
    fn an_assistant_writes_thinking_then_text_then_tool_calls_as_separate_parts() {
        let s = SessionText::new().assistant_blocks(json!([
            { "type": "toolCall", "id": "c", "name": "ls", "arguments": {} },
            { "type": "text", "text": "t1" },
            { "type": "thinking", "thinking": "k1" },
            { "type": "text", "text": "t2" },
            { "type": "thinking", "thinking": "k2" }
        ]));
        assert_eq!(
            text_of(s),
            "[Assistant thinking]: k1\nk2\n\n[Assistant]: t1\nt2\n\n[Assistant tool calls]: ls()"
        );
    }

    #[test]
    fn tool_calls_are_name_and_key_equals_json_value_joined_by_semicolons() {
        let s = SessionText::new().assistant_blocks(json!([
            { "type": "toolCall", "id": "1", "name": "read",
              "arguments": { "path": "a \"b\".rs", "limit": 10.0, "opts": { "x": [true, null] } } },
            { "type": "toolCall", "id": "2", "name": "bash", "arguments": { "command": "ls" } }
        ]));
        assert_eq!(
            text_of(s),
            r#"[Assistant tool calls]: read(path="a \"b\".rs", limit=10, opts={"x":[true,null]}); bash(command="ls")"#
        );
    }

    #[test]
    fn a_tool_result_is_cut_at_2000_units_with_the_count_of_the_rest() {
        let s = SessionText::new().tool_result(&"x".repeat(2500));
        assert_eq!(
            text_of(s),
            format!(
                "[Tool result]: {}\n\n[... 500 more characters truncated]",
                "x".repeat(2000)
            )
        );
    }

    #[test]
    fn a_tool_result_of_exactly_2000_units_is_not_cut() {
        let s = SessionText::new().tool_result(&"x".repeat(2000));
        assert_eq!(text_of(s), format!("[Tool result]: {}", "x".repeat(2000)));
    }

    #[test]
    fn the_tool_result_cut_counts_utf16_units() {
        // 1001 astral characters are 2002 units: 1000 characters are kept.
        let s = SessionText::new().tool_result(&"😀".repeat(1001));
        assert_eq!(
            text_of(s),
            format!(
                "[Tool result]: {}\n\n[... 2 more characters truncated]",
                "😀".repeat(1000)
            )
        );
    }

    #[test]
    fn d5_the_tool_result_cut_never_splits_a_surrogate_pair() {
        // Unit 2000 is the first half of the last emoji kept: the emoji is left out.
        let s = SessionText::new().tool_result(&format!("a{}", "😀".repeat(1000)));
        assert_eq!(
            text_of(s),
            format!(
                "[Tool result]: a{}\n\n[... 1 more characters truncated]",
                "😀".repeat(999)
            )
        );
    }

    #[test]
    fn tool_result_text_blocks_are_joined_and_cut_together() {
        let s = result_blocks(&[&"a".repeat(1500), &"b".repeat(1500)]);
        assert_eq!(
            text_of(s),
            format!(
                "[Tool result]: {}{}\n\n[... 1000 more characters truncated]",
                "a".repeat(1500),
                "b".repeat(500)
            )
        );
    }

    #[test]
    fn a_bash_execution_is_a_user_part_with_command_output_and_exit_code() {
        let bash = |output: &str, exit_code: Value| {
            SessionText::new().message(json!({
                "role": "bashExecution", "command": "make", "output": output,
                "exitCode": exit_code, "cancelled": false, "truncated": false
            }))
        };
        assert_eq!(
            text_of(bash("ok", json!(0))),
            "[User]: Ran `make`\n```\nok\n```"
        );
        assert_eq!(
            text_of(bash("", json!(2))),
            "[User]: Ran `make`\n(no output)\n\nCommand exited with code 2"
        );
    }

    #[test]
    fn a_bash_execution_excluded_from_context_is_left_out() {
        let s = SessionText::new().user("a").message(json!({
            "role": "bashExecution", "command": "make", "output": "ok",
            "exitCode": 0, "cancelled": false, "truncated": false, "excludeFromContext": true
        }));
        assert_eq!(text_of(s), "[User]: a");
    }

    #[test]
    fn custom_messages_are_user_parts() {
        assert_eq!(
            text_of(SessionText::new().custom_message("note")),
            "[User]: note"
        );
    }

    #[test]
    fn summaries_are_user_parts_in_their_wrapper() {
        assert_eq!(
            text_of(SessionText::new().branch_summary("went elsewhere")),
            "[User]: The following is a summary of a branch that this conversation came back from:\n\n<summary>\nwent elsewhere</summary>"
        );
    }
}
