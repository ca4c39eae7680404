//! `/v1/compact` and `compactd compact`: preparation, summarizer calls (concurrent for
//! a split turn, chunked when the summarizer's window is small), and the
//! CompactionResult with a ready-to-append `compaction` entry.
//!
//! Checked compaction (unless `pin` is off): the plan carries this round's
//! pinned ledger (the previous compaction's `details.pinned` updated with the messages
//! summarized and the modified files); the final summary is verified against it
//! (`checked`), the answer reports `retention`, and the ledger goes into the entry's
//! `details.pinned` so it travels to the next round.
//!
//! Divergence D6 from pi: a split turn with nothing before it to summarize keeps the
//! previous summary as its history part (verbatim, without its file lists and restored
//! section, which the new summary restates) instead of "No prior history.", which would
//! lose it; chunked folding likewise starts from the previous summary.

use serde::Serialize;

use crate::compaction::ledger::{
    estimate_tokens, render_section, strip_section, Ledger, Retention,
};
use crate::compaction::message::for_compaction;
use crate::config::Checking;
use crate::pipeline::core_schemas::{FileListsSchema, RetentionSchema};

use crate::compaction::file_ops::{format_file_lists, FileLists};
use crate::compaction::prepare::{prepare_compaction, Preparation};
use crate::compaction::{serialize_conversation, NotCompactable, Settings};
use crate::session::{fresh_id, iso_timestamp, CompactionEntry, Entry, InputError, Violation};
use crate::summarize::{
    MoaReport, Mode, Prepared, ProgressEvent, ProgressSink, PromptOptions, Prompts, RequestKind,
    Scoped, Strategy, Summarize, SummarizeError, SummarizerKind, Summary, SummaryRequest, Usage,
};

use super::checked::{progress, record, verify, without_secrets};
use super::chunks::{tokens_of, Cost};
use super::input::SessionInput;
use super::numbers::JsNumber;
use super::options::{CompactOptions, CompactReason};
use super::prepare::{prepare_response, PrepareResponse};
use super::sources::{ledger_of, previous_ledger, sources_of};
use super::Planned;

mod history;
mod target;
use history::{planned_chunks, summarize_history};
pub use target::Target;

/// What joins the history summary and the turn-prefix summary (pi's wording).
pub(super) const SPLIT_TURN_HEADING: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";

/// Everything the summarizer stage needs, owned (preparation runs on a blocking
/// thread; the model calls run on the async runtime).
#[derive(Debug, Clone)]
pub struct CompactPlan {
    pub settings: Settings,
    /// The request's `targetTokens`, when it set one: the summary then fills what the kept
    /// messages leave of it.
    pub target: Option<Target>,
    pub first_kept_entry_id: String,
    pub tokens_before: f64,
    pub is_split_turn: bool,
    pub previous_summary: Option<String>,
    /// Serialized history, one text per message (empty ones left out), oldest first.
    pub history_parts: Vec<String>,
    /// Messages summarized as history (some may serialize to nothing).
    pub history_messages: usize,
    /// Serialized prefix of a split turn (None: no prefix to summarize).
    pub turn_prefix: Option<String>,
    pub details: FileLists,
    /// This round's pinned ledger; with `pin` off, the previous one as it was.
    pub ledger: Ledger,
    /// Pinning, its budget share, and the saving `madeProgress` needs; `pin` is the
    /// request's, else the setting's.
    pub checking: Checking,
    /// Estimated tokens of the messages kept verbatim.
    pub kept_tokens: u64,
    /// The entry the compaction entry is appended to.
    pub leaf_id: Option<String>,
    pub custom_instructions: Option<String>,
    pub prompt_override: Option<String>,
    pub additional_context: Vec<String>,
    pub short_summary: bool,
    pub preserve_data: Option<serde_json::Value>,
    pub model: Option<String>,
    /// The request's strategy (`None`: the configured default).
    pub strategy: Option<Strategy>,
    pub reason: Option<CompactReason>,
    /// Ids already in the session, so the new entry's id is fresh.
    pub taken_ids: std::collections::HashSet<String>,
}

