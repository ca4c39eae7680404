//! The built-in extractive summarizer: deterministic, no network, no model.
//!
//! It reads the summarizer prompt itself (the layout of ALGORITHM.md §6:
//! `<conversation>`, an optional `<previous-summary>` and `<additional-context>`, then the
//! instructions) and fills the structured summary format with what the conversation shows:
//! the user's requests and stated constraints, the files written and edited, the commands
//! run and whether they failed, the last error, every path mentioned and the last assistant
//! text. A previous summary (and any earlier summary quoted inside the conversation) is
//! merged section by section. The result fits the request's output budget and is never
//! longer than the text it condenses.
//!
//! Nothing here depends on our instruction wording: pi-style agents send the same layout
//! through the remoteEndpoint with their own instructions, and [`detect_kind`] infers the
//! summary they want from those.

use std::collections::{HashSet, VecDeque};

use crate::session::text::utf16_len;

use super::templates::{RequestKind, SummaryRequest};
use super::{SummarizerKind, Summary, Usage};

/// The `model` reported for summaries this summarizer writes.
pub const MODEL: &str = "extractive";

/// Deterministic, no network: a structured summary built from the prompt itself.
pub fn summarize(req: &SummaryRequest) -> Summary {
    let parts = split_prompt(&req.prompt);
    let facts = Facts::gather(&parts);
    let condensed = utf16_len(parts.conversation) + parts.previous.map_or(0, utf16_len);
    let budget = usize::try_from(req.max_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    let limit = budget.min(condensed);
    let text = match req.kind {
        RequestKind::History | RequestKind::Branch => structured(&facts, Layout::Checkpoint, limit),
        RequestKind::TurnPrefix => structured(&facts, Layout::TurnPrefix, limit),
        RequestKind::Short => short(&facts, limit),
    };
    let input = tokens(utf16_len(&req.system_prompt) + utf16_len(&req.prompt));
    let output = tokens(utf16_len(&text));
    Summary {
        text,
        usage: Usage {
            input,
            output,
            total_tokens: input + output,
            ..Usage::default()
        },
        model: MODEL.to_string(),
        summarizer: SummarizerKind::Extractive,
        retries: 0,
        cached: false,
    }
}

/// For remoteEndpoint requests whose kind is unknown: infer it from the instructions
/// (the text after the conversation and the blocks that follow it). Recognises our
/// templates and pi's wording; anything else is a history summary.
pub fn detect_kind(prompt: &str) -> RequestKind {
    let parts = split_prompt(prompt);
    let instructions = if parts.has_conversation {
        parts.instructions
    } else {
        prompt
    };
    let lower = instructions.to_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    if instructions.contains("PREFIX of a")
        || has(&["prefix of a turn", "prefix of a single turn", "turn prefix"])
        || (has(&["## original request"]) && has(&["## context for suffix"]))
    {
        return RequestKind::TurnPrefix;
    }
    if has(&[
        "this conversation branch",
        "branch of a coding session",
        "branch of this conversation",
        "summarize that branch",
        "summarize this branch",
        "summarize the branch",
    ]) {
        return RequestKind::Branch;
    }
    if !has(&["## goal"])
        && has(&[
            "one plain paragraph",
            "one paragraph",
            "single paragraph",
            "one sentence",
            "short summary",
        ])
    {
        return RequestKind::Short;
    }
    RequestKind::History
}

fn tokens(units: usize) -> u64 {
    units.div_ceil(4) as u64
}

// ---------------------------------------------------------------------------------------
// The prompt
// ---------------------------------------------------------------------------------------

struct PromptParts<'a> {
    /// The serialized conversation (the whole prompt when there is no block).
    conversation: &'a str,
    previous: Option<&'a str>,
    additional: Vec<String>,
    instructions: &'a str,
    has_conversation: bool,
}

fn split_prompt(prompt: &str) -> PromptParts<'_> {
    let Some((conversation, mut rest)) = find_block(prompt, "conversation") else {
        return PromptParts {
            conversation: prompt,
            previous: None,
            additional: Vec::new(),
            instructions: "",
            has_conversation: false,
        };
    };
    let mut previous = None;
    if let Some((inner, after)) = leading_block(rest, "previous-summary") {
        previous = Some(inner);
        rest = after;
    }
    let mut additional = Vec::new();
    if let Some((inner, after)) = leading_block(rest, "additional-context") {
        additional = list_items(inner);
        rest = after;
    }
    PromptParts {
        conversation,
        previous,
        additional,
        instructions: rest.trim(),
        has_conversation: true,
    }
}

/// `<tag>\n…\n</tag>` anywhere: its text and what follows. The closing tag is the last one
/// in `s`, so the block's own text may quote the tags.
fn find_block<'a>(s: &'a str, tag: &str) -> Option<(&'a str, &'a str)> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = s.find(&open)? + open.len();
    let end = start + s[start..].rfind(&close)?;
    let inner = &s[start..end];
    let inner = inner.strip_prefix('\n').unwrap_or(inner);
    let inner = inner.strip_suffix('\n').unwrap_or(inner);
    Some((inner, &s[end + close.len()..]))
}

/// A block that must come first (after blank lines).
fn leading_block<'a>(s: &'a str, tag: &str) -> Option<(&'a str, &'a str)> {
    let t = s.trim_start();
    if t.starts_with(&format!("<{tag}>")) {
        find_block(t, tag)
    } else {
        None
    }
}

/// `- item` lines; other lines continue the item before them.
fn list_items(inner: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for line in inner.lines() {
        if let Some(item) = line.strip_prefix("- ") {
            items.push(item.to_string());
        } else if let Some(last) = items.last_mut() {
            last.push('\n');
            last.push_str(line);
        } else if !line.trim().is_empty() {
            items.push(line.to_string());
        }
    }
    items.retain(|i| !i.trim().is_empty());
    items
}

// ---------------------------------------------------------------------------------------
// The serialized conversation
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
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

struct Part<'a> {
    label: Label,
    text: &'a str,
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
fn split_parts(conv: &str) -> Vec<Part<'_>> {
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
        parts.push(Part {
            label: Label::User,
            text: lead,
        });
    }
    for (k, &(pos, label, n)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(conv.len(), |s| s.0 - 2);
        parts.push(Part {
            label,
            text: &conv[pos + n..end],
        });
    }
    parts
}

/// A tool output without the serializer's truncation marker.
fn strip_truncation(text: &str) -> &str {
    match text.rfind("\n\n[... ") {
        Some(i) if text.trim_end().ends_with("more characters truncated]") => &text[..i],
        _ => text,
    }
}

/// One tool call of an `[Assistant tool calls]` part: `name(k1=<JSON>, k2=<JSON>)`.
struct Call {
    name: String,
    args: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
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

    fn path(&self) -> Option<String> {
        self.str_arg(&["path", "file_path", "filePath", "file", "filename"])
            .filter(|p| !p.is_empty())
    }

    fn command(&self) -> Option<String> {
        self.str_arg(&["command", "cmd"])
            .filter(|c| !c.trim().is_empty())
    }

    fn kind(&self) -> CallKind {
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
    fn string_values(&self) -> impl Iterator<Item = String> + '_ {
        self.args
            .iter()
            .filter_map(|(_, v)| serde_json::from_str::<String>(v).ok())
    }
}

fn parse_calls(s: &str) -> Vec<Call> {
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
            let Some(end) = skip_json(b, i) else {
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

/// The end of the JSON value starting at `i` (strings, arrays and objects are balanced;
/// scalars end at `,` or `)`).
fn skip_json(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() {
                    return None;
                }
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' | b')' if depth == 0 => return (i > start).then_some(i),
            _ => {}
        }
        i += 1;
    }
    (depth == 0 && i > start).then_some(i)
}

/// What a `[User]` part really is.
enum UserPart<'a> {
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

fn classify_user(text: &str) -> UserPart<'_> {
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

// ---------------------------------------------------------------------------------------
// Errors in outputs
// ---------------------------------------------------------------------------------------

