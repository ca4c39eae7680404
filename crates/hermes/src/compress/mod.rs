//! The whole hermes compaction (contract §5 and §14): [`plan`] decides, without a model,
//! whether and what to summarize; [`Pending::finish`] turns the summarizer's answer (or
//! its failure) into the compacted list.
//!
//! Divergences handled here rather than in the rule modules: H2 (a head that covers
//! everything: prune-only relief), H6 (what hermes drops on re-compaction is
//! summarized), H7 (a handoff summary in the messages decays the head), H8 (an abort
//! returns the input), H9 (nothing new to summarize: no model call).

use serde_json::Value;

use super::answer;
use super::assemble::{self, Assembled};
use super::boundaries;
use super::fallback;
use super::message;
use super::prompt::{self, PromptInput};
use super::prune;
use super::py;
use super::serialize::serialize;
use super::settings::{HermesSettings, HermesState, Threshold};
use super::summaries;
use super::texts::HermesTexts;
use super::tokens::rough;
use super::Switches;

mod json;

/// One compaction request.
#[derive(Debug, Clone)]
pub struct Input {
    pub messages: Vec<Value>,
    pub context_length: u64,
    pub settings: HermesSettings,
    pub state: HermesState,
    pub focus_topic: Option<String>,
    pub memory_context: String,
    /// What the client measured (hermes's rough request estimate); `R(messages)` when absent.
    pub current_tokens: Option<u64>,
    /// `YYYY-MM-DD` for the temporal rule; `None` leaves the rule out.
    pub today: Option<String>,
}

/// Why a list comes back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    TooFewMessages,
    NothingToCompress,
    SummaryFailed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::TooFewMessages => "too-few-messages",
            Reason::NothingToCompress => "nothing-to-compress",
            Reason::SummaryFailed => "summary-failed",
        }
    }
}

/// Where the compaction cuts (the answer's `boundaries`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Boundaries {
    pub head_size: usize,
    pub compress_start: usize,
    pub compress_end: usize,
    pub previous_summary_index: Option<usize>,
    pub turns_start: usize,
    pub turns_count: usize,
    pub pruned_indexes: Vec<usize>,
}

/// What the decision needs to say whatever the outcome.
#[derive(Debug, Clone)]
struct Common {
    input: Vec<Value>,
    state: HermesState,
    threshold: Threshold,
    should_compress: bool,
    tokens_before: u64,
    boundaries: Option<Boundaries>,
}

/// The answer to a compaction request (§15 without `usage` and `model`, which the
/// pipeline adds).
#[derive(Debug, Clone)]
pub struct Outcome {
    common: Common,
    result: Result<Compacted, Unchanged>,
}

#[derive(Debug, Clone)]
struct Unchanged {
    reason: Reason,
    error: Option<String>,
    serialized: Option<String>,
    prompt: Option<String>,
    summary_budget: Option<u64>,
}

#[derive(Debug, Clone)]
struct Compacted {
    messages: Vec<Value>,
    summary: Option<String>,
    summary_index: Option<usize>,
    summary_role: Option<String>,
    summary_merged: bool,
    summarizer: &'static str,
    sources: Vec<Option<usize>>,
    tokens_after: u64,
    made_progress: bool,
    state: HermesState,
    fallback_used: bool,
    dropped: usize,
    error: Option<String>,
    prompt: Option<String>,
    summary_budget: Option<u64>,
}

/// The summarizer's side of the exchange.
#[derive(Debug, Clone)]
pub enum ModelAnswer {
    /// The model's text (`choices[0].message.content`) and the model that wrote it
    /// (named in the error text of a blank answer).
    Text { text: String, model: String },
    /// No answer. `abort`: an access, quota, connection or timeout failure (hermes keeps
    /// the session unchanged); otherwise the static fallback is used unless the
    /// settings say abort.
    Failed { abort: bool, error: String },
}

/// What to do with a request.
#[derive(Debug)]
pub enum Plan {
    /// Decided without a model: unchanged, or pruned only (H2).
    Done(Box<Outcome>),
    /// A summary is needed: call the summarizer with [`Pending::prompt`].
    Summarize(Box<Pending>),
}

