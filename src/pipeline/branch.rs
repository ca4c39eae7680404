//! `/v1/branch-summary` and `compactd branch-summary`: summarize the branch a session
//! leaves when it goes back to an earlier entry.
//!
//! Checked (unless `pin` is off): the selected messages give a pinned ledger
//! (carried on from the newest compaction among them), the summary is verified against
//! it and the answer reports `retention`, by the step `/v1/compact` ends with
//! (`checked::finish`). Unlike a compaction's, the entry does not carry the ledger: its
//! `details` are the file lists and compactd's mark.

use serde::Serialize;

use crate::config::Checking;
use crate::pipeline::core_schemas::{FileListsSchema, RetentionSchema};
use crate::summarize::progress::{Operation, PartName};
use crate::summarize::{
    MoaReport, Prepared, ProgressEvent, ProgressSink, Summarize, SummarizeError, SummarizerKind,
    SummaryRequest, Usage,
};
use compactd_core::compaction::branch::{collect_branch, prepare_branch};
use compactd_core::compaction::file_ops::FileLists;
use compactd_core::compaction::ledger::{
    split_trailer, Ledger, Retention, Standing, STANDING_TOKENS,
};
use compactd_core::compaction::serialize_conversation;
use compactd_core::session::{
    fresh_id, iso_timestamp, truncate_for_message, BranchSummaryEntry, InputError, Violation,
};

use super::checked::{finish, RestoreBudget};
use super::compact::EntryDetails;
use super::input::SessionInput;
use super::options::BranchSummaryOptions;
use super::sources::{ledger_of, previous_ledger, sources_of};
use super::Planned;
use crate::summarize::Prompts;

/// What the summarizer stage needs, owned.
#[derive(Debug, Clone)]
pub struct BranchPlan {
    pub old_leaf_id: String,
    pub target_id: String,
    pub common_ancestor_id: Option<String>,
    /// Collected entries, oldest first.
    pub entry_ids: Vec<String>,
    /// Messages that fit the budget (newest kept).
    pub selected: usize,
    pub conversation: String,
    pub details: FileLists,
    /// The pinned ledger of the selected messages; empty when `pin` is off.
    pub ledger: Ledger,
    /// Its standing statements in force, numbered for the model (see `CompactPlan`).
    pub standing: Standing,
    /// Pinning and its budget share; `pin` is the request's, else the setting's.
    pub checking: Checking,
    /// None when there is nothing to summarize; it names the request's model and
    /// strategy.
    pub request: Option<SummaryRequest>,
    pub taken_ids: std::collections::HashSet<String>,
}

/// Budget inputs: the summarizer's context window and the reserve for its answer.
#[derive(Debug, Clone, Copy)]
pub struct BranchBudget {
    pub context_window: u64,
    pub reserve_tokens: u64,
}

impl BranchBudget {
    /// The request's window and reserve, else the summarizer model's window, else the
    /// configured defaults.
    pub fn resolve(
        o: &BranchSummaryOptions,
        summarizer: &dyn Summarize,
        config: &crate::config::Config,
    ) -> Self {
        BranchBudget {
            context_window: o
                .context_window
                .or_else(|| summarizer.context_window(o.model.as_deref(), o.strategy))
                .unwrap_or(config.context_window),
            reserve_tokens: o.reserve_tokens.unwrap_or(config.branch_reserve_tokens),
        }
    }
}

fn required<'o>(
    value: &'o Option<String>,
    name: &str,
    input: &SessionInput<BranchSummaryOptions>,
) -> Result<&'o str, InputError> {
    value.as_deref().ok_or_else(|| {
        InputError::invalid(Violation {
            pointer: input.option_pointer(name),
            message: format!("`{name}` is required"),
            line: None,
        })
    })
}