/// A non-zero exit code named in a (short) line.
fn exit_code_in(lower: &str) -> Option<i64> {
    if lower.len() > 200 {
        return None;
    }
    for pat in ["exit code", "exited with code", "exit status"] {
        if let Some(p) = lower.find(pat) {
            let rest = lower[p + pat.len()..].trim_start_matches([':', ' ']);
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// `src/a.ts:12:` or `./a.ts:import …`: a grep hit, not an error message.
fn is_grep_hit(t: &str) -> bool {
    let head = t.split(':').next().unwrap_or("");
    head.len() < t.len() && head.bytes().all(is_path_byte) && path_token(head).is_some()
}

fn is_strong_error(lower: &str) -> bool {
    let first = lower.split_whitespace().next().unwrap_or("");
    lower.starts_with("error")
        || lower.contains(": error")
        || lower.starts_with("npm err!")
        || lower.starts_with("fatal:")
        || lower.starts_with("fatal error")
        || lower.starts_with("fail ")
        || lower.starts_with("uncaught ")
        || lower.contains("panicked at")
        || first.ends_with("error:")
        || first.ends_with("exception:")
        || lower.contains("command not found")
        || lower.contains("no such file or directory")
        || lower.contains("permission denied")
        || lower.contains("segmentation fault")
}

fn is_weak_error(lower: &str) -> bool {
    (lower.contains("failed") && !lower.contains(" 0 failed") && !lower.contains("failed: 0"))
        || lower.contains("traceback (most recent call last)")
        || lower.contains("exception")
        || counts_errors(lower)
}

/// `3 errors`, `1 error`.
fn counts_errors(lower: &str) -> bool {
    lower.match_indices(" error").any(|(i, _)| {
        let before = lower[..i].trim_end_matches(|c: char| c.is_ascii_digit());
        let digits = &lower[before.len()..i];
        !digits.is_empty() && digits.bytes().any(|d| d != b'0')
    })
}

/// The exact error line of a failed command's output, if it failed.
fn command_error(command: &str, output: &str, exit_code: Option<i64>) -> Option<String> {
    let lead = main_command(command);
    let viewer = is_viewer(&lead);
    let searcher = matches!(lead.first().map(String::as_str), Some("grep" | "rg" | "ag"));
    let (mut strong, mut weak, mut exit) = (None, None, None);
    let mut code = exit_code;
    for line in output.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let lower = t.to_lowercase();
        if let Some(c) = exit_code_in(&lower) {
            if c != 0 && exit.is_none() {
                exit = Some(t);
                code = Some(c);
            }
            continue;
        }
        if viewer || is_grep_hit(t) {
            continue;
        }
        if strong.is_none() && is_strong_error(&lower) {
            strong = Some(t);
        } else if weak.is_none() && is_weak_error(&lower) {
            weak = Some(t);
        }
    }
    if searcher && code == Some(1) && strong.is_none() {
        return None; // no match is not a failure
    }
    if let Some(line) = strong.or(weak).or(exit) {
        return Some(line.to_string());
    }
    code.filter(|&c| c != 0).map(|c| format!("exit code {c}"))
}

/// The words of the command that does the work (after `cd … &&`).
fn main_command(command: &str) -> Vec<String> {
    main_segment(command)
        .split_whitespace()
        .take(2)
        .map(str::to_string)
        .collect()
}

/// The first `&&` segment of a script that is not a comment or a `cd`.
fn main_segment(command: &str) -> &str {
    command
        .lines()
        .flat_map(|l| l.split("&&"))
        .map(str::trim)
        .find(|s| !s.is_empty() && !s.starts_with('#') && *s != "cd" && !s.starts_with("cd "))
        .unwrap_or_else(|| command.trim())
}

/// What "the same command" is when a later success resolves a failure: for a one-line
/// command, the command that does the work without `cd … &&`, `2>&1` and the pipes that
/// filter its output (`npm run check 2>&1 | head` = `npm run check`); a script as written.
fn command_key(command: &str) -> String {
    if command.trim().contains('\n') {
        return collapse_ws(command);
    }
    let segment = main_segment(command);
    let head = segment.split('|').next().unwrap_or(segment);
    collapse_ws(&head.replace("2>&1", ""))
}

/// Commands that print files or listings, whose output is content, not diagnostics.
fn is_viewer(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    match first.as_str() {
        "sed" => !words.get(1).is_some_and(|w| w.starts_with("-i")),
        "cat" | "head" | "tail" | "less" | "more" | "grep" | "rg" | "ag" | "find" | "ls"
        | "tree" | "wc" | "echo" | "nl" | "awk" => true,
        "git" => matches!(
            words.get(1).map(String::as_str),
            Some("diff" | "show" | "log" | "status" | "grep" | "blame")
        ),
        _ => false,
    }
}

/// The error line of a non-shell tool result: only its first line counts, since the rest
/// is content (a file, a listing).
fn tool_error(output: &str) -> Option<String> {
    let first = output.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lower = first.to_lowercase();
    [
        "error",
        "enoent",
        "eacces",
        "eisdir",
        "enotdir",
        "could not",
        "cannot ",
        "failed",
        "no such file",
        "file not found",
        "permission denied",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
    .then(|| first.to_string())
}

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

const KNOWN_EXTENSIONS: &[&str] = &[
    "rs",
    "ts",
    "tsx",
    "js",
    "jsx",
    "mjs",
    "cjs",
    "mts",
    "cts",
    "py",
    "pyi",
    "go",
    "java",
    "kt",
    "kts",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cxx",
    "cs",
    "rb",
    "php",
    "swift",
    "scala",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "md",
    "mdx",
    "txt",
    "rst",
    "toml",
    "json",
    "jsonl",
    "ndjson",
    "yaml",
    "yml",
    "xml",
    "html",
    "htm",
    "css",
    "scss",
    "less",
    "sql",
    "proto",
    "ini",
    "cfg",
    "conf",
    "gradle",
    "vue",
    "svelte",
    "lua",
    "zig",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "dart",
    "jl",
    "tf",
    "nix",
    "csv",
    "tsv",
    "svg",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "pdf",
    "wasm",
    "patch",
    "diff",
    "dockerfile",
    "makefile",
    "gitignore",
    "lockb",
];

fn is_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-' | b'~' | b'@' | b'+')
}

/// A token that names a file: `[\w./-]+\.\w+` with a slash or a known extension.
fn path_token(tok: &str) -> Option<&str> {
    let t = tok
        .trim_start_matches('@')
        .trim_end_matches(['.', '-', '/', '+', '@']);
    if t.len() < 3 || t.len() > 240 || t.starts_with("//") || t.contains("...") {
        return None;
    }
    if t[1..].contains('~') {
        return None;
    }
    let last = t.rsplit('/').next().unwrap_or(t);
    let dot = last.rfind('.')?;
    let (stem, ext) = (&last[..dot], &last[dot + 1..]);
    if !stem.bytes().any(|c| c.is_ascii_alphanumeric())
        || ext.is_empty()
        || ext.len() > 10
        || !ext.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        || ext.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    if !t.contains('/') && !KNOWN_EXTENSIONS.iter().any(|k| k.eq_ignore_ascii_case(ext)) {
        return None;
    }
    Some(t)
}

/// Every path-looking token in `text`, in order (a token followed by `(` is a call).
fn scan_paths(text: &str, out: &mut Ordered) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !is_path_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_path_byte(b[i]) {
            i += 1;
        }
        if b.get(i) != Some(&b'(') {
            if let Some(p) = path_token(&text[start..i]) {
                out.insert(p);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Facts
// ---------------------------------------------------------------------------------------

/// Strings in order of first appearance, without repeats.
#[derive(Default)]
struct Ordered {
    items: Vec<String>,
    seen: HashSet<String>,
}

impl Ordered {
    fn insert(&mut self, s: &str) -> bool {
        if self.seen.contains(s) {
            return false;
        }
        self.seen.insert(s.to_string());
        self.items.push(s.to_string());
        true
    }

    fn contains(&self, s: &str) -> bool {
        self.seen.contains(s)
    }
}

/// A file a write or edit call touched.
struct Modified {
    path: String,
    wrote: bool,
    edited: bool,
    ok: bool,
    failed: bool,
}

impl Modified {
    /// Done unless every attempt failed (a call whose result is not in the text counts).
    fn done(&self) -> bool {
        self.ok || !self.failed
    }

    fn verb(&self) -> &'static str {
        match (self.wrote, self.edited) {
            (true, true) => "Wrote and edited",
            (true, false) => "Wrote",
            _ => "Edited",
        }
    }
}

/// The last failure seen.
struct Failure {
    /// What must succeed later to resolve it (the command, or tool and path).
    key: String,
    /// How to name it: `` `cargo test` `` or ``edit `src/a.rs` ``.
    what: String,
    /// The exact error line.
    line: String,
    resolved: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sec {
    Goal,
    Constraints,
    Done,
    InProgress,
    Blocked,
    Decisions,
    NextSteps,
    Critical,
}

/// An item of an earlier summary.
struct Earlier {
    sec: Sec,
    text: String,
    /// A code block, rendered as it was.
    raw: bool,
}

#[derive(Default)]
struct Facts {
    /// Distinct user requests, whitespace collapsed.
    requests: Vec<String>,
    constraints: Ordered,
    decisions: Ordered,
    modified: Vec<Modified>,
    read: Ordered,
    mentioned: Ordered,
    done_commands: Ordered,
    commands: Ordered,
    last_error: Option<Failure>,
    last_assistant: Option<String>,
    /// The conversation ends with assistant text: the turn ended, the user is next.
    waiting: bool,
    earlier: Vec<Earlier>,
    additional: Vec<String>,
    /// Condensed conversation text, for the last-resort fallback.
    fallback: String,
}

impl Facts {
    fn gather(p: &PromptParts) -> Facts {
        let mut f = Facts::default();
        if let Some(prev) = p.previous {
            f.earlier.extend(parse_summary(prev));
        }
        f.additional = p.additional.iter().map(|a| collapse_ws(a)).collect();
        f.fallback = collapse_ws(&p.conversation[..floor_boundary(p.conversation, 4000)]);
        let mut pending: VecDeque<Call> = VecDeque::new();
        let mut last = None;
        for part in split_parts(p.conversation) {
            match part.label {
                Label::User => f.user(part.text),
                Label::Assistant => f.assistant(part.text),
                Label::Thinking => scan_paths(part.text, &mut f.mentioned),
                Label::ToolCalls => {
                    pending = parse_calls(part.text).into();
                    if pending.is_empty() {
                        scan_paths(part.text, &mut f.mentioned);
                    }
                    for call in &pending {
                        f.call(call);
                    }
                }
                Label::ToolResult => {
                    let call = pending.pop_front();
                    f.result(call.as_ref(), strip_truncation(part.text));
                }
            }
            last = Some(part.label);
        }
        f.waiting = last == Some(Label::Assistant);
        f
    }

    fn user(&mut self, text: &str) {
        match classify_user(text) {
            UserPart::Summary(inner) => self.earlier.extend(parse_summary(inner)),
            UserPart::Bash {
                command,
                output,
                exit_code,
            } => {
                scan_paths(&command, &mut self.mentioned);
                scan_paths(output, &mut self.mentioned);
                self.commands.insert(&command);
                let error = command_error(&command, output, exit_code);
                self.ran(&command, error);
            }
            UserPart::Request(text) => {
                scan_paths(text, &mut self.mentioned);
                let request = collapse_ws(text);
                if !request.is_empty() && !self.requests.contains(&request) {
                    self.requests.push(request);
                }
                for s in sentences(text) {
                    if is_constraint(&s) {
                        self.constraints.insert(&s);
                    }
                }
            }
        }
    }

    fn assistant(&mut self, text: &str) {
        scan_paths(text, &mut self.mentioned);
        for s in sentences(text) {
            if is_decision(&s) {
                self.decisions.insert(&s);
            }
        }
        if !text.trim().is_empty() {
            self.last_assistant = Some(collapse_ws(text));
        }
    }

    fn call(&mut self, call: &Call) {
        match call.kind() {
            CallKind::Read => match call.path() {
                Some(p) => {
                    self.read.insert(&p);
                    self.mentioned.insert(&p);
                }
                None => self.scan_args(call),
            },
            kind @ (CallKind::Write | CallKind::Edit) => match call.path() {
                Some(p) => {
                    self.mentioned.insert(&p);
                    let m = match self.modified.iter().position(|m| m.path == p) {
                        Some(i) => &mut self.modified[i],
                        None => {
                            self.modified.push(Modified {
                                path: p,
                                wrote: false,
                                edited: false,
                                ok: false,
                                failed: false,
                            });
                            self.modified.last_mut().expect("just pushed")
                        }
                    };
                    if kind == CallKind::Write {
                        m.wrote = true;
                    } else {
                        m.edited = true;
                    }
                }
                None => self.scan_args(call),
            },
            CallKind::Bash => match call.command() {
                Some(c) => {
                    scan_paths(&c, &mut self.mentioned);
                    self.commands.insert(&c);
                }
                None => self.scan_args(call),
            },
            CallKind::Other => self.scan_args(call),
        }
    }

    fn scan_args(&mut self, call: &Call) {
        for v in call.string_values() {
            scan_paths(&v, &mut self.mentioned);
        }
    }

    fn result(&mut self, call: Option<&Call>, output: &str) {
        scan_paths(output, &mut self.mentioned);
        let Some(call) = call else {
            let error = tool_error(output);
            self.outcome("tool".into(), "a tool".into(), error);
            return;
        };
        match call.kind() {
            CallKind::Bash if call.command().is_some() => {
                let command = call.command().unwrap_or_default();
                let error = command_error(&command, output, None);
                self.ran(&command, error);
            }
            kind => {
                let error = tool_error(output);
                let path = call.path();
                if let (Some(p), CallKind::Write | CallKind::Edit) = (&path, kind) {
                    if let Some(m) = self.modified.iter_mut().find(|m| &m.path == p) {
                        if error.is_some() {
                            m.failed = true;
                        } else {
                            m.ok = true;
                        }
                    }
                }
                let key = format!("{}:{}", call.name, path.as_deref().unwrap_or(""));
                let what = match &path {
                    Some(p) => format!("{} {}", call.name, code(p)),
                    None => call.name.clone(),
                };
                self.outcome(key, what, error);
            }
        }
    }

    fn ran(&mut self, command: &str, error: Option<String>) {
        if error.is_none() {
            self.done_commands.insert(command);
        }
        self.outcome(
            command_key(command),
            code(&shorten(&collapse_ws(command), 160)),
            error,
        );
    }

    fn outcome(&mut self, key: String, what: String, error: Option<String>) {
        match error {
            Some(line) => {
                self.last_error = Some(Failure {
                    key,
                    what,
                    line,
                    resolved: false,
                })
            }
            None => {
                if let Some(e) = &mut self.last_error {
                    if e.key == key {
                        e.resolved = true;
                    }
                }
            }
        }
    }

    fn blocker(&self) -> Option<&Failure> {
        self.last_error.as_ref().filter(|e| !e.resolved)
    }

    /// The goal to lead with: the first request, else the previous summary's.
    fn first_goal(&self) -> Option<String> {
        self.requests.first().cloned().or_else(|| {
            self.earlier
                .iter()
                .find(|e| e.sec == Sec::Goal && !e.raw)
                .map(|e| collapse_ws(&e.text))
        })
    }
}

/// Sentences of prose (fenced code skipped), list markers removed.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || t.is_empty() || looks_pasted(t) {
            continue;
        }
        let t = strip_list_marker(t);
        let b = t.as_bytes();
        let mut start = 0;
        for i in 0..b.len() {
            if matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_none_or(|&c| c == b' ') {
                push_sentence(&mut out, &t[start..=i]);
                start = i + 1;
            }
        }
        push_sentence(&mut out, &t[start..]);
    }
    out
}

/// A pasted log or data line (JSON, an error, a stack frame, a shell prompt), not prose.
fn looks_pasted(line: &str) -> bool {
    let lower = line.to_lowercase();
    line.contains("{\"")
        || line.contains("\":")
        || lower.starts_with("error")
        || lower.starts_with("at ")
        || line.starts_with('^')
        || line.starts_with('➜')
        || line.starts_with("~/")
        || line.starts_with('$')
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if s.chars().any(char::is_alphanumeric) {
        out.push(s.to_string());
    }
}

fn strip_list_marker(t: &str) -> &str {
    for m in ["- [x] ", "- [ ] ", "- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest;
        }
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = t[digits..].strip_prefix(". ") {
            return rest;
        }
    }
    t
}