/// The session has nothing to compact (409).
#[derive(Debug, Clone, PartialEq)]
pub struct NothingToCompact {
    pub reason: NotCompactable,
    pub tokens_before: f64,
}

/// Why a compaction has no plan.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Not a valid session, or an unknown `leafId` (422).
    #[error(transparent)]
    Input(#[from] InputError),
    /// The session has nothing to compact (409).
    #[error("nothing to compact")]
    NothingToCompact(NothingToCompact),
}

/// Decides a compaction request: a dry run answers as `/v1/prepare` (no model is called),
/// else the plan ([`plan_compaction`]). `dry_run` is the request's `dryRun` (the command
/// line's flag, which a JSON file's `dryRun` does not override).
pub fn plan<'a>(
    input: &'a SessionInput<'a, CompactOptions>,
    dry_run: bool,
    prompts: &Prompts,
    defaults: Settings,
    checking: Checking,
) -> Result<Planned<PrepareResponse<'a>, Box<CompactPlan>>, PlanError> {
    if dry_run {
        let answer = prepare_response(input, prompts, defaults, None)?;
        return Ok(Planned::DryRun(answer));
    }
    let plan = plan_compaction(input, prompts, defaults, checking)?;
    Ok(Planned::Run(Box::new(plan)))
}

/// Prepares a compaction and keeps what the summarizer stage needs (`checking`: the
/// configured defaults; the request's `pin` wins).
pub fn plan_compaction(
    input: &SessionInput<CompactOptions>,
    prompts: &Prompts,
    defaults: Settings,
    checking: Checking,
) -> Result<CompactPlan, PlanError> {
    let o = &input.options;
    let session = &input.session;
    let positions = input.path(o.prepare.leaf_id.as_deref())?;
    let path: Vec<&Entry> = positions.iter().map(|&i| &session.entries[i]).collect();
    let checking = Checking {
        pin: o.pin.unwrap_or(checking.pin),
        ..checking
    };
    let settings = o.prepare.settings(defaults);
    let nothing = |(reason, tokens_before)| {
        PlanError::NothingToCompact(NothingToCompact {
            reason,
            tokens_before,
        })
    };
    let (prep, target) = match o.target_tokens {
        // Nothing fits in no tokens: the newest message is always kept.
        Some(0) => {
            return Err(PlanError::Input(InputError::invalid(Violation {
                pointer: "/targetTokens".into(),
                message: "targetTokens must be at least 1: the tokens the compacted context \
                          (summary and kept messages) may take"
                    .into(),
                line: None,
            })))
        }
        Some(t) => {
            let price = |p: &Preparation<'_, '_>| {
                let ledger = plan_ledger(p, checking.pin);
                let all: Vec<_> = ledger.active().collect();
                if all.is_empty() {
                    0
                } else {
                    estimate_tokens(&render_section(&all)) as u64
                }
            };
            let (prep, target) = target::fit(&path, t, settings, price).map_err(nothing)?;
            (prep, Some(target))
        }
        None => (prepare_compaction(&path, settings).map_err(nothing)?, None),
    };
    let w = &prompts.wrappers;
    // Under a target a split turn's prefix is summarized with the history: one summary
    // spends the budget better than two and the split-turn heading (see `target`).
    let merged = target.is_some() && prep.cut.is_split_turn;
    let merged_prefix = prep.turn_prefix_messages().filter(|_| merged);
    let history_parts = prep
        .history_messages()
        .chain(merged_prefix)
        .map(|m| serialize_conversation([m], w))
        .filter(|t| !t.is_empty())
        .collect();
    let turn_prefix =
        (!merged && prep.cut.is_split_turn && prep.turn_prefix_messages().next().is_some())
            .then(|| serialize_conversation(prep.turn_prefix_messages(), w));
    let history_messages = prep.history_messages().count()
        + if merged {
            prep.turn_prefix_messages().count()
        } else {
            0
        };
    let details = prep.file_ops.lists();
    let ledger = plan_ledger(&prep, checking.pin);
    let kept_tokens = target::kept_tokens(&prep);
    let settings = match target {
        // The summary's whole share; the summarizer stage divides it (see `target`).
        Some(t) => Settings {
            reserve_tokens: target::reserve_for(t.tokens.saturating_sub(kept_tokens)),
            ..prep.settings
        },
        None => settings,
    };
    Ok(CompactPlan {
        settings,
        target,
        first_kept_entry_id: prep.first_kept().id().unwrap_or_default().to_string(),
        tokens_before: prep.tokens_before,
        is_split_turn: prep.cut.is_split_turn,
        previous_summary: prep.previous_summary.map(|s| s.decode().into_owned()),
        history_parts,
        history_messages,
        turn_prefix,
        details,
        ledger,
        checking,
        kept_tokens,
        leaf_id: path.last().and_then(|e| e.id()).map(str::to_string),
        custom_instructions: o.prepare.custom_instructions.clone(),
        prompt_override: o.prepare.prompt_override.clone(),
        additional_context: o.prepare.additional_context.clone(),
        short_summary: o.short_summary.unwrap_or(false),
        preserve_data: o.preserve_data.clone(),
        model: o.model.clone(),
        strategy: o.strategy,
        reason: o.reason,
        taken_ids: session.owned_ids(),
    })
}

