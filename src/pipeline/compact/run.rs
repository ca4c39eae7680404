//! The summarizer stage of a compaction, in three steps: **summarize** (announce the
//! parts, then the history and a split turn's prefix, concurrently), **check** (the text
//! with its file lists verified against the pinned ledger by `checked::finish`, the step a
//! branch summary ends with too) and **build** (`madeProgress`, the entry and the answer).
//! The short summary for a UI is written between the last two, from the checked text.

use serde::Serialize;

use crate::pipeline::core_schemas::{FileListsSchema, RetentionSchema};
use crate::summarize::progress::{Operation, PartName};
use crate::summarize::templates::SHORT_MAX_TOKENS;
use crate::summarize::{
    MoaReport, Mode, Prepared, ProgressEvent, ProgressSink, Prompts, Scoped, Summarize,
    SummarizeError, SummarizerKind, Usage,
};
use compactd_core::compaction::file_ops::{FileLists, PRODUCER};
use compactd_core::compaction::ledger::{split_trailer, strip_section, Retention};
use compactd_core::session::{fresh_id, iso_timestamp, CompactionEntry};

use super::super::checked::{finish, progress, without_secrets, CheckedSummary, RestoreBudget};
use super::super::chunks::tokens_of;
use super::super::numbers::JsNumber;
use super::history::{planned_chunks, summarize_history};
use super::{target, CompactPlan, Tally, SPLIT_TURN_HEADING};

/// The answer of `/v1/compact`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: JsNumber,
    pub details: EntryDetails,
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
    /// An estimate of the context after compaction, in tokens: the summary and the kept
    /// messages, each counted as pi estimates a message (UTF-16 units / 4); the figure
    /// newer pi reports after compacting.
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
    /// Ready to append to the session file: pi's keys, with `shortSummary` when one was
    /// written and `usage` (pi's shape, costs 0) when a model answered.
    #[schema(value_type = Object)]
    pub entry: serde_json::Value,
}

/// `details` of a compaction or branch-summary entry: the cumulative file lists, the
/// pinned ledger (compactions only), and compactd's mark. The mark lets the next round carry
/// the lists on when pi stores the entry as an extension's (`fromHook: true`, D7).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryDetails {
    #[serde(flatten)]
    #[schema(value_type = FileListsSchema)]
    pub files: FileLists,
    /// The pinned ledger (`{"version": 1, "items": [...]}`), read back by the next
    /// compaction. Absent when pinning is off and no earlier compaction had one, and on
    /// branch summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub pinned: Option<serde_json::Value>,
    /// Always `"compactd"`: these details are compactd's, whoever appended the entry.
    #[schema(value_type = String, example = "compactd")]
    pub producer: &'static str,
}

impl EntryDetails {
    pub fn new(files: FileLists, pinned: Option<serde_json::Value>) -> Self {
        EntryDetails {
            files,
            pinned,
            producer: PRODUCER,
        }
    }
}

