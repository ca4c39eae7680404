//! `/v1/compact` and `compactd compact`: preparation, summarizer calls (concurrent for
//! a split turn, chunked when the summarizer's window is small), and the
//! CompactionResult with a ready-to-append `compaction` entry.
//!
//! This file makes the plan ([`plan`], [`plan_compaction`]); `run` carries it out in
//! three steps (summarize, check, build), `history` writes the history summary and
//! `target` fits a `targetTokens` budget. The plan owns the request's parsed options
//! instead of copies of their fields, so an option is read where it acts.
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

use std::sync::Arc;

use crate::config::Checking;
use crate::summarize::{
    MoaReport, PromptOptions, Prompts, Strategy, SummarizerKind, Summary, Usage,
};
use compactd_core::compaction::file_ops::FileLists;
use compactd_core::compaction::ledger::Speaker;
use compactd_core::compaction::ledger::{
    estimate_tokens, render_section, Ledger, Standing, STANDING_TOKENS,
};
use compactd_core::compaction::message::{for_compaction, AgentMessage};
use compactd_core::compaction::prepare::{boundary, prepare_compaction, Preparation};
use compactd_core::compaction::{serialize_conversation, NotCompactable, Settings};
use compactd_core::session::{truncate_for_message, Entry, InputError, Role, Violation};

use super::chunks::Cost;
use super::input::SessionInput;
use super::options::CompactOptions;
use super::prepare::{prepare_response, PrepareResponse};
use super::sources::{ledger_in, ledger_of, ledger_with_head, sources_in_two, sources_of, text_of};
use super::Planned;

mod history;
mod run;
mod target;
pub use run::{run_compaction, run_compaction_or_default, CompactionResult, EntryDetails};
pub use target::Target;

/// What joins the history summary and the turn-prefix summary (pi's wording).
pub(super) const SPLIT_TURN_HEADING: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";

/// Everything the summarizer stage needs, owned (preparation runs on a blocking
/// thread; the model calls run on the async runtime).
#[derive(Debug, Clone)]
pub struct CompactPlan {
    /// The request's options as parsed: the plan reads its model, strategy, prompt
    /// options, `shortSummary`, `preserveData` and `reason` from them.
    pub options: CompactOptions,
    /// The cut settings: the request's, else the defaults; under a target, `reserveTokens`
    /// is the summary's whole share.
    pub settings: Settings,
    /// The request's `targetTokens`, when it set one: the summary then fills what the kept
    /// messages leave of it.
    pub target: Option<Target>,
    /// Pinning, its budget share, and the saving `madeProgress` needs; `pin` is the
    /// request's, else the setting's.
    pub checking: Checking,
    /// This round's pinned ledger, as the entry's `details` carry it; with `pin` off, the
    /// previous one as it was.
    pub ledger: Arc<Ledger>,
    /// The same with what the kept messages withdraw marked withdrawn: what the summary is
    /// written and checked against (it must not state as current what the kept part
    /// replaced). The kept messages are summarized next round, and update the ledger then.
    pub in_force: Ledger,
    /// The user's standing statements in force, numbered for the model (empty with
    /// pinning off): listed in the history prompt, named back in its `Replaced:` trailer.
    pub standing: Standing,
    /// The ledger of exactly what the whole-history request summarizes, for the extractive
    /// summarizer (so a compaction extracts it once): `ledger` before `pinEntries`, when
    /// that request holds every summarized message (no separate turn prefix) and pinning
    /// built it (with pinning off, `ledger` is only the previous one).
    pub history_ledger: Option<Arc<Ledger>>,
    pub first_kept_entry_id: String,
    pub tokens_before: f64,
    pub is_split_turn: bool,
    /// Estimated tokens of the messages kept verbatim.
    pub kept_tokens: u64,
    pub previous_summary: Option<String>,
    /// Serialized history, one text per message (empty ones left out), oldest first.
    pub history_parts: Vec<String>,
    /// Messages summarized as history (some may serialize to nothing).
    pub history_messages: usize,
    /// Serialized prefix of a split turn (None: no prefix to summarize).
    pub turn_prefix: Option<String>,
    pub details: FileLists,
    /// The entry the compaction entry is appended to.
    pub leaf_id: Option<String>,
    /// Ids already in the session, so the new entry's id is fresh.
    pub taken_ids: std::collections::HashSet<String>,
}

