//! Facts: one walk over the transcript's parts gathers everything a summary may say:
//! requests, files changed (with what the assistant said it was changing), commits,
//! commands, the last failure and the last assistant text. What the user laid down
//! (rules, constraints, preferences, facts) and the decisions come from the pinned
//! ledger (see `pinned`), so the summary states them as verification will look for them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::diagnostics::{command_error, command_key, tool_error};
use super::earlier::{parse_summary, Earlier};
use super::layout::Sec;
use super::paths::scan_paths;
use super::pinned::ledger_of;
use super::text::{code, collapse_ws, floor_boundary, shorten, Ordered};
use super::transcript::{
    classify_user, parse_calls, split_parts, strip_truncation, Call, CallKind, Label, UserPart,
};
use crate::summarize::templates::PromptParts;
use compactd_core::compaction::ledger::{is_labelled, is_real_request, Ledger};

/// A file a write or edit call touched.
pub(super) struct Modified {
    pub(super) path: String,
    wrote: bool,
    edited: bool,
    pub(super) ok: bool,
    pub(super) failed: bool,
    /// What the assistant said it was doing just before changing the file, first said
    /// first ("Update `executeBash` to queue while streaming").
    pub(super) notes: Vec<String>,
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

/// The longest the assistant's report of what came of a request is kept.
pub(super) const OUTCOME_CHARS: usize = 140;

#[derive(Default)]
pub(super) struct Facts {
    /// Distinct user requests, whitespace collapsed.
    pub(super) requests: Vec<String>,
    /// Rules, constraints, preferences, facts, decisions: see `pinned`. The request's own
    /// when it carries one (a compaction's plan built it), else read from the prompt.
    pub(super) ledger: Arc<Ledger>,
    pub(super) modified: Vec<Modified>,
    /// Messages of the commits that succeeded, in order.
    pub(super) commits: Vec<String>,
    pub(super) read: Ordered,
    pub(super) mentioned: Ordered,
    pub(super) done_commands: Ordered,
    pub(super) commands: Ordered,
    pub(super) last_error: Option<Failure>,
    /// Every distinct failure, in order (by its error line).
    pub(super) errors: Vec<Failure>,
    pub(super) last_assistant: Option<String>,
    /// Per request (by position in `requests`), the opening of the assistant's last text
    /// after it, before the next request: what came of it, as the assistant reported it.
    outcomes: Vec<Option<String>>,
    /// The request the assistant is answering (its position in `requests`).
    answering: Option<usize>,
    /// The conversation ends with assistant text: the turn ended, the user is next.
    pub(super) waiting: bool,
    pub(super) earlier: Vec<Earlier>,
    pub(super) additional: Vec<String>,
    /// Condensed conversation text, for the last-resort fallback.
    pub(super) fallback: String,
    /// The opening sentence of the assistant text since the last tool result: what the
    /// next tool call is for.
    intent: Option<String>,
    /// What is already listed, so each event costs the same however many came before.
    seen: Seen,
}

/// Lookups into the lists of [`Facts`].
#[derive(Default)]
struct Seen {
    /// Request → its position in `requests`.
    requests: HashMap<String, usize>,
    /// Path → position in `modified`.
    modified: HashMap<String, usize>,
    /// (position in `modified`, note).
    notes: HashSet<(usize, String)>,
    commits: HashSet<String>,
    /// Error lines met.
    error_lines: HashSet<String>,
    /// Outcome key → positions in `errors`.
    errors: HashMap<String, Vec<usize>>,
}

impl Facts {
    /// `given`: the ledger of exactly this conversation, when the caller has it (see
    /// [`SummaryRequest::ledger`](crate::summarize::SummaryRequest::ledger)).
    pub(super) fn gather(p: &PromptParts, given: Option<&Arc<Ledger>>) -> Facts {
        let mut f = Facts::default();
        if let Some(prev) = p.previous {
            f.earlier.extend(parse_summary(prev));
        }
        f.additional = p.additional.iter().map(|a| collapse_ws(a)).collect();
        f.fallback = collapse_ws(&p.conversation[..floor_boundary(p.conversation, 4000)]);
        let mut pending: VecDeque<Call> = VecDeque::new();
        let mut last = None;
        for part in split_parts(p.conversation) {
            crate::cancel::checkpoint();
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
                    f.intent = None;
                    let call = pending.pop_front();
                    f.result(call.as_ref(), strip_truncation(part.text));
                }
            }
            last = Some(part.label);
        }
        f.waiting = last == Some(Label::Assistant);
        // Labelled statements an earlier summary carried go back through the ledger (in
        // front of this span, so what the span says replaces them), not the sections.
        let (carried, earlier): (Vec<Earlier>, Vec<Earlier>) = std::mem::take(&mut f.earlier)
            .into_iter()
            .partition(|e| e.pinned);
        f.earlier = earlier;
        f.ledger = match given {
            // The plan's ledger holds what this conversation states; an earlier summary's
            // labelled lines are text only here (pi writes them too): with any, read here.
            Some(ledger) if carried.is_empty() => Arc::clone(ledger),
            _ => {
                let changed: Vec<String> = f
                    .modified
                    .iter()
                    .filter(|m| m.done())
                    .map(|m| m.path.clone())
                    .collect();
                let carried: Vec<&str> = carried.iter().map(|e| e.text.as_str()).collect();
                Arc::new(ledger_of(&carried, p.conversation, &changed))
            }
        };
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
                // Output the user pasted from a run of their own: its error is one met.
                let pasted = text
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(looks_pasted);
                if let Some(line) = pasted.then(|| command_error("", text, None)).flatten() {
                    self.met("pasted".into(), "a run the user pasted".into(), line);
                }
                let request = collapse_ws(text);
                if request.is_empty() {
                    return;
                }
                let at = match self.seen.requests.get(&request) {
                    Some(&at) => at,
                    None => {
                        let at = self.requests.len();
                        self.seen.requests.insert(request.clone(), at);
                        self.requests.push(request);
                        self.outcomes.push(None);
                        at
                    }
                };
                self.answering = Some(at);
            }
        }
    }

    fn assistant(&mut self, text: &str) {
        scan_paths(text, &mut self.mentioned);
        if let Some(first) = sentences(text).into_iter().find(|s| is_note(s)) {
            self.intent = Some(first);
        }
        if !text.trim().is_empty() {
            let text = collapse_ws(text);
            if let Some(at) = self.answering {
                self.outcomes[at] = Some(shorten(&text, OUTCOME_CHARS));
            }
            self.last_assistant = Some(text);
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
                    let at = match self.seen.modified.get(&p) {
                        Some(&at) => at,
                        None => {
                            self.seen.modified.insert(p.clone(), self.modified.len());
                            self.modified.push(Modified {
                                path: p,
                                wrote: false,
                                edited: false,
                                ok: false,
                                failed: false,
                                notes: Vec::new(),
                            });
                            self.modified.len() - 1
                        }
                    };
                    let m = &mut self.modified[at];
                    if kind == CallKind::Write {
                        m.wrote = true;
                    } else {
                        m.edited = true;
                    }
                    if let Some(note) = &self.intent {
                        if self.seen.notes.insert((at, note.clone())) {
                            m.notes.push(note.clone());
                        }
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
                    if let Some(m) = self.seen.modified.get(p).map(|&at| &mut self.modified[at]) {
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
            if let Some(message) = commit_message(command) {
                if self.seen.commits.insert(message.clone()) {
                    self.commits.push(message);
                }
            }
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
                self.met(key.clone(), what.clone(), line.clone());
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
                for &at in self.seen.errors.get(&key).into_iter().flatten() {
                    self.errors[at].resolved = true;
                }
            }
        }
    }

    /// Records an error met, once per error line.
    fn met(&mut self, key: String, what: String, line: String) {
        if self.seen.error_lines.insert(line.clone()) {
            let at = self.errors.len();
            self.seen.errors.entry(key.clone()).or_default().push(at);
            self.errors.push(Failure {
                key,
                what,
                line,
                resolved: false,
            });
        }
    }

    /// What the assistant last said after `request` (one of `requests`), cut to
    /// [`OUTCOME_CHARS`].
    pub(super) fn outcome_of(&self, request: &str) -> Option<&str> {
        let at = *self.seen.requests.get(request)?;
        self.outcomes[at].as_deref()
    }

    pub(super) fn blocker(&self) -> Option<&Failure> {
        self.last_error.as_ref().filter(|e| !e.resolved)
    }

    /// The user's instructions, in order, each as it is quoted: every request but
    /// chit-chat, slash commands, short questions and messages of labelled statements
    /// (stated as pinned items), short replies included ("delete the file", "f0c674"); pasted material after an
    /// instruction is left out (`[…]`), a message that is only pasted material too.
    pub(super) fn instructions(&self) -> impl Iterator<Item = String> + '_ {
        self.requests.iter().filter_map(|r| {
            // Slash commands drive the UI; a short question asks, it does not instruct.
            let short = is_reply(r);
            if !is_real_request(r)
                || only_labelled(r)
                || (short && (r.starts_with('/') || r.trim_end().ends_with('?')))
            {
                return None;
            }
            if !looks_pasted(r) {
                return Some(r.clone());
            }
            let cut = ["{\"", "\":", "➜", "~/"]
                .iter()
                .filter_map(|m| r.find(m))
                .min()
                .unwrap_or(0);
            let head = r[..cut].trim();
            (head.split_whitespace().count() >= 3).then(|| format!("{head} […]"))
        })
    }

    /// The requests that ask for something (chit-chat and state questions such as "wow,
    /// it works" or "are we all committed?" left out), in order.
    pub(super) fn real_requests(&self) -> impl Iterator<Item = &String> {
        self.requests
            .iter()
            .filter(|r| is_real_request(r) && !looks_pasted(r) && !is_reply(r) && !only_labelled(r))
    }

    /// Whether the work shown was finished: a commit succeeded. An earlier summary's "in
    /// progress" and "next steps" are then history, not state.
    pub(super) fn finished(&self) -> bool {
        !self.commits.is_empty()
    }

    /// The goal to lead with: the previous summary's, else the first real request, else
    /// the first message.
    pub(super) fn first_goal(&self) -> Option<String> {
        let earlier = self
            .earlier
            .iter()
            .find(|e| e.sec == Sec::Goal && !e.raw)
            .map(|e| collapse_ws(&e.text));
        earlier.or_else(|| {
            self.real_requests()
                .next()
                .or(self.requests.first())
                .cloned()
        })
    }
}