/// [`run_compaction`] for a client that names its own model (a provider-style route): a
/// name that is no configured candidate belongs to the client's configuration, so the
/// default candidates answer instead, as on the chat-completions facade.
pub async fn run_compaction_or_default(
    plan: CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    now: time::OffsetDateTime,
    sink: &dyn ProgressSink,
) -> Result<CompactionResult, SummarizeError> {
    let default_model = plan.options.model.is_some().then(|| {
        let mut p = plan.clone();
        p.options.model = None;
        p
    });
    match (
        run_compaction(plan, prompts, summarizer, now, sink).await,
        default_model,
    ) {
        (Err(SummarizeError::UnknownModel(_)), Some(p)) => {
            run_compaction(p, prompts, summarizer, now, sink).await
        }
        (other, _) => other,
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
    let prefix_reserve = divide_target(&mut plan, summarizer);
    let mut draft = summarize(&plan, prompts, summarizer, prefix_reserve, sink).await?;
    withdraw_named(&mut plan, &draft.named);
    let checked = check(&plan, prompts, std::mem::take(&mut draft.text));
    let short = short_summary(&plan, prompts, summarizer, &checked.summary, sink).await?;
    let short = short.map(|s| {
        draft.tally.add(&s);
        without_secrets(s.text)
    });
    Ok(build(plan, checked, short, draft, now))
}

/// Under a target, divides the summary's share between the history and a split turn's
/// prefix: the history's reserve goes into the plan's settings, the prefix's is returned
/// (without a target, both are the plan's `reserveTokens`).
fn divide_target(plan: &mut CompactPlan, summarizer: &dyn Summarize) -> u64 {
    let Some(t) = plan.target else {
        return plan.settings.reserve_tokens;
    };
    let extractive = summarizer
        .context_window(plan.model(), plan.strategy())
        .is_none();
    let (history, prefix) = target::reserves(plan, t, extractive);
    plan.settings.reserve_tokens = history;
    prefix
}

/// The standing statements the model named as replaced (numbers it invented name
/// nothing) leave the summary: withdrawn in the ledger it is checked against and in the
/// one `details` carries, with what judged them.
fn withdraw_named(plan: &mut CompactPlan, named: &[usize]) {
    plan.standing.withdraw_in(&mut plan.in_force, named);
    plan.standing
        .withdraw_in(std::sync::Arc::make_mut(&mut plan.ledger), named);
}

/// A split turn with no history before it: the previous summary is carried as the
/// history part (D6), and no history call is made.
fn carries_previous(plan: &CompactPlan) -> bool {
    plan.history_messages == 0 && plan.turn_prefix.is_some()
}

/// The summary before its check, and what the calls that wrote it cost.
struct Draft {
    text: String,
    tally: Tally,
    /// History passes.
    chunks: u32,
    /// The numbered standing statements the model named as replaced.
    named: Vec<usize>,
}

/// The summarize step: announces `prepared`, then writes the history summary and, for a
/// split turn, the turn-prefix summary concurrently, joined under pi's heading.
async fn summarize(
    plan: &CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    prefix_reserve: u64,
    sink: &dyn ProgressSink,
) -> Result<Draft, SummarizeError> {
    let opts = plan.prompt_options();
    let carried = carries_previous(plan);
    let mut parts = Vec::new();
    if !carried {
        parts.push(PartName::History);
    }
    if plan.turn_prefix.is_some() {
        parts.push(PartName::TurnPrefix);
    }
    if plan.short_summary() {
        parts.push(PartName::Short);
    }
    sink.emit(ProgressEvent::Prepared(Prepared {
        operation: Operation::Compact,
        first_kept_entry_id: Some(plan.first_kept_entry_id.clone()),
        tokens_before: Some(plan.tokens_before),
        is_split_turn: Some(plan.is_split_turn),
        messages: Some(plan.history_messages),
        parts,
        chunks: if carried {
            0
        } else {
            planned_chunks(plan, prompts, summarizer, &opts)
        },
    }));
    let history = async {
        if carried {
            // D6: the previous summary is the history; pi writes "No prior history.".
            let text = plan
                .previous_summary
                .as_deref()
                .map(carried_summary)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| String::from("No prior history."));
            return Ok((text, Tally::default(), 0, Vec::new()));
        }
        let mut t = Tally::default();
        let pin = plan.pinned();
        let h = summarize_history(plan, prompts, summarizer, &opts, pin, &mut t, sink).await?;
        Ok::<_, SummarizeError>((h.text, t, h.passes, h.named))
    };
    let Some(prefix) = &plan.turn_prefix else {
        let (text, tally, chunks, named) = history.await?;
        return Ok(Draft {
            text,
            tally,
            chunks,
            named,
        });
    };
    let req = prompts
        .turn_prefix_request(prefix, prefix_reserve)
        .for_model(plan.model(), plan.strategy());
    let scoped = Scoped::new(sink, PartName::TurnPrefix, None);
    let prefix_call = summarizer.summarize(&req, Mode::WithFallback, &scoped);
    // pi generates both concurrently.
    let (h, p) = tokio::join!(history, prefix_call);
    let (history_text, mut tally, chunks, named) = h?;
    let p = p?;
    tally.add(&p);
    Ok(Draft {
        // No statements were listed for the prefix; a trailer there names nothing.
        text: format!(
            "{history_text}{SPLIT_TURN_HEADING}{}",
            split_trailer(&p.text).text
        ),
        tally,
        chunks,
        named,
    })
}