/// `word` in `lower` starting at a word boundary; with `whole`, ending at one too.
fn has_word(lower: &str, word: &str, whole: bool) -> bool {
    lower.match_indices(word).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric)
            && (!whole || !after.is_some_and(char::is_alphanumeric))
    })
}

fn is_constraint(sentence: &str) -> bool {
    if sentence.ends_with('?') || sentence.len() < 8 {
        return false;
    }
    let lower = sentence.to_lowercase().replace('’', "'");
    [
        "must",
        "should",
        "don't",
        "dont",
        "do not",
        "never",
        "always",
        "prefer",
        "only",
        "use",
        "avoid",
        "make sure",
    ]
    .iter()
    .any(|w| has_word(&lower, w, true))
}

fn is_decision(sentence: &str) -> bool {
    if sentence.len() < 20 {
        return false;
    }
    let lower = sentence.to_lowercase();
    ["decided", "instead", "because", "chose", "will use"]
        .iter()
        .any(|w| has_word(&lower, w, false))
}

// ---------------------------------------------------------------------------------------
// Earlier summaries
// ---------------------------------------------------------------------------------------

/// Removes `<read-files>` / `<modified-files>` blocks (the caller appends fresh ones).
fn strip_file_blocks(text: &str) -> String {
    let mut s = text.to_string();
    for tag in ["read-files", "modified-files"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = s.find(&open) {
            let Some(rel) = s[start..].find(&close) else {
                break;
            };
            s.replace_range(start..start + rel + close.len(), "");
        }
    }
    s
}

/// Which section a heading of an earlier summary belongs to.
fn map_heading(title: &str) -> Option<Sec> {
    let t = title.to_lowercase();
    let has = |ws: &[&str]| ws.iter().any(|w| t.contains(w));
    Some(if has(&["in progress", "current", "ongoing"]) {
        Sec::InProgress
    } else if has(&["block"]) {
        Sec::Blocked
    } else if has(&["next", "todo", "remaining"]) {
        Sec::NextSteps
    } else if has(&["decision"]) {
        Sec::Decisions
    } else if has(&["constraint", "preference", "requirement", "convention"]) {
        Sec::Constraints
    } else if has(&["done", "complet", "progress", "accomplish"]) {
        Sec::Done
    } else if has(&["goal", "request", "objective", "task", "purpose"]) {
        Sec::Goal
    } else if has(&[
        "context",
        "critical",
        "file",
        "reference",
        "command",
        "note",
    ]) {
        Sec::Critical
    } else {
        return None;
    })
}