impl CompactPlan {
    /// The request's model (`None`: the configured one).
    pub fn model(&self) -> Option<&str> {
        self.options.model.as_deref()
    }

    /// The request's strategy (`None`: the configured default).
    pub fn strategy(&self) -> Option<Strategy> {
        self.options.strategy
    }

    /// What the request adds to the history prompt.
    pub fn prompt_options(&self) -> PromptOptions<'_> {
        let o = &self.options.prepare;
        PromptOptions {
            custom_instructions: o.custom_instructions.as_deref(),
            prompt_override: o.prompt_override.as_deref(),
            additional_context: &o.additional_context,
            standing: (!self.standing.is_empty()).then(|| self.standing.block()),
        }
    }

    /// Whether a one-paragraph summary for a UI is written too.
    pub fn short_summary(&self) -> bool {
        self.options.short_summary.unwrap_or(false)
    }

    /// The ledger summaries are verified against; `None` with pinning off.
    pub fn pinned(&self) -> Option<&Ledger> {
        self.checking.pin.then_some(&self.in_force)
    }
}

/// The agent's system prompt as additional context for the summarizer: provider-style
/// requests carry it (`instructions`, `system`), and the client sends it again with every
/// request, so it informs the summary without being summarized.
pub fn system_prompt_context(system: &str) -> String {
    format!("The conversation's system prompt (sent with every request; do not summarize it):\n{system}")
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
                let ledger = plan_ledger(p, checking.pin, false).in_force;
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
    let PlannedLedgers {
        ledger,
        mut in_force,
        history,
    } = plan_ledger(&prep, checking.pin, turn_prefix.is_some());
    let mut ledger = Arc::new(ledger);
    // Without a separate turn prefix the history request holds everything summarized: its
    // ledger is this round's (shared until `pinEntries` adds to this one).
    let history_ledger = match history {
        Some(h) => Some(Arc::new(h)),
        None if checking.pin && turn_prefix.is_none() => Some(Arc::clone(&ledger)),
        None => None,
    };
    let pins = pinned_entries(&path, o.pin_entries.as_deref().unwrap_or_default(), input)?;
    if checking.pin {
        for (id, origin, text) in &pins {
            Arc::make_mut(&mut ledger).pin_entry(id, *origin, text);
            in_force.pin_entry(id, *origin, text);
        }
    }
    let standing = if checking.pin {
        Standing::of(&in_force, STANDING_TOKENS * 4)
    } else {
        Standing::default()
    };
    // Serialized after the ledger is built, so the two are not held at once at the peak.
    let merged_prefix = prep.turn_prefix_messages().filter(|_| merged);
    let history_parts = prep
        .history_messages()
        .chain(merged_prefix)
        .map(|m| serialize_conversation([m], w))
        .filter(|t| !t.is_empty())
        .collect();
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
        options: o.clone(),
        settings,
        target,
        checking,
        ledger,
        in_force,
        standing,
        history_ledger,
        first_kept_entry_id: prep.first_kept().id().unwrap_or_default().to_string(),
        tokens_before: prep.tokens_before,
        is_split_turn: prep.cut.is_split_turn,
        kept_tokens,
        previous_summary: prep.previous_summary.map(|s| s.decode().into_owned()),
        history_parts,
        history_messages,
        turn_prefix,
        details,
        leaf_id: path.last().and_then(|e| e.id()).map(str::to_string),
        taken_ids: session.owned_ids(),
    })
}

/// The entries `pinEntries` names, with who said them and their text: each must be a
/// user or assistant message with text on the path (else 422, naming it).
fn pinned_entries(
    path: &[&Entry],
    ids: &[String],
    input: &SessionInput<CompactOptions>,
) -> Result<Vec<(String, Speaker, String)>, InputError> {
    let mut out = Vec::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        let refuse = |message: String| {
            InputError::invalid(Violation {
                pointer: match input.option_pointer("pinEntries") {
                    json if json.starts_with('/') => format!("{json}/{n}"),
                    query => query,
                },
                message,
                line: None,
            })
        };
        let shown = truncate_for_message(id);
        let entry = path
            .iter()
            .find(|e| e.id() == Some(id.as_str()))
            .ok_or_else(|| refuse(format!("no entry on the path has the id {shown:?}")))?;
        let (origin, text) = match entry.message() {
            Some(m) if m.role == Role::User => (Speaker::User, text_of(&m.content)),
            Some(m) if m.role == Role::Assistant => (Speaker::Assistant, text_of(&m.content)),
            _ => (Speaker::User, String::new()),
        };
        if text.trim().is_empty() {
            return Err(refuse(format!(
                "entry {shown:?} is not a user or assistant message with text; only those can be pinned"
            )));
        }
        out.push((id.clone(), origin, text));
    }
    Ok(out)
}