/// The check step (`checked::finish`): the restored section may take a share of what the
/// history summary was allowed to write or, with a target, all that the summary leaves
/// of it.
fn check(plan: &CompactPlan, prompts: &Prompts, text: String) -> CheckedSummary {
    let budget = match plan.target {
        Some(t) => RestoreBudget::LeftOf(t.tokens.saturating_sub(plan.kept_tokens)),
        None => {
            let reserve = plan.settings.reserve_tokens;
            let opts = plan.prompt_options();
            RestoreBudget::ShareOf(prompts.history_request("", None, reserve, &opts).max_tokens)
        }
    };
    finish(text, &plan.details, &plan.in_force, &plan.checking, budget)
}

/// The one-paragraph summary for a UI, written from the checked summary when the request
/// asks for it.
async fn short_summary(
    plan: &CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    summary: &str,
    sink: &dyn ProgressSink,
) -> Result<Option<crate::summarize::Summary>, SummarizeError> {
    if !plan.short_summary() {
        return Ok(None);
    }
    let req = prompts
        .short_request(summary, SHORT_MAX_TOKENS)
        .for_model(plan.model(), plan.strategy());
    let scoped = Scoped::new(sink, PartName::Short, None);
    let s = summarizer
        .summarize(&req, Mode::WithFallback, &scoped)
        .await?;
    Ok(Some(s))
}

/// The build step: `madeProgress`, the entry and the answer (`draft`: what the calls
/// cost, its text already checked into `checked`).
fn build(
    plan: CompactPlan,
    checked: CheckedSummary,
    short_summary: Option<String>,
    draft: Draft,
    now: time::OffsetDateTime,
) -> CompactionResult {
    let CheckedSummary { summary, retention } = checked;
    let Draft { tally, chunks, .. } = draft;
    // The context after compaction: pi's compaction summary message plus the kept ones.
    let tokens_after = tokens_of(&summary) + plan.kept_tokens;
    let (made_progress, progress_reason) =
        progress(plan.tokens_before, tokens_after, plan.checking.min_progress);
    let details = EntryDetails::new(
        plan.details.clone(),
        (plan.checking.pin || !plan.ledger.is_empty()).then(|| plan.ledger.to_value()),
    );
    let usage = tally.model_usage.as_ref().map(Usage::entry_value);
    let entry = compaction_entry(
        &plan,
        (&summary, short_summary.as_deref()),
        &details,
        usage,
        now,
    );
    CompactionResult {
        first_kept_entry_id: plan.first_kept_entry_id,
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
        preserve_data: plan.options.preserve_data,
        entry,
        summary,
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

/// A `compaction` entry as pi writes it, with a fresh id, ready to append (`summaries`:
/// the summary and the short one, if any; `usage`: in the entry's shape).
fn compaction_entry(
    plan: &CompactPlan,
    (summary, short_summary): (&str, Option<&str>),
    details: &EntryDetails,
    usage: Option<serde_json::Value>,
    now: time::OffsetDateTime,
) -> serde_json::Value {
    let entry = CompactionEntry {
        id: fresh_id(&plan.taken_ids, &mut fastrand::Rng::new()),
        parent_id: plan.leaf_id.clone(),
        timestamp: iso_timestamp(now),
        summary: summary.to_string(),
        short_summary: short_summary.map(str::to_string),
        first_kept_entry_id: plan.first_kept_entry_id.clone(),
        tokens_before: plan.tokens_before,
        details,
        usage,
        preserve_data: plan.options.preserve_data.clone(),
    };
    // Strings, numbers and string-keyed maps: serializing into a value cannot fail.
    serde_json::to_value(entry).expect("a compaction entry serializes")
}