/// This round's pinned ledger: the previous compaction's, carried through what `prep`
/// summarizes and the modified files; with pinning off, the previous one as it was.
fn plan_ledger(prep: &Preparation<'_, '_>, pin: bool) -> Ledger {
    let previous = prep
        .previous_compaction
        .map(|i| previous_ledger(prep.path[i]))
        .unwrap_or_default();
    if !pin {
        return previous;
    }
    let details = prep.file_ops.lists();
    let summarized = prep
        .summarized_entries()
        .filter_map(|e| for_compaction(e).map(|m| (m, e)));
    ledger_of(previous, &sources_of(summarized), &details.modified_files)
}

/// The answer of `/v1/compact`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: JsNumber,
    pub details: CompactionDetails,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_summary: Option<String>,
    /// Summed over every summarizer call.
    pub usage: Usage,
    pub model: String,
    /// `extractive` when any call was answered by the extractive summarizer.
    pub summarizer: SummarizerKind,
    /// The models that took part when Mixture-of-Agents wrote the summary (the last
    /// call's; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moa: Option<MoaReport>,
    pub is_split_turn: bool,
    /// Estimated context after compaction: the summary plus the kept messages.
    pub tokens_after: u64,
    /// `tokensAfter <= tokensBefore × (1 − minProgress)` (and below `tokensBefore`):
    /// a real saving (COMPACTD_MIN_PROGRESS [0.05]); compacting again would not help
    /// otherwise.
    pub made_progress: bool,
    /// Why `madeProgress` is false (absent when it is true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_reason: Option<String>,
    /// What the summary kept of the pinned ledger: items pinned (active), present in the
    /// summary by itself, re-inserted verbatim under the closing "Pinned" section, and
    /// the ids left out by its budget. Absent when pinning is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<RetentionSchema>)]
    pub retention: Option<Retention>,
    /// Summarizer calls made (more than one when the history was summarized in chunks).
    pub calls: u32,
    /// History passes (1 unless the summarizer's window forced chunking).
    pub chunks: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub preserve_data: Option<serde_json::Value>,
    /// What the caller should know about how the summary was written: a model server
    /// that reported far fewer prompt tokens than were sent (it cut the prompt). Absent
    /// when there is nothing to say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Ready to append to the session file.
    #[schema(value_type = Object)]
    pub entry: serde_json::Value,
}

/// `details` of a compaction: the cumulative file lists, and the pinned ledger.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionDetails {
    #[serde(flatten)]
    #[schema(value_type = FileListsSchema)]
    pub files: FileLists,
    /// The pinned ledger (`{"version": 1, "items": [...]}`), read back by the next
    /// compaction. Absent when pinning is off and no earlier compaction had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub pinned: Option<serde_json::Value>,
}

