//! The history summary of a compaction, in chunks when one request would not fit the
//! summarizer's context window, planned again after a context overflow.

use crate::compaction::ledger::Ledger;
use crate::session::text::utf16_len;
use crate::summarize::{
    Mode, ProgressSink, PromptOptions, Prompts, Scoped, Summarize, SummarizeError, Summary,
    SummaryRequest,
};
use crate::telemetry::metric;

use super::super::checked::verify;
use super::super::fold::{chunk_take, tokens_of, truncate_units};
use super::{CompactPlan, Tally};

/// Re-plans after a context overflow, at most: each halves the window planned for, so
/// four take a misjudged window down sixteenfold before the last try falls back.
const MAX_REPLANS: u32 = 4;

/// Estimated tokens of a request as sent: prompts and output budget.
fn request_tokens(req: &SummaryRequest) -> u64 {
    tokens_of(&req.system_prompt)
        .saturating_add(tokens_of(&req.prompt))
        .saturating_add(req.max_tokens)
}

/// The history summary, in chunks when one request would not fit the summarizer's
/// context window: oldest first, each pass folding into the previous pass's summary
/// with the update prompt (the first pass into the previous compaction's summary).
/// With a ledger, each intermediate pass is verified too, so the next pass reads the
/// pinned items. Returns the summary and the number of passes.
///
/// A pass the model refuses as larger than its window (the chars/4 estimate is off for
/// code and non-Latin text) is planned again: the window becomes the smaller of the one
/// the summarizer now reports (the engine shrinks it on an overflow) and half the
/// estimate of what was sent, and the rest of the history is chunked for it. After
/// [`MAX_REPLANS`] re-plans a pass goes through the plain call (and its fallback).
pub(super) async fn summarize_history(
    plan: &CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    opts: &PromptOptions<'_>,
    pin: Option<&Ledger>,
    tally: &mut Tally,
    sink: &dyn ProgressSink,
) -> Result<(String, u32), SummarizeError> {
    let model = plan.model.as_deref();
    let reserve = plan.settings.reserve_tokens;
    let mut window = summarizer.context_window(model, plan.strategy);
    let mut replans = 0u32;
    let whole = plan.history_parts.join("\n\n");
    let single = prompts
        .history_request(&whole, plan.previous_summary.as_deref(), reserve, opts)
        .for_model(model, plan.strategy);
    let fits = window.is_none_or(|w| request_tokens(&single) <= w);
    if fits {
        let scoped = Scoped::new(sink, "history", None);
        let called = call(summarizer, &single, &mut window, &mut replans, &scoped);
        if let Some(s) = called.await? {
            tally.add(&s);
            return Ok((s.text, 1));
        }
    }
    let mut previous = plan.previous_summary.clone();
    let mut rest: &[String] = &plan.history_parts;
    let mut passes = 0u32;
    while !rest.is_empty() {
        let window_now = window.unwrap_or(u64::MAX);
        // Room for conversation text in this pass, in UTF-16 units (4 per token).
        let frame = prompts.history_request("", previous.as_deref(), reserve, opts);
        // max_tokens may be close to u64::MAX (a client's reserveTokens).
        let overhead = request_tokens(&frame);
        let room_units = window_now.saturating_sub(overhead).saturating_mul(4) as usize;
        let take = chunk_take(rest, room_units);
        let mut chunk = rest[..take].join("\n\n");
        if utf16_len(&chunk) > room_units {
            // A single message larger than the window: keep its beginning.
            chunk = truncate_units(&chunk, room_units.max(400));
        }
        let req = prompts
            .history_request(&chunk, previous.as_deref(), reserve, opts)
            .for_model(model, plan.strategy);
        let scoped = Scoped::new(sink, "history", Some(passes + 1));
        let called = call(summarizer, &req, &mut window, &mut replans, &scoped);
        let Some(s) = called.await? else {
            continue;
        };
        tally.add(&s);
        rest = &rest[take..];
        passes += 1;
        previous = Some(match pin {
            // The final pass is verified with the whole summary.
            Some(ledger) if !rest.is_empty() => {
                verify(
                    &s.text,
                    ledger,
                    req.max_tokens,
                    plan.checking.pin_budget_share,
                )
                .summary
            }
            _ => s.text,
        });
    }
    Ok((previous.unwrap_or_default(), passes))
}

/// The history passes `prepared` announces: 1 when the history fits the summarizer's
/// window, else the passes with the first pass's room (later passes also carry the
/// running summary, and a model may refuse a pass as too large, so there may be more;
/// the answer's `chunks` is exact).
pub(super) fn planned_chunks(
    plan: &CompactPlan,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    opts: &PromptOptions<'_>,
) -> u32 {
    let reserve = plan.settings.reserve_tokens;
    // The default strategy's window, as announced so far (the calls plan for the
    // request's strategy).
    let Some(window) = summarizer.context_window(plan.model.as_deref(), None) else {
        return 1;
    };
    let whole = plan.history_parts.join("\n\n");
    let single = prompts.history_request(&whole, plan.previous_summary.as_deref(), reserve, opts);
    if request_tokens(&single) <= window {
        return 1;
    }
    let frame = prompts.history_request("", plan.previous_summary.as_deref(), reserve, opts);
    let room = window
        .saturating_sub(request_tokens(&frame))
        .saturating_mul(4) as usize;
    let mut rest: &[String] = &plan.history_parts;
    let mut passes = 0;
    while !rest.is_empty() {
        rest = &rest[chunk_take(rest, room)..];
        passes += 1;
    }
    passes.max(1)
}

/// One history call; `Ok(None)`: the model said the request exceeds its window, and
/// `window` is now the smaller one to plan for (see [`summarize_history`]).
async fn call(
    summarizer: &dyn Summarize,
    req: &SummaryRequest,
    window: &mut Option<u64>,
    replans: &mut u32,
    sink: &dyn ProgressSink,
) -> Result<Option<Summary>, SummarizeError> {
    if *replans >= MAX_REPLANS {
        return summarizer
            .summarize(req, Mode::WithFallback, sink)
            .await
            .map(Some);
    }
    match summarizer.summarize(req, Mode::Splittable, sink).await {
        Ok(s) => Ok(Some(s)),
        Err(SummarizeError::ContextOverflow(why)) => {
            let sent = request_tokens(req);
            let reported = summarizer
                .context_window(req.model.as_deref(), req.strategy)
                .unwrap_or(u64::MAX);
            let smaller = reported.min(window.unwrap_or(u64::MAX).min(sent) / 2);
            tracing::warn!(
                sent, window = smaller, error = %why,
                "the summary request exceeds the model's context window; splitting it"
            );
            metrics::counter!(metric::REPLANS.name).increment(1);
            *window = Some(smaller);
            *replans += 1;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
