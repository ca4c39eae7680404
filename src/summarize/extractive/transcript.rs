//! Transcript parsing: the serialized conversation (`[User]: …`, `[Assistant tool calls]:
//! …`, `[Tool result]: …`, parts joined by blank lines) back into its parts, tool calls
//! into names and arguments, and user parts into what they really are.

use crate::summarize::templates::find_block;
use compactd_core::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    User,
    Assistant,
    Thinking,
    ToolCalls,
    ToolResult,
}

const LABELS: [(&str, Label); 5] = [
    ("[User]: ", Label::User),
    ("[Assistant]: ", Label::Assistant),
    ("[Assistant thinking]: ", Label::Thinking),
    ("[Assistant tool calls]: ", Label::ToolCalls),
    ("[Tool result]: ", Label::ToolResult),
];

pub(super) struct Labelled<'a> {
    pub(super) label: Label,
    pub(super) text: &'a str,
}

fn label_at(s: &str) -> Option<(Label, usize)> {
    LABELS
        .iter()
        .find(|(l, _)| s.starts_with(l))
        .map(|(l, label)| (*label, l.len()))
}

/// Parts are joined by a blank line; a part's own text may hold blank lines, so a part
/// starts only where a blank line is followed by a label. Text before the first label
/// (a prompt that is not a serialized conversation) counts as the user's.
pub(super) fn split_parts(conv: &str) -> Vec<Labelled<'_>> {
    let mut starts: Vec<(usize, Label, usize)> = Vec::new();
    if let Some((label, n)) = label_at(conv) {
        starts.push((0, label, n));
    }
    for (i, _) in conv.match_indices("\n\n[") {
        if let Some((label, n)) = label_at(&conv[i + 2..]) {
            starts.push((i + 2, label, n));
        }
    }
    let mut parts = Vec::with_capacity(starts.len() + 1);
    let first = starts.first().map_or(conv.len(), |s| s.0);
    let lead = conv[..first].trim();
    if !lead.is_empty() {
        parts.push(Labelled {
            label: Label::User,
            text: lead,
        });
    }
    for (k, &(pos, label, n)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(conv.len(), |s| s.0 - 2);
        parts.push(Labelled {
            label,
            text: &conv[pos + n..end],
        });
    }
    parts
}

/// A tool output without the serializer's truncation marker.
pub(super) fn strip_truncation(text: &str) -> &str {
    match text.rfind("\n\n[... ") {
        Some(i) if text.trim_end().ends_with("more characters truncated]") => &text[..i],
        _ => text,
    }
}

/// One tool call of an `[Assistant tool calls]` part: `name(k1=<JSON>, k2=<JSON>)`.
pub(super) struct Call {
    pub(super) name: String,
    args: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallKind {
    Read,
    Write,
    Edit,
    Bash,
    Other,
}

impl Call {
    fn str_arg(&self, keys: &[&str]) -> Option<String> {
        self.args
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .find_map(|(_, v)| serde_json::from_str::<String>(v).ok())
    }

    pub(super) fn path(&self) -> Option<String> {
        self.str_arg(&["path", "file_path", "filePath", "file", "filename"])
            .filter(|p| !p.is_empty())
    }

    pub(super) fn command(&self) -> Option<String> {
        self.str_arg(&["command", "cmd"])
            .filter(|c| !c.trim().is_empty())
    }

    pub(super) fn kind(&self) -> CallKind {
        let n = self.name.to_lowercase();
        if n.contains("edit") || n.contains("replace") || n.contains("patch") {
            CallKind::Edit
        } else if n.contains("write") || n == "create" || n == "create_file" {
            CallKind::Write
        } else if n == "read" || n == "read_file" || n == "view" || n == "cat" {
            CallKind::Read
        } else if n.contains("bash")
            || n.contains("shell")
            || n == "exec"
            || n == "run"
            || self.command().is_some()
        {
            CallKind::Bash
        } else {
            CallKind::Other
        }
    }

    /// Every string argument (for path mentions).
    pub(super) fn string_values(&self) -> impl Iterator<Item = String> + '_ {
        self.args
            .iter()
            .filter_map(|(_, v)| serde_json::from_str::<String>(v).ok())
    }
}

pub(super) fn parse_calls(s: &str) -> Vec<Call> {
    let b = s.as_bytes();
    let mut calls = Vec::new();
    let mut i = 0;
    'calls: loop {
        let start = i;
        while i < b.len() && b[i] != b'(' {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let name = &s[start..i];
        if name.is_empty()
            || !name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':'))
        {
            break;
        }
        i += 1;
        let mut call = Call {
            name: name.to_string(),
            args: Vec::new(),
        };
        loop {
            if b.get(i) == Some(&b')') {
                i += 1;
                break;
            }
            let key_start = i;
            while i < b.len() && b[i] != b'=' && b[i] != b')' {
                i += 1;
            }
            if b.get(i) != Some(&b'=') {
                calls.push(call);
                break 'calls;
            }
            let key = s[key_start..i].trim().to_string();
            i += 1;
            let Some(end) = json::lenient::value_end(b, i) else {
                calls.push(call);
                break 'calls;
            };
            call.args.push((key, s[i..end].to_string()));
            i = end;
            if s[i..].starts_with(", ") {
                i += 2;
            } else if b.get(i) == Some(&b')') {
                i += 1;
                break;
            } else {
                calls.push(call);
                break 'calls;
            }
        }
        calls.push(call);
        if s[i..].starts_with("; ") {
            i += 2;
        } else {
            break;
        }
    }
    calls
}