const STANDARD_HEADINGS: &[&str] = &[
    "goal",
    "goals",
    "constraints & preferences",
    "constraints",
    "progress",
    "done",
    "in progress",
    "blocked",
    "key decisions",
    "next steps",
    "critical context",
    "original request",
    "early progress",
    "context for suffix",
];

/// A top-level list item: its text without marker or checkbox.
fn bullet(line: &str) -> Option<&str> {
    if line.starts_with("  ") || line.starts_with('\t') {
        return None;
    }
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let rest = ["- ", "* ", "+ "]
        .iter()
        .find_map(|m| t.strip_prefix(m))
        .or_else(|| {
            (digits > 0)
                .then(|| t[digits..].strip_prefix(". "))
                .flatten()
        })?;
    let rest = ["[x] ", "[X] ", "[ ] "]
        .iter()
        .find_map(|m| rest.strip_prefix(m))
        .unwrap_or(rest);
    Some(rest.trim())
}

struct SummaryParser {
    out: Vec<Earlier>,
    sec: Sec,
    /// A non-standard heading, carried into the next item so it is not lost.
    label: Option<String>,
    item: Option<String>,
    paragraph: bool,
}

impl SummaryParser {
    fn flush(&mut self) {
        if let Some(text) = self.item.take() {
            self.push(text, false);
        }
        self.paragraph = false;
    }

    fn push(&mut self, text: String, raw: bool) {
        let bare = text.trim().trim_end_matches('.').to_lowercase();
        if bare.is_empty() || bare == "(none)" || bare == "none" {
            return;
        }
        let text = match self.label.take() {
            Some(label) if raw => {
                self.out.push(Earlier {
                    sec: self.sec,
                    text: format!("**{label}**:"),
                    raw: false,
                });
                text
            }
            Some(label) => format!("**{label}**: {text}"),
            None => text,
        };
        self.out.push(Earlier {
            sec: self.sec,
            text,
            raw,
        });
    }

    fn heading(&mut self, level: usize, title: &str) {
        self.flush();
        if let Some(label) = self.label.take() {
            self.out.push(Earlier {
                sec: self.sec,
                text: format!("**{label}**"),
                raw: false,
            });
        }
        match map_heading(title) {
            Some(sec) => self.sec = sec,
            None if level <= 2 => self.sec = Sec::Critical,
            None => {}
        }
        let lower = title.to_lowercase();
        if !STANDARD_HEADINGS.contains(&lower.as_str()) {
            self.label = Some(title.to_string());
        }
    }
}

/// An earlier summary's items by section, in order.
fn parse_summary(text: &str) -> Vec<Earlier> {
    let text = strip_file_blocks(text);
    let mut p = SummaryParser {
        out: Vec::new(),
        sec: Sec::Critical,
        label: None,
        item: None,
        paragraph: false,
    };
    let mut fence: Option<String> = None;
    for line in text.lines() {
        if let Some(block) = &mut fence {
            block.push('\n');
            block.push_str(line);
            if line.trim_start().starts_with("```") {
                let block = fence.take().unwrap_or_default();
                p.push(block, true);
            }
            continue;
        }
        let t = line.trim();
        if t.starts_with("```") {
            p.flush();
            fence = Some(line.to_string());
            continue;
        }
        if t.is_empty() {
            p.flush();
            continue;
        }
        if matches!(t, "---" | "***" | "___") || t == "**Turn Context (split turn):**" {
            p.flush();
            continue;
        }
        if t.starts_with('#') {
            let level = t.bytes().take_while(|&c| c == b'#').count();
            let title = t[level..].trim();
            if !title.is_empty() && t.as_bytes().get(level) == Some(&b' ') {
                p.heading(level, title);
                continue;
            }
        }
        if let Some(rest) = bullet(line) {
            p.flush();
            p.item = Some(rest.to_string());
            continue;
        }
        match &mut p.item {
            Some(item) if !p.paragraph && (line.starts_with(' ') || line.starts_with('\t')) => {
                item.push('\n');
                item.push_str(line.trim_end());
            }
            Some(item) if p.paragraph => {
                item.push('\n');
                item.push_str(t);
            }
            _ => {
                p.flush();
                p.item = Some(t.to_string());
                p.paragraph = true;
            }
        }
    }
    if let Some(block) = fence {
        p.flush();
        p.push(block, true);
    }
    p.flush();
    if let Some(label) = p.label.take() {
        p.out.push(Earlier {
            sec: p.sec,
            text: format!("**{label}**"),
            raw: false,
        });
    }
    p.out
}

// ---------------------------------------------------------------------------------------
// Structured output
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// The sections of `prompts/initial.md` (history and branch summaries).
    Checkpoint,
    /// The sections of `prompts/turn-prefix.md`.
    TurnPrefix,
}

const CHECKPOINT_HEADINGS: [&str; 8] = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress\n### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
];

const TURN_PREFIX_HEADINGS: [&str; 3] = [
    "## Original Request",
    "## Early Progress",
    "## Context for Suffix",
];

/// Never dropped (the first request, the blocking error).
const KEEP: u8 = u8::MAX;
const NONE: &str = "(none)";

impl Layout {
    fn headings(self) -> &'static [&'static str] {
        match self {
            Layout::Checkpoint => &CHECKPOINT_HEADINGS,
            Layout::TurnPrefix => &TURN_PREFIX_HEADINGS,
        }
    }

    /// Output section of a logical section.
    fn section(self, sec: Sec) -> usize {
        match self {
            Layout::Checkpoint => sec as usize,
            Layout::TurnPrefix => match sec {
                Sec::Goal => 0,
                Sec::Done | Sec::Decisions => 1,
                _ => 2,
            },
        }
    }

    fn numbered(self, section: usize) -> bool {
        self == Layout::Checkpoint && section == Sec::NextSteps as usize
    }

    fn marker(self, section: usize) -> &'static str {
        match (self, section) {
            (Layout::Checkpoint, 2) => "- [x] ",
            (Layout::Checkpoint, 3) => "- [ ] ",
            _ => "- ",
        }
    }
}

struct Item {
    section: usize,
    text: String,
    raw: bool,
    /// Lower tiers are dropped first; within a tier, lower `order` first.
    tier: u8,
    order: usize,
    /// Shorter versions of a kept item, longest first, for tight budgets.
    shorter: Vec<String>,
}

struct Builder {
    layout: Layout,
    items: Vec<Item>,
    seen: HashSet<(usize, String)>,
    seq: usize,
}

impl Builder {
    fn add(&mut self, sec: Sec, text: String, tier: u8, tail_first: bool) {
        self.add_item(sec, text, false, tier, tail_first, Vec::new());
    }

    fn add_item(
        &mut self,
        sec: Sec,
        text: String,
        raw: bool,
        tier: u8,
        tail_first: bool,
        shorter: Vec<String>,
    ) {
        let section = self.layout.section(sec);
        let key = collapse_ws(&text).to_lowercase();
        if key.is_empty() || !self.seen.insert((section, key)) {
            return;
        }
        self.seq += 1;
        let order = if tail_first {
            usize::MAX - self.seq
        } else {
            self.seq
        };
        self.items.push(Item {
            section,
            text,
            raw,
            tier,
            order,
            shorter,
        });
    }

    fn earlier(&mut self, f: &Facts, secs: &[Sec], tier: u8, tail_first: bool) {
        for e in f.earlier.iter().filter(|e| secs.contains(&e.sec)) {
            self.add_item(e.sec, e.text.clone(), e.raw, tier, tail_first, Vec::new());
        }
    }
}

fn request_item(b: &mut Builder, f: &Facts) {
    let Some(first) = f.requests.first() else {
        return;
    };
    let shorter = [300, 160, 80, 40]
        .iter()
        .map(|&n| shorten(first, n))
        .collect();
    b.add_item(Sec::Goal, shorten(first, 800), false, KEEP, false, shorter);
    let later = &f.requests[1..];
    for (i, r) in later.iter().enumerate() {
        if r.split_whitespace().count() < 3 {
            continue; // "ok", "yo", "wow": not a request
        }
        let tier = if i + 1 == later.len() { 6 } else { 5 };
        b.add(Sec::Goal, shorten(r, 300), tier, false);
    }
}

fn error_text(e: &Failure, line_max: usize) -> String {
    format!("{} failed: {}", e.what, code(&shorten(&e.line, line_max)))
}

fn blocker_item(b: &mut Builder, f: &Facts, sec: Sec) {
    if let Some(e) = f.blocker() {
        let shorter = [200, 100, 50].iter().map(|&n| error_text(e, n)).collect();
        b.add_item(sec, error_text(e, 500), false, KEEP, false, shorter);
    }
}