/// A compaction waiting for its summary.
#[derive(Debug)]
pub struct Pending {
    common: Common,
    settings: HermesSettings,
    texts: HermesTexts,
    opts: Switches,
    /// The pruned list.
    messages: Vec<Value>,
    /// The messages serialized for the summarizer (H6 additions first, then the turns).
    turns: Vec<Value>,
    serialized: String,
    prompt: String,
    summary_budget: u64,
    previous_summary: Option<String>,
}

/// Decides what to do with `input` (no model call, no I/O).
pub fn plan(input: Input, texts: &HermesTexts, opts: &Switches) -> Plan {
    let Input {
        messages,
        context_length,
        settings,
        state,
        focus_topic,
        memory_context,
        current_tokens,
        today,
    } = input;
    let threshold = Threshold::derive(context_length, &settings);
    let tokens_before = rough(&messages);
    let mut common = Common {
        // hermes takes a count of 0 as "not measured", like an absent one.
        should_compress: threshold
            .should_compress(current_tokens.filter(|&t| t > 0).unwrap_or(tokens_before)),
        threshold,
        tokens_before,
        state,
        boundaries: None,
        input: messages,
    };
    let n = common.input.len();
    let msgs = &common.input;

    // H7: a handoff summary anywhere but a leading system message decays the head too.
    let summary_present = summaries::present(msgs, &texts.prefix);
    let first_n = boundaries::protect_first_n(&settings, &common.state, summary_present);
    let head_size = boundaries::head_size(msgs, first_n);
    if n <= head_size + 4 {
        return Plan::Done(Box::new(common.unchanged(Reason::TooFewMessages)));
    }

    let pruned = prune::prune(msgs, settings.protect_last_n, threshold.tail_token_budget);
    let pruned_msgs = pruned.messages;
    // hermes sizes the head again on the pruned list; with H7 that can differ when pruning
    // rewrote the only handoff summary (a tool result that quoted one).
    let head_size = boundaries::head_size(
        &pruned_msgs,
        boundaries::protect_first_n(
            &settings,
            &common.state,
            summaries::present(&pruned_msgs, &texts.prefix),
        ),
    );
    let start = boundaries::align_forward(&pruned_msgs, head_size);
    let end = boundaries::tail_cut(
        &pruned_msgs,
        start,
        settings.protect_last_n,
        threshold.tail_token_budget,
        &texts.prefix,
    );
    let mut b = Boundaries {
        head_size,
        compress_start: start,
        compress_end: end.min(n),
        previous_summary_index: None,
        turns_start: start,
        turns_count: 0,
        pruned_indexes: pruned.changed.clone(),
    };
    if start >= end || start >= n {
        // H2: the head covers everything. Pruning is then the only relief.
        let prune_only = start >= n && !pruned.changed.is_empty();
        common.boundaries = Some(b);
        return Plan::Done(Box::new(if prune_only {
            common.prune_only(pruned_msgs)
        } else {
            common.unchanged(Reason::NothingToCompress)
        }));
    }

    // §8: an earlier summary in the window (or the head) narrows the turns.
    let found = summaries::find_latest(&pruned_msgs, end, &texts.prefix);
    let mut previous_summary = common
        .state
        .previous_summary
        .clone()
        .filter(|s| !s.is_empty());
    let mut turns: Vec<Value> = Vec::new();
    match found {
        Some(p) => {
            let body = summaries::body_at(&pruned_msgs, p, &texts.prefix);
            if !body.is_empty() && previous_summary.is_none() {
                previous_summary = Some(body);
            }
            b.previous_summary_index = Some(p);
            // H6: what hermes leaves out (the messages between the window's start and
            // the summary, and the own text of a message the summary was merged into)
            // is summarized ahead of the new turns.
            if p >= start {
                turns.extend(pruned_msgs[start..p].iter().cloned());
                if let Some(own) = own_text(&pruned_msgs[p], &texts.prefix) {
                    turns.push(with_text(&pruned_msgs[p], own));
                }
            }
            b.turns_start = if p >= start && turns.is_empty() {
                p + 1
            } else {
                start
            };
            turns.extend(pruned_msgs[(p + 1).max(start)..end].iter().cloned());
        }
        None => {
            previous_summary = None;
            turns.extend(pruned_msgs[start..end].iter().cloned());
        }
    }
    b.turns_count = turns.len();
    common.boundaries = Some(b);
    if turns.is_empty() {
        // H9: only the earlier summary is in the window; nothing new to summarize.
        return Plan::Done(Box::new(common.unchanged(Reason::NothingToCompress)));
    }

    let serialized = serialize(&turns, opts);
    let summary_budget = prompt::summary_budget(&turns, threshold.max_summary_tokens);
    let focus = prompt::choose_focus(focus_topic.as_deref(), &pruned_msgs, texts, opts);
    let prompt = prompt::build(
        texts,
        &PromptInput {
            serialized: &serialized,
            previous_summary: previous_summary.as_deref(),
            budget: summary_budget,
            focus: focus.as_deref(),
            memory_context: &memory_context,
            today: today.as_deref(),
        },
    );
    Plan::Summarize(Box::new(Pending {
        common,
        settings,
        texts: texts.clone(),
        opts: *opts,
        messages: pruned_msgs,
        turns,
        serialized,
        prompt,
        summary_budget,
        previous_summary,
    }))
}

