//! Prompt templates (shipped in `prompts/`, overridable with `COMPACTD_PROMPTS_DIR`)
//! and the summarizer requests built from them.

use std::collections::BTreeMap;
use std::path::Path;

use compactd_hermes::texts::HermesTexts;

use serde::Serialize;

use compactd_core::compaction::template::Template;
use compactd_core::compaction::Wrappers;

use super::SummaryRequest;

/// The built-in templates, compiled into the binary so it runs from anywhere.
mod builtin {
    pub const SYSTEM: &str = include_str!("../../prompts/system.md");
    pub const INITIAL: &str = include_str!("../../prompts/initial.md");
    pub const UPDATE: &str = include_str!("../../prompts/update.md");
    pub const TURN_PREFIX: &str = include_str!("../../prompts/turn-prefix.md");
    pub const SHORT_SUMMARY: &str = include_str!("../../prompts/short-summary.md");
    pub const BRANCH: &str = include_str!("../../prompts/branch.md");
    pub const BRANCH_PREAMBLE: &str = include_str!("../../prompts/branch-preamble.md");
    pub const STANDING: &str = include_str!("../../prompts/standing.md");
    pub const WRAPPERS: &str = include_str!("../../prompts/wrappers.toml");
}

/// Every template compactd uses.
#[derive(Debug, Clone)]
pub struct Prompts {
    pub system: String,
    pub initial: String,
    pub update: String,
    pub turn_prefix: String,
    pub short_summary: String,
    pub branch: String,
    /// Ends with exactly one blank line, ready to prepend to a model's output.
    pub branch_preamble: String,
    /// What a model is told about the `<standing-statements>` block and its `Replaced:`
    /// trailer; appended to the instructions of a request that lists statements.
    pub standing: String,
    pub wrappers: Wrappers,
    /// The fixed texts of hermes compactions (`prompts/hermes/`, overridable in
    /// `COMPACTD_PROMPTS_DIR/hermes/`).
    pub hermes: HermesTexts,
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("cannot read prompt template {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid wrappers.toml: {0}")]
    Wrappers(String),
    /// A replacement of a hermes text that would lose what it carries (a slot it does
    /// not use, a prefix hermes would not recognise).
    #[error("invalid hermes texts in the prompts directory: {0}")]
    HermesTexts(String),
}

const WRAPPER_KEYS: [(&str, &[&str]); 8] = [
    ("bash_command", &["command"]),
    ("bash_output", &["output"]),
    ("bash_no_output", &[]),
    ("bash_cancelled", &[]),
    ("bash_exit_code", &["exitCode"]),
    ("bash_truncated", &["fullOutputPath"]),
    ("compaction_summary", &["summary"]),
    ("branch_summary", &["summary"]),
];

impl Prompts {
    /// The templates shipped with compactd.
    pub fn builtin() -> Self {
        Self::assemble(|_| Ok(None)).expect("built-in prompt templates are valid")
    }

    /// The shipped templates, with any file present in `dir` taking precedence.
    pub fn load(dir: Option<&Path>) -> Result<Self, PromptError> {
        let Some(dir) = dir else {
            return Ok(Self::builtin());
        };
        Self::assemble(|name| {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(s) => Ok(Some(s)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(source) => Err(PromptError::Read {
                    path: path.display().to_string(),
                    source,
                }),
            }
        })
    }