fn file_items(b: &mut Builder, f: &Facts, sec: Sec) {
    for m in f.modified.iter().filter(|m| m.done()) {
        b.add(sec, format!("{} {}", m.verb(), code(&m.path)), 8, true);
    }
    for c in &f.done_commands.items {
        // Commands that only look at files go first when the budget is tight.
        let tier = if is_viewer(&main_command(c)) { 1 } else { 4 };
        let c = shorten(&collapse_ws(c), 160);
        b.add(sec, format!("Ran {}", code(&c)), tier, false);
    }
}

fn decision_items(b: &mut Builder, f: &Facts, sec: Sec) {
    let all = &f.decisions.items;
    for d in &all[all.len().saturating_sub(8)..] {
        b.add(sec, shorten(&collapse_ws(d), 240), 3, false);
    }
}

fn context_items(b: &mut Builder, f: &Facts) {
    for a in &f.additional {
        b.add(Sec::Critical, shorten(a, 500), 10, true);
    }
    if let Some(e) = &f.last_error {
        let note = if e.resolved {
            " (a later run succeeded)"
        } else {
            ""
        };
        b.add(
            Sec::Critical,
            format!(
                "Last error ({}): {}{note}",
                e.what,
                code(&shorten(&e.line, 500))
            ),
            5,
            false,
        );
    }
}

fn path_items(b: &mut Builder, f: &Facts) {
    let recent: Vec<String> = f.commands.items[f.commands.items.len().saturating_sub(20)..]
        .iter()
        .map(|c| code(&shorten(&collapse_ws(c), 80)))
        .collect();
    if !recent.is_empty() {
        b.add(
            Sec::Critical,
            format!("Commands run: {}", recent.join(", ")),
            1,
            false,
        );
    }
    let mut listed: HashSet<&str> = HashSet::new();
    for m in &f.modified {
        if listed.insert(&m.path) {
            b.add(
                Sec::Critical,
                format!("{} (modified)", code(&m.path)),
                2,
                true,
            );
        }
    }
    for p in &f.read.items {
        if listed.insert(p) {
            b.add(Sec::Critical, format!("{} (read)", code(p)), 2, true);
        }
    }
    for p in &f.mentioned.items {
        if listed.insert(p) && !f.read.contains(p) {
            b.add(Sec::Critical, code(p), 0, true);
        }
    }
}

fn checkpoint_items(b: &mut Builder, f: &Facts) {
    // Goal: earlier goals, the first request, later distinct requests.
    b.earlier(f, &[Sec::Goal], 9, true);
    request_item(b, f);
    b.earlier(f, &[Sec::Constraints], 9, true);
    for c in &f.constraints.items {
        b.add(Sec::Constraints, shorten(&collapse_ws(c), 300), 6, true);
    }
    b.earlier(f, &[Sec::Done], 7, false);
    file_items(b, f, Sec::Done);
    if let Some(last) = &f.last_assistant {
        b.add(Sec::InProgress, shorten(last, 500), 10, false);
    }
    b.earlier(f, &[Sec::InProgress], 9, true);
    blocker_item(b, f, Sec::Blocked);
    b.earlier(f, &[Sec::Blocked], 9, true);
    b.earlier(f, &[Sec::Decisions], 7, false);
    decision_items(b, f, Sec::Decisions);
    for step in next_steps(f) {
        b.add(Sec::NextSteps, step, 10, true);
    }
    b.earlier(f, &[Sec::NextSteps], 7, true);
    context_items(b, f);
    b.earlier(f, &[Sec::Critical], 7, true);
    path_items(b, f);
}

fn turn_prefix_items(b: &mut Builder, f: &Facts) {
    request_item(b, f);
    b.earlier(f, &[Sec::Goal], 9, true);
    b.earlier(f, &[Sec::Done, Sec::Decisions], 7, false);
    file_items(b, f, Sec::Done);
    decision_items(b, f, Sec::Decisions);
    blocker_item(b, f, Sec::Critical);
    if let Some(last) = &f.last_assistant {
        b.add(
            Sec::Critical,
            format!("Last step: {}", shorten(last, 500)),
            10,
            false,
        );
    }
    for c in &f.constraints.items {
        b.add(Sec::Critical, shorten(&collapse_ws(c), 300), 6, true);
    }
    context_items(b, f);
    b.earlier(
        f,
        &[
            Sec::Constraints,
            Sec::InProgress,
            Sec::Blocked,
            Sec::NextSteps,
            Sec::Critical,
        ],
        7,
        true,
    );
    path_items(b, f);
}

/// Derived only: fix the blocker; continue the in-progress item (or say the assistant is
/// waiting for the user).
fn next_steps(f: &Facts) -> Vec<String> {
    let mut steps = Vec::new();
    if let Some(e) = f.blocker() {
        steps.push(format!(
            "Fix the blocker: {} fails with {}",
            e.what,
            code(&shorten(&e.line, 200))
        ));
    }
    match (&f.last_assistant, f.waiting) {
        (Some(_), true) if steps.is_empty() => steps
            .push("The assistant ended its turn; wait for the user's next request.".to_string()),
        (Some(last), _) => steps.push(format!("Continue: {}", shorten(last, 200))),
        (None, _) => {
            if let Some(r) = f.requests.last() {
                steps.push(format!("Continue with the request: {}", shorten(r, 200)));
            }
        }
    }
    steps
}

fn item_len(layout: Layout, item: &Item) -> usize {
    let marker = if item.raw {
        0
    } else {
        utf16_len(layout.marker(item.section))
    };
    marker + utf16_len(&item.text) + 1
}

fn section_len(layout: Layout, section: usize, items: &[Item], alive: &[bool]) -> usize {
    let head = utf16_len(layout.headings()[section]) + 1;
    let mut body = 0;
    let mut n = 0;
    for (i, item) in items.iter().enumerate() {
        if item.section != section || !alive[i] {
            continue;
        }
        n += 1;
        body += if layout.numbered(section) && !item.raw {
            utf16_len(&format!("{n}. ")) + utf16_len(&item.text) + 1
        } else {
            item_len(layout, item)
        };
    }
    head + if n == 0 { NONE.len() } else { body - 1 }
}

fn render(layout: Layout, items: &[Item], alive: &[bool]) -> String {
    let mut out = String::new();
    for (s, heading) in layout.headings().iter().enumerate() {
        if s > 0 {
            out.push_str("\n\n");
        }
        out.push_str(heading);
        out.push('\n');
        let mut n = 0;
        for (i, item) in items.iter().enumerate() {
            if item.section != s || !alive[i] {
                continue;
            }
            if n > 0 {
                out.push('\n');
            }
            n += 1;
            if !item.raw {
                if layout.numbered(s) {
                    out.push_str(&format!("{n}. "));
                } else {
                    out.push_str(layout.marker(s));
                }
            }
            out.push_str(&item.text);
        }
        if n == 0 {
            out.push_str(NONE);
        }
    }
    out
}