/// Tallies the calls of one compaction.
#[derive(Default)]
struct Tally {
    cost: Cost,
    extractive: bool,
    model: Option<String>,
    moa: Option<MoaReport>,
    warnings: Vec<String>,
}

impl Tally {
    fn add(&mut self, s: &Summary) {
        for w in &s.warnings {
            if !self.warnings.contains(w) {
                self.warnings.push(w.clone());
            }
        }
        self.cost.add(s);
        self.extractive |= s.summarizer == SummarizerKind::Extractive;
        self.model = Some(s.model.clone());
        self.moa = s.moa.clone();
    }
}

/// Runs the summarizer calls of a plan and builds the result, reporting its progress to
/// `sink`: `prepared` first, then the summarizer's events, each stamped with the part it
/// answers.
pub async fn run_compaction(
    plan: CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    now: time::OffsetDateTime,
    sink: &dyn ProgressSink,
) -> Result<CompactionResult, SummarizeError> {
    let mut plan = plan;
    let mut prefix_reserve = plan.settings.reserve_tokens;
    if let Some(t) = plan.target {
        let extractive = summarizer
            .context_window(plan.model.as_deref(), plan.strategy)
            .is_none();
        let (history, prefix) = target::reserves(&plan, t, extractive);
        plan.settings.reserve_tokens = history;
        prefix_reserve = prefix;
    }
    let model = plan.model.as_deref();
    let opts = PromptOptions {
        custom_instructions: plan.custom_instructions.as_deref(),
        prompt_override: plan.prompt_override.as_deref(),
        additional_context: &plan.additional_context,
    };
    let reserve = plan.settings.reserve_tokens;
    let carried = plan.history_messages == 0 && plan.turn_prefix.is_some();
    let mut parts = Vec::new();
    if !carried {
        parts.push("history");
    }
    if plan.turn_prefix.is_some() {
        parts.push("turnPrefix");
    }
    if plan.short_summary {
        parts.push("short");
    }
    sink.emit(ProgressEvent::Prepared(Prepared {
        operation: "compact",
        first_kept_entry_id: Some(plan.first_kept_entry_id.clone()),
        tokens_before: Some(plan.tokens_before),
        is_split_turn: Some(plan.is_split_turn),
        messages: Some(plan.history_messages),
        parts,
        chunks: if carried {
            0
        } else {
            planned_chunks(&plan, prompts, summarizer, &opts)
        },
    }));
    let mut tally = Tally::default();
    let chunks;

    let pin = plan.checking.pin.then_some(&plan.ledger);
    let history = async {
        if carried {
            // D6: the previous summary is the history; pi writes "No prior history.".
            let text = plan
                .previous_summary
                .as_deref()
                .map(carried_summary)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| String::from("No prior history."));
            return Ok((text, Tally::default(), 0));
        }
        let mut t = Tally::default();
        let (text, n) =
            summarize_history(&plan, prompts, summarizer, &opts, pin, &mut t, sink).await?;
        Ok::<_, SummarizeError>((text, t, n))
    };
    let summary = match &plan.turn_prefix {
        Some(prefix) => {
            let req = prompts
                .turn_prefix_request(prefix, prefix_reserve)
                .for_model(model, plan.strategy);
            let scoped = Scoped::new(sink, "turnPrefix", None);
            let prefix_call = summarizer.summarize(&req, Mode::WithFallback, &scoped);
            // pi generates both concurrently.
            let (h, p) = tokio::join!(history, prefix_call);
            let (history_text, t, n) = h?;
            let p = p?;
            merge_tally(&mut tally, t);
            tally.add(&p);
            chunks = n;
            format!("{history_text}{SPLIT_TURN_HEADING}{}", p.text)
        }
        None => {
            let (text, t, n) = history.await?;
            merge_tally(&mut tally, t);
            chunks = n;
            text
        }
    };
    let summary = without_secrets(summary + &format_file_lists(&plan.details));
    // The final text is verified; the restored section may take a share of what the
    // history summary was allowed to write, or, with a target, what is left of it.
    let (summary, retention) = match pin {
        Some(ledger) => {
            let (budget, share) = match plan.target {
                Some(t) => (
                    t.tokens
                        .saturating_sub(plan.kept_tokens)
                        .saturating_sub(tokens_of(&summary)),
                    1.0,
                ),
                None => (
                    prompts.history_request("", None, reserve, &opts).max_tokens,
                    plan.checking.pin_budget_share,
                ),
            };
            let v = verify(&summary, ledger, budget, share);
            record(&v.retention);
            (v.summary, Some(v.retention))
        }
        None => (summary, None),
    };

    let short_summary = if plan.short_summary {
        let req = SummaryRequest {
            kind: RequestKind::Short,
            system_prompt: prompts.system.clone(),
            prompt: format!(
                "<summary>\n{summary}\n</summary>\n\n{}",
                prompts.short_summary
            ),
            max_tokens: 512,
            strategy: plan.strategy,
            model: plan.model.clone(),
        };
        let scoped = Scoped::new(sink, "short", None);
        let s = summarizer
            .summarize(&req, Mode::WithFallback, &scoped)
            .await?;
        tally.add(&s);
        Some(without_secrets(s.text))
    } else {
        None
    };

    // The context after compaction: pi's compaction summary message plus the kept ones.
    let tokens_after = tokens_of(&summary) + plan.kept_tokens;
    let (made_progress, progress_reason) =
        progress(plan.tokens_before, tokens_after, plan.checking.min_progress);
    let details = CompactionDetails {
        files: plan.details.clone(),
        pinned: (plan.checking.pin || !plan.ledger.is_empty()).then(|| plan.ledger.to_value()),
    };
    let entry = compaction_entry(&plan, &summary, &details, now);
    Ok(CompactionResult {
        first_kept_entry_id: plan.first_kept_entry_id.clone(),
        tokens_before: JsNumber(plan.tokens_before),
        details,
        short_summary,
        usage: tally.cost.usage,
        model: tally.model.unwrap_or_else(|| "extractive".into()),
        moa: tally.moa,
        summarizer: if tally.extractive {
            SummarizerKind::Extractive
        } else {
            SummarizerKind::Llm
        },
        is_split_turn: plan.is_split_turn,
        tokens_after,
        made_progress,
        progress_reason,
        retention,
        calls: tally.cost.calls,
        chunks,
        warnings: tally.warnings,
        preserve_data: plan.preserve_data.clone(),
        entry,
        summary,
    })
}

