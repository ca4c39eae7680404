//! The history summary of a compaction, in chunks when one request would not fit the
//! summarizer's context window, planned again after a context overflow.

use std::sync::Arc;

use crate::summarize::progress::PartName;
use crate::summarize::{
    Mode, ProgressSink, PromptOptions, Prompts, Scoped, Summarize, SummarizeError, Summary,
    SummaryRequest,
};
use compactd_core::compaction::ledger::{split_trailer, Ledger};

use super::super::checked::verify;
use super::super::chunks::{next_chunk, passes, request_tokens, room_units, Replanner};
use super::{CompactPlan, Tally};

/// The history summary of a compaction and how it was written.
pub(super) struct History {
    /// Without the model's `Replaced:` trailer.
    pub text: String,
    /// Passes over the history.
    pub passes: u32,
    /// The numbered standing statements the model named as replaced (numbers as the
    /// prompt listed them, possibly ones that do not exist), over every pass.
    pub named: Vec<usize>,
}

/// The history summary, in chunks when one request would not fit the summarizer's
/// context window: oldest first, each pass folding into the previous pass's summary
/// with the update prompt (the first pass into the previous compaction's summary).
/// With a ledger, each intermediate pass is verified too, so the next pass reads the
/// pinned items (less those a pass named as replaced).
///
/// A pass the model refuses as larger than its window is planned again, and the rest of
/// the history is chunked for the smaller window (`chunks::Replanner`).
pub(super) async fn summarize_history(
    plan: &CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    opts: &PromptOptions<'_>,
    pin: Option<&Ledger>,
    tally: &mut Tally,
    sink: &dyn ProgressSink,
) -> Result<History, SummarizeError> {
    let (model, strategy) = (plan.model(), plan.strategy());
    let reserve = plan.settings.reserve_tokens;
    let mut planner = Replanner::new(summarizer, model, strategy);
    // The joined text is dropped once the prompt holds it (a large history is held once).
    let mut single = {
        let whole = plan.history_parts.join("\n\n");
        prompts.history_request(&whole, plan.previous_summary.as_deref(), reserve, opts)
    }
    .for_model(model, strategy);
    if let Some(ledger) = &plan.history_ledger {
        single = single.with_ledger(Arc::clone(ledger));
    }
    let fits = planner
        .window()
        .is_none_or(|w| request_tokens(&single) <= w);
    if fits {
        let scoped = Scoped::new(sink, PartName::History, None);
        if let Some(s) = call(summarizer, &single, &mut planner, &scoped).await? {
            tally.add(&s);
            let a = split_trailer(&s.text);
            return Ok(History {
                text: a.text.to_string(),
                passes: 1,
                named: a.named,
            });
        }
    }
    let mut named: Vec<usize> = Vec::new();
    let mut pinned = pin.cloned();
    let mut previous = plan.previous_summary.clone();
    let mut rest: &[String] = &plan.history_parts;
    let mut passes = 0u32;
    while !rest.is_empty() {
        let window = planner.window().unwrap_or(u64::MAX);
        let frame = prompts.history_request("", previous.as_deref(), reserve, opts);
        let (take, chunk) = next_chunk(rest, room_units(window, &frame));
        let req = prompts
            .history_request(&chunk, previous.as_deref(), reserve, opts)
            .for_model(model, strategy);
        let scoped = Scoped::new(sink, PartName::History, Some(passes + 1));
        let Some(s) = call(summarizer, &req, &mut planner, &scoped).await? else {
            continue;
        };
        tally.add(&s);
        rest = &rest[take..];
        passes += 1;
        let a = split_trailer(&s.text);
        let text = a.text.to_string();
        if let Some(ledger) = pinned.as_mut() {
            plan.standing.withdraw_in(ledger, &a.named);
        }
        for n in a.named {
            if !named.contains(&n) {
                named.push(n);
            }
        }
        previous = Some(match &pinned {
            // The final pass is verified with the whole summary.
            Some(ledger) if !rest.is_empty() => {
                verify(
                    &text,
                    ledger,
                    req.max_tokens,
                    plan.checking.pin_budget_share,
                )
                .summary
            }
            _ => text,
        });
    }
    Ok(History {
        text: previous.unwrap_or_default(),
        passes,
        named,
    })
}

/// The history passes `prepared` announces: 1 when the history fits the window the
/// calls plan for (the request's model and strategy), else the passes with the first
/// pass's room (later passes also carry the running summary, and a model may refuse a
/// pass as too large, so there may be more; the answer's `chunks` is exact).
pub(super) fn planned_chunks(
    plan: &CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    opts: &PromptOptions<'_>,
) -> u32 {
    let reserve = plan.settings.reserve_tokens;
    let Some(window) = summarizer.context_window(plan.model(), plan.strategy()) else {
        return 1;
    };
    let whole = plan.history_parts.join("\n\n");
    let single = prompts.history_request(&whole, plan.previous_summary.as_deref(), reserve, opts);
    if request_tokens(&single) <= window {
        return 1;
    }
    let frame = prompts.history_request("", plan.previous_summary.as_deref(), reserve, opts);
    passes(&plan.history_parts, room_units(window, &frame)).max(1)
}

/// One history call; `Ok(None)`: the model said the request exceeds its window, and the
/// planner now plans for a smaller one.
async fn call(
    summarizer: &dyn Summarize,
    req: &SummaryRequest,
    planner: &mut Replanner<'_>,
    sink: &dyn ProgressSink,
) -> Result<Option<Summary>, SummarizeError> {
    let mode = planner.mode();
    match summarizer.summarize(req, mode, sink).await {
        Ok(s) => Ok(Some(s)),
        Err(SummarizeError::ContextOverflow(why)) if mode == Mode::Splittable => {
            planner.overflowed(request_tokens(req), &why, "splitting it");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