fn structured(f: &Facts, layout: Layout, limit: usize) -> String {
    let mut b = Builder {
        layout,
        items: Vec::new(),
        seen: HashSet::new(),
        seq: 0,
    };
    match layout {
        Layout::Checkpoint => checkpoint_items(&mut b, f),
        Layout::TurnPrefix => turn_prefix_items(&mut b, f),
    }
    let mut items = b.items;
    let sections = layout.headings().len();
    let mut alive = vec![true; items.len()];
    let mut lens: Vec<usize> = (0..sections)
        .map(|s| section_len(layout, s, &items, &alive))
        .collect();
    let mut counts = vec![0usize; sections];
    for item in &items {
        counts[item.section] += 1;
    }
    let total = |lens: &[usize]| lens.iter().sum::<usize>() + 2 * (lens.len() - 1);
    // Drop the least important items first.
    let mut order: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].tier != KEEP)
        .collect();
    order.sort_by_key(|&i| (items[i].tier, items[i].order));
    for i in order {
        if total(&lens) <= limit {
            break;
        }
        alive[i] = false;
        let s = items[i].section;
        counts[s] -= 1;
        lens[s] = if layout.numbered(s) {
            section_len(layout, s, &items, &alive)
        } else {
            let none = if counts[s] == 0 { NONE.len() + 1 } else { 0 };
            lens[s] - item_len(layout, &items[i]) + none
        };
    }
    // Then shorten what must stay.
    let mut step = 0;
    while total(&lens) > limit {
        let mut changed = false;
        for (i, item) in items.iter_mut().enumerate() {
            if alive[i] && item.tier == KEEP {
                if let Some(s) = item.shorter.get(step) {
                    item.text = s.clone();
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
        step += 1;
        lens = (0..sections)
            .map(|s| section_len(layout, s, &items, &alive))
            .collect();
    }
    let text = render(layout, &items, &alive);
    if utf16_len(&text) <= limit {
        text
    } else {
        compact(f, limit)
    }
}

// ---------------------------------------------------------------------------------------
// Short and fallback forms
// ---------------------------------------------------------------------------------------

/// One plain paragraph of at most three sentences: what the session is about, the files,
/// where the work stands.
fn short(f: &Facts, limit: usize) -> String {
    let files: Vec<&str> = {
        let modified: Vec<&str> = f
            .modified
            .iter()
            .filter(|m| m.done())
            .map(|m| m.path.as_str())
            .collect();
        if modified.is_empty() {
            f.mentioned.items.iter().map(String::as_str).collect()
        } else {
            modified
        }
    };
    let changed = f.modified.iter().any(Modified::done);
    for (about, latest, status, n_files) in [
        (300, 160, 300, 3),
        (160, 80, 160, 2),
        (80, 0, 100, 1),
        (60, 0, 60, 0),
    ] {
        let mut p = String::new();
        match f.first_goal() {
            Some(goal) => {
                p.push_str(&format!(
                    "The session is about: \"{}\"",
                    shorten(&goal, about)
                ));
                if latest > 0 && f.requests.len() > 1 {
                    let last = f.requests.last().expect("more than one");
                    p.push_str(&format!(", most recently \"{}\"", shorten(last, latest)));
                }
                p.push('.');
            }
            None => p.push_str("The session has no user request."),
        }
        if n_files > 0 && !files.is_empty() {
            let shown = files.len().min(n_files);
            let more = files.len() - shown;
            p.push_str(if changed {
                " Files changed: "
            } else {
                " Files involved: "
            });
            p.push_str(&files[..shown].join(", "));
            if more > 0 {
                p.push_str(&format!(" and {more} more"));
            }
            p.push('.');
        }
        match (f.blocker(), &f.last_assistant) {
            (Some(e), _) => p.push_str(&format!(
                " Work is blocked: {} failed with \"{}\".",
                collapse_ws(&e.what.replace('`', "")),
                shorten(&e.line, status)
            )),
            (None, Some(last)) if f.waiting => p.push_str(&format!(
                " The assistant's last reply, now waiting for the user: \"{}\".",
                shorten(last, status)
            )),
            (None, Some(last)) => p.push_str(&format!(
                " Work is in progress: \"{}\".",
                shorten(last, status)
            )),
            (None, None) => {}
        }
        if utf16_len(&p) <= limit {
            return p;
        }
    }
    compact(f, limit)
}

/// The last resort for budgets too small for the format: the first request and the
/// blocking error, cut to fit.
fn compact(f: &Facts, limit: usize) -> String {
    let first = f.first_goal().unwrap_or_default();
    let error = f
        .blocker()
        .map(|e| format!("Blocked: {}", e.line.trim()))
        .unwrap_or_default();
    let whole = match (first.is_empty(), error.is_empty()) {
        (false, false) => format!("{first} {error}"),
        (false, true) => first.clone(),
        (true, false) => error.clone(),
        (true, true) => return shorten(&f.fallback, limit),
    };
    if utf16_len(&whole) <= limit {
        return whole;
    }
    if !first.is_empty() && !error.is_empty() {
        let error = shorten(
            &error,
            (limit / 2).max(limit.saturating_sub(utf16_len(&first) + 1)),
        );
        let room = limit.saturating_sub(utf16_len(&error) + 1);
        if room >= 12 {
            return format!("{} {error}", shorten(&first, room));
        }
    }
    shorten(if first.is_empty() { &error } else { &first }, limit)
}

// ---------------------------------------------------------------------------------------
// Text helpers
// ---------------------------------------------------------------------------------------

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` UTF-16 units, cut at a word boundary when one is near, ending in `…`.
fn shorten(s: &str, max: usize) -> String {
    if utf16_len(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let u = c.len_utf16();
        if units + u > max - 1 {
            break;
        }
        units += u;
        end = i + c.len_utf8();
    }
    let mut cut = &s[..end];
    if let Some(space) = cut.rfind(char::is_whitespace) {
        if space * 5 >= end * 4 {
            cut = &cut[..space];
        }
    }
    format!("{}…", cut.trim_end())
}

/// The largest char boundary at or below `max` bytes.
fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A markdown code span that survives backticks in the text.
fn code(s: &str) -> String {
    if !s.contains('`') {
        format!("`{s}`")
    } else if !s.contains("``") {
        format!("`` {s} ``")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::{PromptOptions, Prompts};

    const CONVERSATION: &str = "[User]: Add a --verbose flag to the CLI in src/cli.rs. You must keep the public API unchanged. Don't touch Cargo.toml.\n\n\
[Assistant thinking]: Look at src/cli.rs first.\n\n\
[Assistant tool calls]: read(path=\"src/cli.rs\")\n\n\
[Tool result]: use clap::Parser;\n\npub struct Cli {}\nimpl Cli { pub fn option_0(&self) -> bool { self.flags & 1 != 0 } }\nimpl Cli { pub fn option_1(&self) -> bool { self.flags & 2 != 0 } }\nimpl Cli { pub fn option_2(&self) -> bool { self.flags & 4 != 0 } }\nimpl Cli { pub fn option_3(&self) -> bool { self.flags & 8 != 0 } }\nimpl Cli { pub fn option_4(&self) -> bool { self.flags & 16 != 0 } }\nimpl Cli { pub fn option_5(&self) -> bool { self.flags & 32 != 0 } }\nimpl Cli { pub fn option_6(&self) -> bool { self.flags & 64 != 0 } }\nimpl Cli { pub fn option_7(&self) -> bool { self.flags & 128 != 0 } }\nimpl Cli { pub fn option_8(&self) -> bool { self.flags & 256 != 0 } }\nimpl Cli { pub fn option_9(&self) -> bool { self.flags & 512 != 0 } }\nimpl Cli { pub fn option_10(&self) -> bool { self.flags & 1024 != 0 } }\nimpl Cli { pub fn option_11(&self) -> bool { self.flags & 2048 != 0 } }\nimpl Cli { pub fn option_12(&self) -> bool { self.flags & 4096 != 0 } }\nimpl Cli { pub fn option_13(&self) -> bool { self.flags & 8192 != 0 } }\nimpl Cli { pub fn option_14(&self) -> bool { self.flags & 16384 != 0 } }\nimpl Cli { pub fn option_15(&self) -> bool { self.flags & 32768 != 0 } }\nimpl Cli { pub fn option_16(&self) -> bool { self.flags & 1 != 0 } }\nimpl Cli { pub fn option_17(&self) -> bool { self.flags & 2 != 0 } }\nimpl Cli { pub fn option_18(&self) -> bool { self.flags & 4 != 0 } }\nimpl Cli { pub fn option_19(&self) -> bool { self.flags & 8 != 0 } }\nimpl Cli { pub fn option_20(&self) -> bool { self.flags & 16 != 0 } }\nimpl Cli { pub fn option_21(&self) -> bool { self.flags & 32 != 0 } }\nimpl Cli { pub fn option_22(&self) -> bool { self.flags & 64 != 0 } }\nimpl Cli { pub fn option_23(&self) -> bool { self.flags & 128 != 0 } }\nimpl Cli { pub fn option_24(&self) -> bool { self.flags & 256 != 0 } }\nimpl Cli { pub fn option_25(&self) -> bool { self.flags & 512 != 0 } }\nimpl Cli { pub fn option_26(&self) -> bool { self.flags & 1024 != 0 } }\nimpl Cli { pub fn option_27(&self) -> bool { self.flags & 2048 != 0 } }\nimpl Cli { pub fn option_28(&self) -> bool { self.flags & 4096 != 0 } }\nimpl Cli { pub fn option_29(&self) -> bool { self.flags & 8192 != 0 } }\nimpl Cli { pub fn option_30(&self) -> bool { self.flags & 16384 != 0 } }\nimpl Cli { pub fn option_31(&self) -> bool { self.flags & 32768 != 0 } }\nimpl Cli { pub fn option_32(&self) -> bool { self.flags & 1 != 0 } }\nimpl Cli { pub fn option_33(&self) -> bool { self.flags & 2 != 0 } }\nimpl Cli { pub fn option_34(&self) -> bool { self.flags & 4 != 0 } }\nimpl Cli { pub fn option_35(&self) -> bool { self.flags & 8 != 0 } }\nimpl Cli { pub fn option_36(&self) -> bool { self.flags & 16 != 0 } }\nimpl Cli { pub fn option_37(&self) -> bool { self.flags & 32 != 0 } }\nimpl Cli { pub fn option_38(&self) -> bool { self.flags & 64 != 0 } }\nimpl Cli { pub fn option_39(&self) -> bool { self.flags & 128 != 0 } }\n\n\
[Assistant]: I decided to use a clap flag instead of an env var because it is discoverable.\n\n\
[Assistant tool calls]: edit(path=\"src/cli.rs\", oldText=\"pub struct Cli {}\", newText=\"pub struct Cli { verbose: bool }\"); write(path=\"tests/verbose.rs\", content=\"#[test]\\nfn t() {}\")\n\n\
[Tool result]: Successfully replaced text in src/cli.rs.\n\n\
[Tool result]: Successfully wrote 20 bytes to tests/verbose.rs\n\n\
[Assistant tool calls]: bash(command=\"cargo build\")\n\n\
[Tool result]: Finished dev profile\n\n\
[User]: also print the config path from config/default.toml when verbose\n\n\
[Assistant tool calls]: bash(command=\"cargo test\")\n\n\
[Tool result]: error[E0425]: cannot find value `verbose` in this scope\n --> src/cli.rs:12:5\n\nCommand exited with code 101\n\n\
[Assistant]: The test build fails; I will fix the missing binding in src/cli.rs next.";

    fn request(kind: RequestKind, prompt: String, max_tokens: u64) -> SummaryRequest {
        SummaryRequest {
            kind,
            system_prompt: String::new(),
            prompt,
            max_tokens,
        }
    }

    fn history(conversation: &str, previous: Option<&str>, max_tokens: u64) -> SummaryRequest {
        let mut r = Prompts::builtin().history_request(
            conversation,
            previous,
            16384,
            &PromptOptions::default(),
        );
        r.max_tokens = max_tokens;
        r
    }

    fn headings(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with('#')).collect()
    }

    #[test]
    fn keeps_paths_first_request_and_last_error() {
        let s = summarize(&history(CONVERSATION, None, 13107));
        let t = &s.text;
        assert_eq!(
            headings(t),
            [
                "## Goal",
                "## Constraints & Preferences",
                "## Progress",
                "### Done",
                "### In Progress",
                "### Blocked",
                "## Key Decisions",
                "## Next Steps",
                "## Critical Context"
            ]
        );
        assert!(t.contains("- Add a --verbose flag to the CLI in src/cli.rs. You must keep the public API unchanged. Don't touch Cargo.toml."));
        assert!(t.contains("- also print the config path from config/default.toml when verbose"));
        assert!(t.contains("- You must keep the public API unchanged."));
        assert!(t.contains("- Don't touch Cargo.toml."));
        assert!(t.contains("- [x] Edited `src/cli.rs`"));
        assert!(t.contains("- [x] Wrote `tests/verbose.rs`"));
        assert!(t.contains("- [x] Ran `cargo build`"));
        assert!(!t.contains("Ran `cargo test`"), "it failed");
        assert!(t.contains(
            "### Blocked\n- `cargo test` failed: `` error[E0425]: cannot find value `verbose` in this scope ``"
        ));
        assert!(t.contains("I decided to use a clap flag instead of an env var"));
        assert!(t.contains("1. Fix the blocker: `cargo test` fails with"));
        assert!(t.contains("2. Continue: The test build fails"));
        for p in [
            "src/cli.rs",
            "tests/verbose.rs",
            "config/default.toml",
            "Cargo.toml",
        ] {
            assert!(t.contains(&format!("`{p}`")), "{p} missing:\n{t}");
        }
        assert_eq!(s.model, "extractive");
        assert_eq!(s.summarizer, SummarizerKind::Extractive);
        assert_eq!((s.retries, s.cached), (0, false));
        assert_eq!(s.usage.output, utf16_len(t).div_ceil(4) as u64);
        assert_eq!(
            s.usage.input,
            (utf16_len(&Prompts::builtin().system)
                + utf16_len(&history(CONVERSATION, None, 1).prompt))
            .div_ceil(4) as u64
        );
        assert_eq!(s.usage.total_tokens, s.usage.input + s.usage.output);
        assert_eq!((s.usage.cache_read, s.usage.cache_write), (0, 0));
    }

    #[test]
    fn a_later_success_of_the_same_command_resolves_the_error() {
        let conv = format!(
            "{CONVERSATION}\n\n[Assistant tool calls]: bash(command=\"cargo test\")\n\n[Tool result]: test result: ok. 3 passed; 0 failed\n\n[Assistant]: All tests pass now."
        );
        let t = summarize(&history(&conv, None, 13107)).text;
        assert!(t.contains("### Blocked\n(none)"), "{t}");
        assert!(t.contains("- [x] Ran `cargo test`"));
        assert!(t.contains("(a later run succeeded)"));
        assert!(t.contains("## Next Steps\n1. The assistant ended its turn"));
    }

    #[test]
    fn the_same_command_ignores_cd_and_output_filters() {
        assert_eq!(
            command_key("cd /repo && npm run check 2>&1 | grep -E \"error\" | head -10"),
            "npm run check"
        );
        assert_eq!(command_key("npm run check"), "npm run check");
        assert_eq!(
            command_key("cd /repo\n# fix\nsed -i '' x a.ts"),
            "cd /repo # fix sed -i '' x a.ts"
        );
        let conv = "[User]: Make the checks pass in src/lib.ts please, all of them.\n\n[Assistant tool calls]: bash(command=\"cd /repo && npm run check 2>&1 | head -5\")\n\n[Tool result]: src/lib.ts(3,1): error TS2304: Cannot find name 'x'.\n\n[Assistant tool calls]: edit(path=\"src/lib.ts\", oldText=\"x\", newText=\"y\")\n\n[Tool result]: Successfully replaced text in src/lib.ts.\n\n[Assistant tool calls]: bash(command=\"npm run check\")\n\n[Tool result]: All checks passed, nothing to report here at all.\n\n[Assistant]: The checks pass now and everything is clean again.";
        let t = summarize(&history(conv, None, 13107)).text;
        assert!(t.contains("### Blocked\n(none)"), "{t}");
        assert!(t.contains("error TS2304: Cannot find name 'x'."), "{t}");
    }

    #[test]
    fn merges_a_previous_summary_without_losing_items() {
        let previous = "# Context Checkpoint: CLI work\n\n## Goal\nShip the CLI.\n\n## Constraints & Preferences\n- E2E tests only\n\n## Progress\n### Done\n- [x] Created `src/main.rs`\n\n### In Progress\n- [ ] Wiring the parser\n\n### Blocked\n(none)\n\n## Key Decisions\n- **clap**: derive API\n\n## Next Steps\n1. Add flags\n\n## Critical Context\n- Build with `cargo build --release`\n\n## Agreed Structure\n```\nsrc/\n  cli.rs\n```\n\n<read-files>\nsrc/old.rs\n</read-files>\n\n<modified-files>\nsrc/main.rs\n</modified-files>";
        let t = summarize(&history(CONVERSATION, Some(previous), 13107)).text;
        assert!(!t.contains("<read-files>") && !t.contains("<modified-files>"));
        assert!(!t.contains("src/old.rs"));
        for item in [
            "- Ship the CLI.",
            "- E2E tests only",
            "- [x] Created `src/main.rs`",
            "- [ ] Wiring the parser",
            "- **clap**: derive API",
            "Add flags",
            "- Build with `cargo build --release`",
            "**Agreed Structure**:",
            "```\nsrc/\n  cli.rs\n```",
            "**Context Checkpoint: CLI work**",
            "- Add a --verbose flag",
            "- [x] Edited `src/cli.rs`",
        ] {
            assert!(t.contains(item), "{item:?} missing:\n{t}");
        }
        // The previous goal comes first; new state-like items lead their sections.
        assert!(t.find("Ship the CLI").unwrap() < t.find("Add a --verbose").unwrap());
        assert!(t.contains("## Next Steps\n1. Fix the blocker"));
        // Merging twice does not duplicate.
        let again = summarize(&history(CONVERSATION, Some(&t), 13107)).text;
        assert_eq!(again.matches("E2E tests only").count(), 1);
        assert_eq!(again.matches("Edited `src/cli.rs`").count(), 1);
    }

    #[test]
    fn respects_the_budget_and_never_grows_the_input() {
        for max_tokens in [0, 1, 5, 12, 30, 60, 100, 150, 200, 400] {
            for kind in [
                RequestKind::History,
                RequestKind::Branch,
                RequestKind::TurnPrefix,
                RequestKind::Short,
            ] {
                let mut r = history(CONVERSATION, None, max_tokens);
                r.kind = kind;
                let t = summarize(&r).text;
                assert!(
                    utf16_len(&t) <= max_tokens as usize * 4,
                    "{kind:?} {max_tokens}: {t}"
                );
                if max_tokens >= 12 {
                    assert!(t.contains("Add a"), "{kind:?} {max_tokens}: {t}");
                }
            }
        }
        // Room for the format: the first request and the error survive the trimming.
        let t = summarize(&history(CONVERSATION, None, 200)).text;
        assert!(t.starts_with("## Goal\n- Add a --verbose flag"), "{t}");
        assert!(t.contains("cannot find value"), "{t}");
        assert!(utf16_len(&t) <= 800);

        // A tiny conversation: never longer than what it condenses.
        for conv in ["[User]: hi", "[User]: fix src/a.rs please", "x"] {
            for kind in [
                RequestKind::History,
                RequestKind::TurnPrefix,
                RequestKind::Short,
            ] {
                let mut r = history(conv, None, 13107);
                r.kind = kind;
                let t = summarize(&r).text;
                assert!(utf16_len(&t) <= utf16_len(conv), "{conv:?} {kind:?}: {t:?}");
                assert!(!t.is_empty());
            }
        }
        let t = summarize(&history("[User]: fix src/a.rs please", None, 13107)).text;
        assert_eq!(t, "fix src/a.rs please");
        // Astral characters count as two units.
        let conv = "[User]: 😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀 refactor everything";
        let t = summarize(&history(conv, None, 5)).text;
        assert!(utf16_len(&t) <= 20, "{t}");
    }

    #[test]
    fn any_prefix_of_a_prompt_is_handled_within_budget() {
        let prompt = history(CONVERSATION, Some("## Goal\n- old"), 1).prompt;
        let cuts: Vec<usize> = prompt.char_indices().map(|(i, _)| i).step_by(13).collect();
        for (n, &cut) in cuts.iter().enumerate() {
            let kind = [
                RequestKind::History,
                RequestKind::TurnPrefix,
                RequestKind::Short,
            ][n % 3];
            let max_tokens = [3, 40, 400, 5000][n % 4];
            let s = summarize(&request(kind, prompt[..cut].to_string(), max_tokens));
            assert!(utf16_len(&s.text) <= max_tokens as usize * 4);
            assert!(utf16_len(&s.text) <= utf16_len(&prompt[..cut]));
            detect_kind(&prompt[..cut]);
        }
    }

    #[test]
    fn is_deterministic() {
        let prev = "## Goal\n- old goal\n\n## Critical Context\n- a.rs";
        for kind in [
            RequestKind::History,
            RequestKind::Branch,
            RequestKind::TurnPrefix,
            RequestKind::Short,
        ] {
            let mut r = history(CONVERSATION, Some(prev), 300);
            r.kind = kind;
            let a = summarize(&r);
            let b = summarize(&r.clone());
            assert_eq!(a, b);
        }
    }

    #[test]
    fn a_prompt_without_a_conversation_block_is_the_conversation() {
        // A serialized conversation with no tags around it.
        let prompt = format!("Please refactor src/lib.rs so parsing lives in src/parse.rs. Always keep the tests green.\n\n{CONVERSATION}");
        let t = summarize(&request(RequestKind::History, prompt.clone(), 1000)).text;
        assert!(
            t.starts_with("## Goal\n- Please refactor src/lib.rs"),
            "{t}"
        );
        assert!(t.contains("- Add a --verbose flag"));
        assert!(t.contains("- Always keep the tests green."));
        assert!(t.contains("cannot find value `verbose`"));
        assert_eq!(detect_kind(&prompt), RequestKind::History);
        // Plain text: too short for the format, so the request itself.
        let plain = "Please refactor src/lib.rs so parsing lives in src/parse.rs.\n\nSummarize.";
        let t = summarize(&request(RequestKind::History, plain.into(), 1000)).text;
        assert_eq!(
            t,
            "Please refactor src/lib.rs so parsing lives in src/parse.rs. Summarize."
        );
    }

    #[test]
    fn turn_prefix_has_the_turn_prefix_headings() {
        let r = Prompts::builtin().turn_prefix_request(CONVERSATION, 16384);
        let t = summarize(&r).text;
        assert_eq!(
            headings(&t),
            [
                "## Original Request",
                "## Early Progress",
                "## Context for Suffix"
            ]
        );
        assert!(t.starts_with("## Original Request\n- Add a --verbose flag"));
        assert!(t.contains("- Edited `src/cli.rs`"));
        assert!(t.contains("cannot find value `verbose` in this scope"));
        assert!(t.contains("- Last step: The test build fails"));
    }

    #[test]
    fn short_is_one_paragraph() {
        let p = Prompts::builtin();
        let prompt = format!(
            "<conversation>\n{CONVERSATION}\n</conversation>\n\n{}",
            p.short_summary
        );
        assert_eq!(detect_kind(&prompt), RequestKind::Short);
        let t = summarize(&request(RequestKind::Short, prompt, 300)).text;
        assert!(
            !t.contains('\n') && !t.contains('#') && !t.contains("- "),
            "{t}"
        );
        assert!(!t.contains("`cargo test`"), "no markdown of ours: {t}");
        assert!(t.starts_with("The session is about: \"Add a --verbose flag"));
        assert!(t.contains("src/cli.rs"));
        assert!(t.contains("Work is blocked: cargo test failed"));
    }

    #[test]
    fn detects_the_kind_from_the_instructions() {
        let p = Prompts::builtin();
        let opts = PromptOptions::default();
        let wrap = |ins: &str| format!("<conversation>\n{CONVERSATION}\n</conversation>\n\n{ins}");
        assert_eq!(
            detect_kind(&p.history_request(CONVERSATION, None, 100, &opts).prompt),
            RequestKind::History
        );
        assert_eq!(
            detect_kind(
                &p.history_request(CONVERSATION, Some("old"), 100, &opts)
                    .prompt
            ),
            RequestKind::History
        );
        assert_eq!(
            detect_kind(&p.turn_prefix_request(CONVERSATION, 100).prompt),
            RequestKind::TurnPrefix
        );
        assert_eq!(detect_kind(&wrap(&p.branch)), RequestKind::Branch);
        assert_eq!(detect_kind(&wrap(&p.short_summary)), RequestKind::Short);
        // pi's wording.
        assert_eq!(
            detect_kind(&wrap("This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.\n\n## Original Request\n## Early Progress\n## Context for Suffix")),
            RequestKind::TurnPrefix
        );
        assert_eq!(
            detect_kind(&wrap("Create a structured summary of this conversation branch for context when returning later.\n\n## Goal")),
            RequestKind::Branch
        );
        assert_eq!(
            detect_kind(&wrap("The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.\n\n## Goal")),
            RequestKind::History
        );
        assert_eq!(
            detect_kind(&format!("<conversation>\n{CONVERSATION}\n</conversation>\n\n<previous-summary>\nold\n</previous-summary>\n\nThe messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.")),
            RequestKind::History
        );
        // Branch wording inside the conversation does not count.
        let conv = "[User]: Reference context: summary of a conversation branch the user left.\n\n<branch-summary>\n## Goal\n- x\n</branch-summary>";
        assert_eq!(
            detect_kind(&p.history_request(conv, None, 100, &opts).prompt),
            RequestKind::History
        );
    }

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
        assert!(t.contains("- [x] Ran `make lint`"));
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

    #[test]
    fn finds_paths_in_text() {
        let mut o = Ordered::default();
        scan_paths(
            "See src/a.rs, ./b/c.ts and README.md (not res.json() nor v1.2.3 or https://x.com/y.html); e.g. Cargo.toml.",
            &mut o,
        );
        assert_eq!(o.items, ["src/a.rs", "./b/c.ts", "README.md", "Cargo.toml"]);
    }

    #[test]
    fn summarizes_a_real_session() {
        use crate::pipeline::{
            prepare_response, BodyFormat, PrepareOptions, PrepareResponse, SessionInput,
        };
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/pi-sessions/before-compaction.jsonl");
        let body = std::fs::read(path).expect("fixture");
        let input =
            SessionInput::parse(&body, BodyFormat::Jsonl, PrepareOptions::default()).unwrap();
        let prepared = prepare_response(
            &input,
            &Prompts::builtin(),
            crate::compaction::Settings::default(),
            None,
        )
        .unwrap();
        let PrepareResponse::Compactable(c) = prepared else {
            panic!("not compactable")
        };
        for r in &c.requests {
            assert_eq!(detect_kind(&r.prompt), r.kind);
            let s = summarize(r);
            let budget = r.max_tokens as usize * 4;
            assert!(utf16_len(&s.text) <= budget);
            assert!(utf16_len(&s.text) < utf16_len(&r.prompt));
            let expected: &[&str] = match r.kind {
                RequestKind::TurnPrefix => &TURN_PREFIX_HEADINGS,
                _ => &CHECKPOINT_HEADINGS,
            };
            for h in expected {
                assert!(s.text.contains(h), "{h} missing");
            }
            assert!(s
                .text
                .contains("/Users/badlogic/workspaces/pi-mono/packages/coding-agent/"));
            assert_eq!(s, summarize(r));
            if std::env::var_os("EXTRACTIVE_PRINT").is_some() {
                println!(
                    "===== {:?} ({} units, budget {budget})\n{}",
                    r.kind,
                    utf16_len(&s.text),
                    s.text
                );
            }
        }
        let history = summarize(&c.requests[0]).text;
        // The previous summary's items survive the merge.
        assert!(history.contains("**Context Checkpoint: Coding Agent Refactoring**"));
        assert!(history.contains("E2E tests only"));
        assert!(history.contains("- can leave it"), "the first request");
    }
}