fn merge_tally(into: &mut Tally, from: Tally) {
    into.cost.merge(&from.cost);
    into.extractive |= from.extractive;
    for w in from.warnings {
        if !into.warnings.contains(&w) {
            into.warnings.push(w);
        }
    }
    if from.model.is_some() {
        into.model = from.model;
        into.moa = from.moa;
    }
}

/// A previous summary carried as the history part of a split turn (D6): without its
/// file lists (the new summary restates them, cumulative) and its restored section (the
/// new summary is verified again).
fn carried_summary(previous: &str) -> String {
    let mut text = strip_section(previous).trim_end().to_string();
    for tag in ["modified-files", "read-files"] {
        let close = format!("</{tag}>");
        if text.ends_with(&close) {
            if let Some(start) = text.rfind(&format!("<{tag}>")) {
                text.truncate(start);
                text.truncate(text.trim_end().len());
            }
        }
    }
    text
}

/// A `compaction` entry as pi writes it, with a fresh id, ready to append.
fn compaction_entry(
    plan: &CompactPlan,
    summary: &str,
    details: &CompactionDetails,
    now: time::OffsetDateTime,
) -> serde_json::Value {
    let entry = CompactionEntry {
        id: fresh_id(&plan.taken_ids, &mut fastrand::Rng::new()),
        parent_id: plan.leaf_id.clone(),
        timestamp: iso_timestamp(now),
        summary: summary.to_string(),
        first_kept_entry_id: plan.first_kept_entry_id.clone(),
        tokens_before: plan.tokens_before,
        details,
        preserve_data: plan.preserve_data.clone(),
    };
    // Strings, numbers and string-keyed maps: serializing into a value cannot fail.
    serde_json::to_value(entry).expect("a compaction entry serializes")
}
