//! Folding the history of a compaction in chunks: when one summary request would not fit
//! the summarizer's context window, the history is summarized oldest first, each pass
//! folding into the previous pass's summary.
//!
//! Design decision: the window is not trusted blindly. It comes from the configuration
//! and pi's chars/4 estimate, both of which can be wrong for a real server (code and
//! non-Latin text take more tokens; a server may run with a smaller window than the
//! model's). A pass the model refuses as too large (`SummarizeError::ContextOverflow`,
//! from `Summarize::summarize_splittable`) is planned again for a smaller window, so a
//! misjudged window costs a few refused requests instead of the summary.

use crate::compaction::ledger::Ledger;
use crate::session::text::utf16_len;
use crate::summarize::{
    PromptOptions, Prompts, Strategy, Summarize, SummarizeError, Summary, SummaryRequest,
};

use super::checked::verify;

/// Tokens a prompt of `text` occupies, by the same chars/4 estimate pi uses.
pub(super) fn tokens_of(text: &str) -> u64 {
    utf16_len(text).div_ceil(4) as u64
}

/// What is folded, and how.
pub(super) struct History<'a> {
    /// Serialized history, one text per message, oldest first.
    pub parts: &'a [String],
    /// The previous compaction's summary, folded into by the first pass.
    pub previous_summary: Option<&'a str>,
    pub model: Option<&'a str>,
    pub strategy: Option<Strategy>,
    pub reserve: u64,
    pub pin_budget_share: f64,
}

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
    h: &History<'_>,
    prompts: &Prompts,
    summarizer: &dyn Summarize,
    opts: &PromptOptions<'_>,
    pin: Option<&Ledger>,
    calls: &mut Vec<Summary>,
) -> Result<(String, u32), SummarizeError> {
    let model = h.model;
    let reserve = h.reserve;
    let mut window = summarizer.context_window(model);
    let mut replans = 0u32;
    let whole = h.parts.join("\n\n");
    let single = SummaryRequest {
        strategy: h.strategy,
        ..prompts.history_request(&whole, h.previous_summary, reserve, opts)
    };
    let fits = window.is_none_or(|w| request_tokens(&single) <= w);
    if fits {
        if let Some(s) = call(summarizer, model, &single, &mut window, &mut replans).await? {
            calls.push(s.clone());
            return Ok((s.text, 1));
        }
    }
    let mut previous = h.previous_summary.map(str::to_string);
    let mut rest: &[String] = h.parts;
    let mut passes = 0u32;
    while !rest.is_empty() {
        let window_now = window.unwrap_or(u64::MAX);
        // Room for conversation text in this pass, in UTF-16 units (4 per token).
        let frame = prompts.history_request("", previous.as_deref(), reserve, opts);
        // max_tokens may be close to u64::MAX (a client's reserveTokens).
        let overhead = request_tokens(&frame);
        let room_units = window_now.saturating_sub(overhead).saturating_mul(4) as usize;
        let mut take = 0;
        let mut units = 0usize;
        for part in rest {
            let add = utf16_len(part) + if take > 0 { 2 } else { 0 };
            if take > 0 && units + add > room_units {
                break;
            }
            units += add;
            take += 1;
        }
        let mut chunk = rest[..take].join("\n\n");
        if utf16_len(&chunk) > room_units {
            // A single message larger than the window: keep its beginning.
            chunk = truncate_units(&chunk, room_units.max(400));
        }
        let req = SummaryRequest {
            strategy: h.strategy,
            ..prompts.history_request(&chunk, previous.as_deref(), reserve, opts)
        };
        let Some(s) = call(summarizer, model, &req, &mut window, &mut replans).await? else {
            continue;
        };
        calls.push(s.clone());
        rest = &rest[take..];
        passes += 1;
        previous = Some(match pin {
            // The final pass is verified with the whole summary.
            Some(ledger) if !rest.is_empty() => {
                verify(&s.text, ledger, req.max_tokens, h.pin_budget_share).summary
            }
            _ => s.text,
        });
    }
    Ok((previous.unwrap_or_default(), passes))
}

/// One history call; `Ok(None)`: the model said the request exceeds its window, and
/// `window` is now the smaller one to plan for (see [`summarize_history`]).
async fn call(
    summarizer: &dyn Summarize,
    model: Option<&str>,
    req: &SummaryRequest,
    window: &mut Option<u64>,
    replans: &mut u32,
) -> Result<Option<Summary>, SummarizeError> {
    if *replans >= MAX_REPLANS {
        return summarizer.summarize(req, model).await.map(Some);
    }
    match summarizer.summarize_splittable(req, model).await {
        Ok(s) => Ok(Some(s)),
        Err(SummarizeError::ContextOverflow(why)) => {
            let sent = request_tokens(req);
            let reported = summarizer.context_window(model).unwrap_or(u64::MAX);
            let smaller = reported.min(window.unwrap_or(u64::MAX).min(sent) / 2);
            tracing::warn!(
                sent, window = smaller, error = %why,
                "the summary request exceeds the model's context window; splitting it"
            );
            metrics::counter!("compactd_compaction_replans_total").increment(1);
            *window = Some(smaller);
            *replans += 1;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The first `max_units` UTF-16 units of `s`, never splitting a character, with a marker.
fn truncate_units(s: &str, max_units: usize) -> String {
    let marker = "\n\n[... truncated to fit the summarizer's context window]";
    let budget = max_units.saturating_sub(utf16_len(marker));
    let mut units = 0;
    let end = s
        .char_indices()
        .find(|(_, c)| {
            units += c.len_utf16();
            units > budget
        })
        .map_or(s.len(), |(i, _)| i);
    format!("{}{marker}", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_whole_characters() {
        let t = truncate_units(&"😀".repeat(500), 100);
        assert!(utf16_len(&t) <= 100);
        assert!(t.ends_with("window]"));
    }
}