    fn assemble(
        read: impl Fn(&str) -> Result<Option<String>, PromptError>,
    ) -> Result<Self, PromptError> {
        let md = |name: &str, builtin: &str| -> Result<String, PromptError> {
            let text = read(name)?.unwrap_or_else(|| builtin.to_string());
            Ok(text.trim_end().to_string())
        };
        let mut hermes_files = Vec::new();
        for name in compactd_hermes::texts::FILES {
            if let Some(text) = read(&format!("hermes/{name}"))? {
                hermes_files.push((name, text));
            }
        }
        let hermes = HermesTexts::from_lookup(|name| {
            hermes_files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.clone())
        });
        let problems = hermes.problems();
        if !problems.is_empty() {
            return Err(PromptError::HermesTexts(problems.join("; ")));
        }
        let wrappers_src = read("wrappers.toml")?.unwrap_or_else(|| builtin::WRAPPERS.to_string());
        Ok(Prompts {
            system: md("system.md", builtin::SYSTEM)?,
            initial: md("initial.md", builtin::INITIAL)?,
            update: md("update.md", builtin::UPDATE)?,
            turn_prefix: md("turn-prefix.md", builtin::TURN_PREFIX)?,
            short_summary: md("short-summary.md", builtin::SHORT_SUMMARY)?,
            branch: md("branch.md", builtin::BRANCH)?,
            branch_preamble: format!(
                "{}\n\n",
                md("branch-preamble.md", builtin::BRANCH_PREAMBLE)?
            ),
            standing: md("standing.md", builtin::STANDING)?,
            wrappers: parse_wrappers(&wrappers_src)?,
            hermes,
        })
    }
}

fn parse_wrappers(src: &str) -> Result<Wrappers, PromptError> {
    let table: BTreeMap<String, String> =
        toml::from_str(src).map_err(|e| PromptError::Wrappers(e.to_string()))?;
    if let Some(unknown) = table
        .keys()
        .find(|k| !WRAPPER_KEYS.iter().any(|(name, _)| name == k))
    {
        return Err(PromptError::Wrappers(format!("unknown key `{unknown}`")));
    }
    let get = |key: &str| -> Result<Template, PromptError> {
        let (_, allowed) = WRAPPER_KEYS
            .iter()
            .find(|(k, _)| *k == key)
            .expect("known key");
        let src = table
            .get(key)
            .ok_or_else(|| PromptError::Wrappers(format!("missing key `{key}`")))?;
        let t = Template::parse(src);
        if let Some(bad) = t.vars().find(|v| !allowed.contains(v)) {
            return Err(PromptError::Wrappers(format!(
                "`{key}` uses the unknown placeholder {{{bad}}}"
            )));
        }
        Ok(t)
    };
    Ok(Wrappers {
        bash_command: get("bash_command")?,
        bash_output: get("bash_output")?,
        bash_no_output: get("bash_no_output")?,
        bash_cancelled: get("bash_cancelled")?,
        bash_exit_code: get("bash_exit_code")?,
        bash_truncated: get("bash_truncated")?,
        compaction_summary: get("compaction_summary")?,
        branch_summary: get("branch_summary")?,
    })
}

/// Which summary a request produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum RequestKind {
    /// The history before the cut (or before the split turn).
    History,
    /// The prefix of a split turn.
    TurnPrefix,
    /// A one-paragraph summary for a UI.
    Short,
    /// An abandoned branch.
    Branch,
    /// A hermes-agent handoff summary: one user message, no system prompt, no output
    /// cap (the model decides the length, so a thinking model is never cut short).
    Hermes,
}

impl RequestKind {
    /// For remoteEndpoint requests whose kind is unknown: infer it from the instructions
    /// (the text after the conversation and the blocks that follow it). Recognises our
    /// templates and pi's wording; anything else is a history summary.
    pub fn detect(prompt: &str) -> RequestKind {
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
                // oh-my-pi's short summary asks for one.
                "pull request description",
            ])
        {
            return RequestKind::Short;
        }
        RequestKind::History
    }
}

/// How every summarizer prompt with a conversation starts; the conversation follows.
pub const CONVERSATION_OPEN: &str = "<conversation>\n";

/// Caller-supplied changes to the instructions.
#[derive(Debug, Clone, Default)]
pub struct PromptOptions<'o> {
    /// Appended as "Additional focus: …".
    pub custom_instructions: Option<&'o str>,
    /// Replaces the base instruction template of the history summary.
    pub prompt_override: Option<&'o str>,
    /// Rendered as an `<additional-context>` list.
    pub additional_context: &'o [String],
    /// The user's standing statements in force, numbered (`Standing::block`): rendered
    /// as a `<standing-statements>` block, with the instructions about it after the rest.
    pub standing: Option<&'o str>,
}