/// What a `[User]` part really is.
pub(super) enum UserPart<'a> {
    Request(&'a str),
    /// A shell command the user ran (our wrapper or pi's `Ran \`cmd\``).
    Bash {
        command: String,
        output: &'a str,
        exit_code: Option<i64>,
    },
    /// An earlier compaction or branch summary shown as a user message.
    Summary(&'a str),
}

pub(super) fn classify_user(text: &str) -> UserPart<'_> {
    for tag in ["compaction-summary", "branch-summary", "summary"] {
        let open = format!("<{tag}>");
        if let Some(pos) = text.find(&open) {
            if pos <= 400 {
                if let Some((inner, _)) = find_block(&text[pos..], tag) {
                    return UserPart::Summary(inner);
                }
            }
        }
    }
    if let Some(rest) = text.strip_prefix("The user ran a shell command:\n") {
        let rest = rest.strip_prefix("$ ").unwrap_or(rest);
        let cut = ["\n<output>\n", "\n(no output)"]
            .iter()
            .filter_map(|m| rest.find(m))
            .min()
            .or_else(|| rest.find('\n'))
            .unwrap_or(rest.len());
        let after = &rest[cut..];
        let output = after
            .find("<output>\n")
            .and_then(|s| {
                let body = &after[s + "<output>\n".len()..];
                body.rfind("\n</output>").map(|e| &body[..e])
            })
            .unwrap_or("");
        return UserPart::Bash {
            command: rest[..cut].to_string(),
            output,
            exit_code: exit_code_after(after, "\n\nExit code: "),
        };
    }
    if let Some(rest) = text.strip_prefix("Ran `") {
        if let Some(end) = rest.find("`\n").or_else(|| rest.rfind('`')) {
            let after = &rest[end..];
            let output = after
                .find("```\n")
                .and_then(|s| {
                    let body = &after[s + 4..];
                    body.rfind("\n```").map(|e| &body[..e])
                })
                .unwrap_or("");
            return UserPart::Bash {
                command: rest[..end].to_string(),
                output,
                exit_code: exit_code_after(after, "Command exited with code "),
            };
        }
    }
    UserPart::Request(text)
}

fn exit_code_after(s: &str, marker: &str) -> Option<i64> {
    let rest = &s[s.rfind(marker)? + marker.len()..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::extractive::summarize;
    use crate::summarize::extractive::tests::history;

    #[test]
    fn wrapped_bash_runs_and_earlier_summaries_are_not_requests() {
        let ours = "[User]: The user ran a shell command:\n$ npm test\n<output>\nFAIL src/app.test.ts\n  expected 1 got 2\n</output>\n\nExit code: 1";
        let pis = "[User]: Ran `make lint`\n```\nall good\n```";
        let summary = "[User]: Reference context: earlier messages of this session were compacted into the summary below.\n\n<compaction-summary>\n## Goal\n- Port the app to Rust\n\n## Critical Context\n- Uses tokio\n</compaction-summary>\n\nEnd of summary.";
        let pi_summary = "[User]: The following is a summary of a branch that this conversation came back from:\n\n<summary>\n## Goal\n- Try the async approach\n</summary>";
        let conv = format!("[User]: Fix the flaky test in src/app.test.ts\n\n{summary}\n\n{pi_summary}\n\n{pis}\n\n{ours}");
        let t = summarize(&history(&conv, None, 13107)).text;
        assert!(t.contains("- Port the app to Rust"));
        assert!(t.contains("- Try the async approach"));
        assert!(t.contains("- Uses tokio"));
        assert!(!t.contains("Reference context"), "{t}");
        assert!(!t.contains("- The user ran"));
        assert!(t.contains("- Commands: `npm test`, `make lint`"), "{t}");
        assert!(
            t.contains("### Blocked\n- `npm test` failed: `FAIL src/app.test.ts`"),
            "{t}"
        );
    }

    #[test]
    fn parses_tool_calls_with_tricky_arguments() {
        let calls = parse_calls(
            "bash(command=\"echo \\\"a); b\\\"; ls\", timeout=30); edit(path=\"a/b.rs\", edits=[{\"old\":\"x)\"}]); noop()",
        );
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bash", "edit", "noop"]);
        assert_eq!(calls[0].command().unwrap(), "echo \"a); b\"; ls");
        assert_eq!(calls[0].args[1], ("timeout".into(), "30".into()));
        assert_eq!(calls[1].path().unwrap(), "a/b.rs");
        assert_eq!(calls[1].kind(), CallKind::Edit);
    }
}