/// Collects the branch left and selects what fits the budget (`checking`: the
/// configured defaults; the request's `pin` wins).
pub fn plan_branch_summary(
    input: &SessionInput<BranchSummaryOptions>,
    prompts: &Prompts,
    budget: BranchBudget,
    checking: Checking,
) -> Result<BranchPlan, InputError> {
    let o = &input.options;
    let old_leaf_id = required(&o.old_leaf_id, "oldLeafId", input)?;
    let target_id = required(&o.target_id, "targetId", input)?;
    let session = &input.session;
    let find = |id: &str, name: &str| {
        session.position(id).ok_or_else(|| {
            InputError::invalid(Violation {
                pointer: input.option_pointer(name),
                message: format!("no entry has the id {:?}", truncate_for_message(id)),
                line: None,
            })
        })
    };
    let old = find(old_leaf_id, "oldLeafId")?;
    let target = find(target_id, "targetId")?;
    let collected = collect_branch(session, old, target)?;
    // Both are u64 from the client: subtract without wrapping, then clamp into i64.
    let token_budget = (i128::from(budget.context_window) - i128::from(budget.reserve_tokens))
        .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    let selection = prepare_branch(&collected.entries, token_budget);
    let conversation = serialize_conversation(
        selection.messages.iter().map(|(m, _)| *m),
        &prompts.wrappers,
    );
    let details = selection.file_ops.lists();
    let checking = Checking {
        pin: o.pin.unwrap_or(checking.pin),
        ..checking
    };
    // Without pinning nothing reads the ledger: a branch summary's entry does not carry
    // one.
    let ledger = if !checking.pin {
        Ledger::default()
    } else {
        let previous = selection
            .messages
            .iter()
            .rev()
            .find(|(_, e)| e.compaction().is_some())
            .map(|(_, e)| previous_ledger(e))
            .unwrap_or_default();
        let sources = sources_of(selection.messages.iter().copied());
        ledger_of(previous, &sources, &details.modified_files)
    };
    let standing = Standing::of(&ledger, STANDING_TOKENS * 4);
    let request = (!selection.messages.is_empty()).then(|| {
        prompts.branch_request(
            &conversation,
            o.custom_instructions.as_deref(),
            o.replace_instructions.unwrap_or(false),
            (!standing.is_empty()).then(|| standing.block()),
        )
    });
    Ok(BranchPlan {
        old_leaf_id: old_leaf_id.to_string(),
        target_id: target_id.to_string(),
        common_ancestor_id: collected
            .common_ancestor
            .and_then(|c| session.entries[c].id())
            .map(str::to_string),
        entry_ids: collected
            .entries
            .iter()
            .filter_map(|e| e.id().map(str::to_string))
            .collect(),
        selected: selection.messages.len(),
        conversation,
        details,
        ledger,
        standing,
        checking,
        request: request.map(|r| r.for_model(o.model.as_deref(), o.strategy)),
        taken_ids: session.owned_ids(),
    })
}

/// Decides a branch-summary request: the plan, with the budget from the request, the
/// summarizer's window and `config`; a dry run answers what would be summarized.
/// `dry_run` is the request's `dryRun` (the command line's flag).
pub fn plan(
    input: &SessionInput<BranchSummaryOptions>,
    dry_run: bool,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    config: &crate::config::Config,
) -> Result<Planned<BranchDryRun, BranchPlan>, InputError> {
    let budget = BranchBudget::resolve(&input.options, summarizer, config);
    let plan = plan_branch_summary(input, prompts, budget, config.checking())?;
    Ok(if dry_run {
        Planned::DryRun(plan.dry_run())
    } else {
        Planned::Run(plan)
    })
}

/// `dryRun: true`: what would be summarized, and the request, without a model call.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchDryRun {
    pub dry_run: bool,
    pub from_id: String,
    pub common_ancestor_id: Option<String>,
    /// Collected entries, oldest first.
    pub entry_ids: Vec<String>,
    /// Serialized text of the selected messages.
    pub conversation: String,
    #[schema(value_type = FileListsSchema)]
    pub details: FileLists,
    /// Empty when there is nothing to summarize.
    pub requests: Vec<SummaryRequest>,
}

impl BranchPlan {
    pub fn dry_run(&self) -> BranchDryRun {
        BranchDryRun {
            dry_run: true,
            from_id: self.old_leaf_id.clone(),
            common_ancestor_id: self.common_ancestor_id.clone(),
            entry_ids: self.entry_ids.clone(),
            conversation: self.conversation.clone(),
            details: self.details.clone(),
            requests: self.request.iter().cloned().collect(),
        }
    }
}

