//! Facts: one walk over the transcript's parts gathers everything a summary may say, and
//! the sentences of prose that state constraints and decisions.

use std::collections::VecDeque;

use super::diagnostics::{command_error, command_key, tool_error};
use super::earlier::{parse_summary, Earlier};
use super::layout::Sec;
use super::paths::scan_paths;
use super::text::{code, collapse_ws, floor_boundary, shorten, Ordered};
use super::transcript::{
    classify_user, parse_calls, split_parts, strip_truncation, Call, CallKind, Label, UserPart,
};
use crate::summarize::templates::PromptParts;

/// A file a write or edit call touched.
pub(super) struct Modified {
    pub(super) path: String,
    wrote: bool,
    edited: bool,
    pub(super) ok: bool,
    pub(super) failed: bool,
}

impl Modified {
    /// Done unless every attempt failed (a call whose result is not in the text counts).
    pub(super) fn done(&self) -> bool {
        self.ok || !self.failed
    }

    pub(super) fn verb(&self) -> &'static str {
        match (self.wrote, self.edited) {
            (true, true) => "Wrote and edited",
            (true, false) => "Wrote",
            _ => "Edited",
        }
    }
}

/// The last failure seen.
pub(super) struct Failure {
    /// What must succeed later to resolve it (the command, or tool and path).
    key: String,
    /// How to name it: `` `cargo test` `` or ``edit `src/a.rs` ``.
    pub(super) what: String,
    /// The exact error line.
    pub(super) line: String,
    pub(super) resolved: bool,
}

#[derive(Default)]
pub(super) struct Facts {
    /// Distinct user requests, whitespace collapsed.
    pub(super) requests: Vec<String>,
    pub(super) constraints: Ordered,
    pub(super) decisions: Ordered,
    pub(super) modified: Vec<Modified>,
    pub(super) read: Ordered,
    pub(super) mentioned: Ordered,
    pub(super) done_commands: Ordered,
    pub(super) commands: Ordered,
    pub(super) last_error: Option<Failure>,
    pub(super) last_assistant: Option<String>,
    /// The conversation ends with assistant text: the turn ended, the user is next.
    pub(super) waiting: bool,
    pub(super) earlier: Vec<Earlier>,
    pub(super) additional: Vec<String>,
    /// Condensed conversation text, for the last-resort fallback.
    pub(super) fallback: String,
}

impl Facts {
    pub(super) fn gather(p: &PromptParts) -> Facts {
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

    pub(super) fn blocker(&self) -> Option<&Failure> {
        self.last_error.as_ref().filter(|e| !e.resolved)
    }

    /// The goal to lead with: the first request, else the previous summary's.
    pub(super) fn first_goal(&self) -> Option<String> {
        self.requests.first().cloned().or_else(|| {
            self.earlier
                .iter()
                .find(|e| e.sec == Sec::Goal && !e.raw)
                .map(|e| collapse_ws(&e.text))
        })
    }
}

/// Sentences of prose (fenced code skipped), list markers removed.
pub(super) fn sentences(text: &str) -> Vec<String> {
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