/// `floor(0.8 × n)` for every `u64`: a client may send any `reserveTokens` up to
/// `u64::MAX`, and `n * 8` would overflow (a panic in debug builds, a wrapped budget in
/// release builds).
pub fn four_fifths(n: u64) -> u64 {
    n / 10 * 8 + n % 10 * 8 / 10
}

/// The output budget of a short summary (a few sentences for a UI).
pub const SHORT_MAX_TOKENS: u64 = 512;

impl Prompts {
    /// The request for a short summary of `summary`, within `max_tokens` (at most
    /// [`SHORT_MAX_TOKENS`]), for the default model and strategy.
    pub fn short_request(&self, summary: &str, max_tokens: u64) -> SummaryRequest {
        SummaryRequest {
            kind: RequestKind::Short,
            system_prompt: self.system.clone(),
            prompt: format!("<summary>\n{summary}\n</summary>\n\n{}", self.short_summary),
            max_tokens: max_tokens.min(SHORT_MAX_TOKENS),
            strategy: None,
            model: None,
            ledger: None,
        }
    }

    /// The history summary request: initial prompt, or update prompt when a previous
    /// summary is merged. Output budget `floor(0.8 × reserveTokens)`.
    pub fn history_request(
        &self,
        conversation: &str,
        previous_summary: Option<&str>,
        reserve_tokens: u64,
        opts: &PromptOptions,
    ) -> SummaryRequest {
        let base = match (opts.prompt_override, previous_summary) {
            (Some(o), _) => o,
            (None, Some(_)) => &self.update,
            (None, None) => &self.initial,
        };
        SummaryRequest {
            kind: RequestKind::History,
            system_prompt: self.system.clone(),
            prompt: self.compose(conversation, previous_summary, base, opts),
            max_tokens: four_fifths(reserve_tokens),
            strategy: None,
            model: None,
            ledger: None,
        }
    }

    /// What [`history_request`](Self::history_request)'s prompt holds after
    /// `<conversation>\n` and the conversation: a prompt in parts, for an answer that
    /// writes the conversation text once and the prompt from the same text.
    pub fn history_prompt_tail(
        &self,
        previous_summary: Option<&str>,
        opts: &PromptOptions,
    ) -> String {
        let base = match (opts.prompt_override, previous_summary) {
            (Some(o), _) => o,
            (None, Some(_)) => &self.update,
            (None, None) => &self.initial,
        };
        let mut p = String::with_capacity(base.len() + 256);
        self.compose_tail(&mut p, previous_summary, base, opts);
        p
    }

    /// What [`turn_prefix_request`](Self::turn_prefix_request)'s prompt holds after the
    /// conversation (see [`history_prompt_tail`](Self::history_prompt_tail)).
    pub fn turn_prefix_prompt_tail(&self) -> String {
        format!("\n</conversation>\n\n{}", self.turn_prefix)
    }

    /// The split-turn prefix request. Output budget `floor(0.5 × reserveTokens)`.
    pub fn turn_prefix_request(&self, conversation: &str, reserve_tokens: u64) -> SummaryRequest {
        SummaryRequest {
            kind: RequestKind::TurnPrefix,
            system_prompt: self.system.clone(),
            prompt: format!(
                "<conversation>\n{conversation}\n</conversation>\n\n{}",
                self.turn_prefix
            ),
            max_tokens: reserve_tokens / 2,
            strategy: None,
            model: None,
            ledger: None,
        }
    }

    /// The branch summary request: `customInstructions` add focus, or replace the
    /// template when `replace` is set. Output budget 2048 tokens, as pi.
    pub fn branch_request(
        &self,
        conversation: &str,
        custom: Option<&str>,
        replace: bool,
        standing: Option<&str>,
    ) -> SummaryRequest {
        let mut instructions = match custom.filter(|c| !c.is_empty()) {
            Some(c) if replace => c.to_string(),
            Some(c) => format!("{}\n\nAdditional focus: {c}", self.branch),
            None => self.branch.clone(),
        };
        let mut block = String::new();
        if let Some(list) = standing.filter(|s| !s.is_empty()) {
            block = format!("<standing-statements>\n{list}\n</standing-statements>\n\n");
            instructions.push_str("\n\n");
            instructions.push_str(&self.standing);
        }
        SummaryRequest {
            kind: RequestKind::Branch,
            system_prompt: self.system.clone(),
            prompt: format!(
                "<conversation>\n{conversation}\n</conversation>\n\n{block}{instructions}"
            ),
            max_tokens: 2048,
            strategy: None,
            model: None,
            ledger: None,
        }
    }