/// A short answer to the assistant ("can leave it", "yes do it"), not a task: at most
/// four words and no file or code in them; or a slash command typed into the agent's UI
/// (`/mode`, `/theme dark`).
pub(super) fn is_reply(request: &str) -> bool {
    let words = request.split_whitespace().count();
    let slash_command = request.starts_with('/')
        && words <= 2
        && request[1..]
            .split_whitespace()
            .next()
            .is_some_and(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    slash_command || (words <= 4 && !request.contains(['/', '.', '`', '_']))
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

/// Whether an assistant sentence says what it is changing, not only that it agrees or
/// understands ("You're absolutely right.", "Now I understand the full picture.").
pub(super) fn is_note(sentence: &str) -> bool {
    let lower = sentence.to_lowercase().replace('’', "'");
    let acknowledgement = [
        "you're right",
        "you're absolutely right",
        "you are right",
        "now i understand",
        "i understand",
        "perfect",
        "great",
        "got it",
    ]
    .iter()
    .any(|a| lower.starts_with(a));
    // "Now let me create the file:" announces a step without saying what it changes.
    let announcement = [
        "now let me",
        "let me",
        "now i'll",
        "i'll now",
        "i'll",
        "now i will",
    ]
    .iter()
    .any(|a| lower.starts_with(a))
        && !sentence.contains('`')
        && sentence.split_whitespace().count() < 8;
    sentence.split_whitespace().count() >= 5 && !acknowledgement && !announcement
}

/// The message of a `git commit -m "…"` (the first `-m`), whitespace collapsed.
pub(super) fn commit_message(command: &str) -> Option<String> {
    let at = command.find("git commit")?;
    let rest = &command[at..];
    let m = rest.find(" -m ").or_else(|| rest.find(" -am "))?;
    let rest = rest[m..].trim_start_matches([' ', '-', 'a', 'm']);
    let quote = rest.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let body = &rest[1..];
    let end = body.find(quote).unwrap_or(body.len());
    let message = collapse_ws(&body[..end]);
    (!message.is_empty()).then_some(message)
}

/// A message of labelled statements only ("SAFETY RULE: …"): what it says is pinned and
/// stated as such, it asks for nothing.
fn only_labelled(message: &str) -> bool {
    let mut lines = message.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some() && lines.all(is_labelled)
}

#[cfg(test)]
mod tests;