/// The message's own text when a summary was merged into it (H6): before the merge
/// delimiter without the PRIOR CONTEXT header (hermes's form), or after the end marker
/// (the H5 form). `None` for a standalone summary or an empty own text.
fn own_text(m: &Value, ours: &str) -> Option<String> {
    let text = message::text_view(message::content(m));
    let own = if let Some((before, _)) = text.split_once(summaries::MERGE_DELIMITER) {
        let before = py::strip(before);
        py::strip(
            before
                .strip_prefix(summaries::PRIOR_CONTEXT_HEADER)
                .unwrap_or(before),
        )
        .to_string()
    } else if summaries::is_handoff_summary(Some(&Value::String(text.clone())), ours) {
        match text.split_once(summaries::END_MARKER) {
            Some((_, after)) => py::strip(after).to_string(),
            None => String::new(),
        }
    } else {
        String::new()
    };
    (!own.is_empty()).then_some(own)
}

/// A copy of `m` whose content is `text`.
fn with_text(m: &Value, text: String) -> Value {
    let mut copy = m.clone();
    if let Some(o) = copy.as_object_mut() {
        o.insert("content".into(), Value::String(text));
    }
    copy
}

impl Pending {
    /// The one user message hermes sends the summarizer.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The serialized turns (the text C of §10).
    pub fn serialized(&self) -> &str {
        &self.serialized
    }

    /// hermes's rough token count of the messages before compaction.
    pub fn tokens_before(&self) -> u64 {
        self.common.tokens_before
    }

    /// How many messages go to the summarizer.
    pub fn turns(&self) -> usize {
        self.turns.len()
    }

    /// The answer of a dry run: everything decided, no summary.
    pub fn dry_run(self) -> Outcome {
        let mut o = self.common.unchanged(Reason::NothingToCompress);
        if let Err(u) = &mut o.result {
            u.serialized = Some(self.serialized);
            u.prompt = Some(self.prompt);
            u.summary_budget = Some(self.summary_budget);
        }
        o
    }