/// The answer of `/v1/branch-summary`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryResult {
    pub summary: String,
    /// The leaf that was left.
    pub from_id: String,
    pub common_ancestor_id: Option<String>,
    /// Messages the summary was written from.
    pub entries_summarized: usize,
    pub details: EntryDetails,
    pub usage: Usage,
    /// Null when there was nothing to summarize (no call was made).
    pub model: Option<String>,
    pub summarizer: Option<SummarizerKind>,
    /// The models that took part in a Mixture-of-Agents summary (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moa: Option<MoaReport>,
    /// What the summary kept of the pinned ledger (see CompactionResult). Absent when
    /// pinning is off or nothing was summarized.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<RetentionSchema>)]
    pub retention: Option<Retention>,
    /// What the caller should know about how the summary was written: a model server
    /// that reported far fewer prompt tokens than were sent (it cut the prompt). Absent
    /// when there is nothing to say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// A `branch_summary` entry as pi writes it, child of the target, ready to append
    /// (with `usage`, as on a compaction entry, when a model answered).
    #[schema(value_type = Object)]
    pub entry: serde_json::Value,
}

/// The text when the branch holds no message (pi's wording).
pub const NO_CONTENT: &str = "No content to summarize";

/// Calls the summarizer (when there is something to summarize) and builds the entry,
/// reporting its progress to `sink`.
pub async fn run_branch_summary(
    plan: BranchPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    now: time::OffsetDateTime,
    sink: &dyn ProgressSink,
) -> Result<BranchSummaryResult, SummarizeError> {
    sink.emit(ProgressEvent::Prepared(Prepared {
        operation: Operation::BranchSummary,
        first_kept_entry_id: None,
        tokens_before: None,
        is_split_turn: None,
        messages: Some(plan.selected),
        parts: if plan.request.is_some() {
            vec![PartName::Branch]
        } else {
            Vec::new()
        },
        chunks: u32::from(plan.request.is_some()),
    }));
    let mut warnings = Vec::new();
    let (summary, usage, model, kind, retention, moa) = match &plan.request {
        None => (
            NO_CONTENT.to_string(),
            Usage::default(),
            None,
            None,
            None,
            None,
        ),
        Some(req) => {
            // Folded when the branch does not fit the model after all (a context
            // overflow: the real window is smaller than the one planned for).
            let s =
                super::fold::summarize_fitting(summarizer, prompts, req, sink, PartName::Branch)
                    .await?
                    .summary;
            // The statements the model named as replaced leave the summary.
            let answered = split_trailer(&s.text);
            let mut ledger = std::borrow::Cow::Borrowed(&plan.ledger);
            if !answered.named.is_empty() {
                plan.standing.withdraw_in(ledger.to_mut(), &answered.named);
            }
            let checked = finish(
                format!("{}{}", prompts.branch_preamble, answered.text),
                &plan.details,
                &ledger,
                &plan.checking,
                RestoreBudget::ShareOf(req.max_tokens),
            );
            let moa = s.moa;
            warnings = s.warnings;
            (
                checked.summary,
                s.usage,
                Some(s.model),
                Some(s.summarizer),
                checked.retention,
                moa,
            )
        }
    };
    let details = EntryDetails::new(plan.details, None);
    let entry = BranchSummaryEntry {
        id: fresh_id(&plan.taken_ids, &mut fastrand::Rng::new()),
        parent_id: plan.target_id.clone(),
        timestamp: iso_timestamp(now),
        from_id: plan.target_id.clone(),
        summary: summary.clone(),
        details: &details,
        usage: (kind == Some(SummarizerKind::Llm)).then(|| usage.entry_value()),
    };
    // Strings and string-keyed maps: serializing into a value cannot fail.
    let entry = serde_json::to_value(entry).expect("a branch_summary entry serializes");
    Ok(BranchSummaryResult {
        summary,
        from_id: plan.old_leaf_id,
        common_ancestor_id: plan.common_ancestor_id,
        entries_summarized: plan.selected,
        details,
        usage,
        model,
        summarizer: kind,
        moa,
        retention,
        warnings,
        entry,
    })
}