    fn compose(
        &self,
        conversation: &str,
        previous_summary: Option<&str>,
        base: &str,
        opts: &PromptOptions,
    ) -> String {
        // Sized for all of it: a large conversation must not be copied into a doubled buffer.
        let tail = previous_summary.map_or(0, str::len)
            + opts
                .additional_context
                .iter()
                .map(|c| c.len() + 3)
                .sum::<usize>()
            + opts.standing.map_or(0, |s| s.len() + self.standing.len())
            + opts.custom_instructions.map_or(0, str::len);
        let mut p = String::with_capacity(conversation.len() + base.len() + tail + 256);
        p.push_str(CONVERSATION_OPEN);
        p.push_str(conversation);
        self.compose_tail(&mut p, previous_summary, base, opts);
        p
    }

    /// The prompt after the conversation text: the close tag and the rest.
    fn compose_tail(
        &self,
        p: &mut String,
        previous_summary: Option<&str>,
        base: &str,
        opts: &PromptOptions,
    ) {
        p.push_str("\n</conversation>\n\n");
        if let Some(prev) = previous_summary {
            p.push_str("<previous-summary>\n");
            p.push_str(prev);
            p.push_str("\n</previous-summary>\n\n");
        }
        if !opts.additional_context.is_empty() {
            p.push_str("<additional-context>\n");
            for item in opts.additional_context {
                p.push_str("- ");
                p.push_str(item);
                p.push('\n');
            }
            p.push_str("</additional-context>\n\n");
        }
        let standing = opts.standing.filter(|s| !s.is_empty());
        if let Some(list) = standing {
            p.push_str("<standing-statements>\n");
            p.push_str(list);
            p.push_str("\n</standing-statements>\n\n");
        }
        p.push_str(base);
        if let Some(focus) = opts.custom_instructions.filter(|s| !s.is_empty()) {
            p.push_str("\n\nAdditional focus: ");
            p.push_str(focus);
        }
        if standing.is_some() {
            p.push_str("\n\n");
            p.push_str(&self.standing);
        }
    }
}

/// The blocks of a summarizer prompt, read back: the layout [`Prompts::history_request`]
/// and its siblings write, as any client of the remoteEndpoint writes it too.
pub(crate) struct PromptParts<'a> {
    /// The serialized conversation (the whole prompt when there is no block).
    pub(crate) conversation: &'a str,
    pub(crate) previous: Option<&'a str>,
    pub(crate) additional: Vec<String>,
    /// The numbered standing statements a compaction listed for the model.
    pub(crate) standing: Option<&'a str>,
    pub(crate) instructions: &'a str,
    pub(crate) has_conversation: bool,
}

/// A prompt without a `<conversation>` block is all conversation, with no instructions.
pub(crate) fn split_prompt(prompt: &str) -> PromptParts<'_> {
    let Some((conversation, mut rest)) = find_block(prompt, "conversation") else {
        return PromptParts {
            conversation: prompt,
            previous: None,
            additional: Vec::new(),
            standing: None,
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
    let mut standing = None;
    if let Some((inner, after)) = leading_block(rest, "standing-statements") {
        standing = Some(inner);
        rest = after;
    }
    PromptParts {
        conversation,
        previous,
        additional,
        standing,
        instructions: rest.trim(),
        has_conversation: true,
    }
}

/// `<tag>\n…\n</tag>` anywhere: its text and what follows. The closing tag is the last one
/// in `s`, so the block's own text may quote the tags.
pub(crate) fn find_block<'a>(s: &'a str, tag: &str) -> Option<(&'a str, &'a str)> {
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

#[cfg(test)]
pub(crate) mod tests;