/// The ledgers a plan reads, from one extraction.
struct PlannedLedgers {
    /// This round's pinned ledger (see [`CompactPlan::ledger`]).
    ledger: Ledger,
    /// The same resolved by the kept messages (see [`CompactPlan::in_force`]).
    in_force: Ledger,
    /// The ledger of the history alone when asked for (a split turn's prefix summarized
    /// on its own; see [`CompactPlan::history_ledger`]); `None` with pinning off.
    history: Option<Ledger>,
}

/// This round's pinned ledger: the newest one on the path, carried through what `prep`
/// summarizes and the modified files; with pinning off, that one as it was. Second, the
/// same resolved by the kept messages (see [`CompactPlan::in_force`]); third, with
/// `prefix_apart`, from the same pass, the ledger of the history without the split turn's
/// prefix (what the history request holds when the prefix is summarized on its own).
///
/// The newest ledger is the previous compaction's, unless that compaction has none because
/// pi wrote it (compactd's pi extension falls back to pi's own compaction when compactd is
/// down). Then it is an earlier compaction's, and the messages summarized since that one's
/// boundary are read again, so an instruction given in between is not lost.
fn plan_ledger(prep: &Preparation<'_, '_>, pin: bool, prefix_apart: bool) -> PlannedLedgers {
    let searched = prep.previous_compaction.map_or(0, |i| i + 1);
    let newest = prep.path[..searched]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| ledger_in(e).map(|ledger| (i, ledger)));
    let (previous, from) = match newest {
        Some((i, ledger)) if Some(i) != prep.previous_compaction => {
            // Where that compaction let the context resume (its first kept entry precedes it).
            (
                ledger,
                boundary(&prep.path[..=i]).1.min(prep.boundary_start),
            )
        }
        Some((_, ledger)) => (ledger, prep.boundary_start),
        None => (Ledger::default(), prep.boundary_start),
    };
    if !pin {
        return PlannedLedgers {
            ledger: previous.clone(),
            in_force: previous,
            history: None,
        };
    }
    let details = prep.file_ops.lists();
    let history = messages(&prep.path[from..prep.boundary_start])
        .chain(messages(&prep.path[prep.history.clone()]));
    let prefix = messages(&prep.path[prep.turn_prefix.clone()]);
    let (sources, head) = sources_in_two(history, prefix);
    let (history, ledger) = if prefix_apart {
        let (history, ledger) = ledger_with_head(previous, &sources, head, &details.modified_files);
        (Some(history), ledger)
    } else {
        (None, ledger_of(previous, &sources, &details.modified_files))
    };
    drop(sources);
    // What the kept messages replace or take back is no longer current: the summary of the
    // part before them must not state it (nor have it restored).
    let kept = prep.path[prep.cut.first_kept..]
        .iter()
        .filter_map(|e| for_compaction(e).map(|m| (m, *e)));
    let later = ledger_of(ledger.clone(), &sources_of(kept), &[]);
    let in_force = ledger.clone().resolved_by(&later);
    PlannedLedgers {
        ledger,
        in_force,
        history,
    }
}

/// The messages of `entries`, each with its entry.
fn messages<'s, 'a>(
    entries: &'s [&'s Entry<'a>],
) -> impl Iterator<Item = (AgentMessage<'s, 'a>, &'s Entry<'a>)> + 's {
    entries
        .iter()
        .filter_map(|e| for_compaction(e).map(|m| (m, *e)))
}

/// Tallies the calls of one compaction.
#[derive(Default)]
struct Tally {
    cost: Cost,
    /// Summed over the calls a model answered (the entry's `usage`); `None` when none did.
    model_usage: Option<Usage>,
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
        if s.summarizer == SummarizerKind::Llm {
            self.model_usage
                .get_or_insert_with(Usage::default)
                .add(&s.usage);
        }
        self.extractive |= s.summarizer == SummarizerKind::Extractive;
        self.model = Some(s.model.clone());
        self.moa = s.moa.clone();
    }
}