    /// Makes the compacted list from the summarizer's answer.
    pub fn finish(self, answer: ModelAnswer) -> Outcome {
        let Pending {
            mut common,
            settings,
            texts,
            opts,
            messages,
            turns,
            serialized: _,
            prompt,
            summary_budget,
            previous_summary,
        } = self;
        let outcome = match answer {
            ModelAnswer::Text { text, model } => {
                let source = answer::Source {
                    provider: None,
                    model: &model,
                };
                answer::finish(&text, source, &turns, &texts, &opts).map_err(|e| (false, e))
            }
            ModelAnswer::Failed { abort, error } => Err((abort, error)),
        };
        let b = common.boundaries.clone().unwrap_or_default();
        let mut state = HermesState {
            compression_count: common.state.compression_count + 1,
            previous_summary: previous_summary.clone(),
        };
        let (summary, summarizer, fallback_used, error) = match outcome {
            Ok(done) => {
                state.previous_summary = Some(done.body);
                (done.summary, "llm", false, None)
            }
            Err((abort, error)) => {
                let error = fallback::error_text(&error);
                if abort || settings.abort_on_summary_failure {
                    let mut o = common.unchanged(Reason::SummaryFailed);
                    if let Err(u) = &mut o.result {
                        u.error = Some(error);
                        u.prompt = Some(prompt);
                        u.summary_budget = Some(summary_budget);
                    }
                    return o;
                }
                let summary = fallback::build(
                    &turns,
                    previous_summary.as_deref(),
                    Some(&error),
                    &texts,
                    &opts,
                );
                (summary, "fallback", true, Some(error))
            }
        };
        let Assembled {
            messages: out,
            sources,
            summary_index,
            summary_role,
            merged,
        } = assemble::assemble(
            &messages,
            b.compress_start,
            b.compress_end,
            &summary,
            &texts,
            &opts,
        );
        let tokens_after = rough(&out);
        let made_progress = made_progress(
            common.input.len(),
            out.len(),
            common.tokens_before,
            tokens_after,
        );
        let dropped = if fallback_used {
            b.compress_end - b.compress_start
        } else {
            0
        };
        common.state = state.clone();
        Outcome {
            result: Ok(Compacted {
                messages: out,
                summary: Some(summary),
                summary_index: Some(summary_index),
                summary_role: Some(summary_role.to_string()),
                summary_merged: merged,
                summarizer,
                sources,
                tokens_after,
                made_progress,
                state,
                fallback_used,
                dropped,
                error,
                prompt: Some(prompt),
                summary_budget: Some(summary_budget),
            }),
            common,
        }
    }
}

/// The 5 % rule: fewer messages, or R fell below 95 % of what it was.
fn made_progress(n_before: usize, n_after: usize, before: u64, after: u64) -> bool {
    n_after < n_before || (before > 0 && (after as f64) < 0.95 * before as f64)
}

impl Common {
    fn unchanged(self, reason: Reason) -> Outcome {
        Outcome {
            common: self,
            result: Err(Unchanged {
                reason,
                error: None,
                serialized: None,
                prompt: None,
                summary_budget: None,
            }),
        }
    }

    /// H2: the pruned list, persistence markers stripped, no summary.
    fn prune_only(self, mut pruned: Vec<Value>) -> Outcome {
        for m in &mut pruned {
            if let Some(o) = m.as_object_mut() {
                o.shift_remove("_db_persisted");
            }
        }
        let tokens_after = rough(&pruned);
        let n = pruned.len();
        Outcome {
            result: Ok(Compacted {
                sources: (0..n).map(Some).collect(),
                made_progress: made_progress(n, n, self.tokens_before, tokens_after),
                messages: pruned,
                summary: None,
                summary_index: None,
                summary_role: None,
                summary_merged: false,
                summarizer: "prune-only",
                tokens_after,
                state: self.state.clone(),
                fallback_used: false,
                dropped: 0,
                error: None,
                prompt: None,
                summary_budget: None,
            }),
            common: self,
        }
    }
}

impl Outcome {
    /// Whether the list was compacted.
    pub fn compressed(&self) -> bool {
        self.result.is_ok()
    }

    /// Why not, when it was not.
    pub fn reason(&self) -> Option<Reason> {
        self.result.as_ref().err().map(|u| u.reason)
    }

    /// `llm`, `fallback` or `prune-only` when compacted.
    pub fn summarizer(&self) -> Option<&'static str> {
        self.result.as_ref().ok().map(|c| c.summarizer)
    }
}
