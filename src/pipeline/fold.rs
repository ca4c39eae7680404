//! Chunked folding of a prompt that arrives already rendered (`/v1/summarize`, the
//! chat-completions facade): when the client's prompt does not fit the summarizer's
//! context window, its older turns are summarized first and the client's prompt is sent
//! with them replaced by that summary.
//!
//! Design decisions:
//!
//! * **Turns are found by their layout, never by wording.** pi, oh-my-pi and compactd write
//!   a serialized conversation as paragraphs that start with `[Label]: ` (`[User]:`,
//!   `[Tool result]:`), hermes-agent as `[USER]:`, `[TOOL RESULT id]:`. A turn starts at a
//!   line that opens with such a label: the first one anywhere, the others after a blank
//!   line. What comes before the first turn is the prompt's head (hermes's preamble and
//!   its previous summary); everything from the last turn on (the rest of the conversation
//!   block, pi's `<previous-summary>`, the instructions) stays with the last turn. A label
//!   inside a message only moves a chunk boundary; nothing is lost or reordered.
//! * **The client's instructions write the answer.** Only the final call carries them: the
//!   client's prompt, byte for byte, with the older turns replaced by one turn
//!   `[Earlier conversation, summarized]: …` (`[EARLIER TURNS, SUMMARIZED]: …` when the
//!   turns are labelled in capitals, as hermes's are). The summary comes back in the
//!   format the client asked for, and a previous summary in the client's prompt is merged
//!   by the client's own instructions, once.
//! * **The older turns are folded with compactd's history prompts**, oldest first, each
//!   pass updating the previous pass's summary (as `/v1/compact` folds a history), with an
//!   output budget of at most a quarter of the window, so the final call keeps room for the
//!   newest turns.
//! * **A request without an output budget** gets the configured one, at most a quarter of
//!   the window ([`default_output_budget`]): hermes-agent sends none.
//! * **What cannot be folded is sent as it is**: a prompt with fewer than two turns, or
//!   whose last turn and instructions alone overflow the window. The upstream then answers
//!   (the estimate is chars/4 and may be wrong either way).
//! * **A context-overflow answer re-plans** the fold for a smaller window (the engine has
//!   learned the model's smaller window; half of what was sent at most), as `/v1/compact`
//!   re-plans its chunks.

use crate::summarize::progress::PartName;
use crate::summarize::{
    Mode, ProgressSink, PromptOptions, Prompts, Scoped, Summarize, SummarizeError, Summary,
    SummaryRequest,
};
use compactd_core::session::text::utf16_len;

use super::chunks::{next_chunk, request_tokens, room_units, tokens_of, Cost, Replanner};

/// The output budget of a request that sets none: `configured`, but at most a quarter of
/// the window of the model that would answer (an unknown model name: the default's), so a
/// small local model's window is not spent on output it will not write.
pub fn default_output_budget(
    summarizer: &dyn Summarize,
    model: Option<&str>,
    strategy: Option<crate::summarize::Strategy>,
    configured: u64,
) -> u64 {
    let window = summarizer
        .context_window(model, strategy)
        .or_else(|| summarizer.context_window(None, strategy));
    match window {
        Some(w) => configured.min(w / 4).max(1),
        None => configured,
    }
}

/// A summary and the number of summarizer calls that made it (1: not folded).
#[derive(Debug, Clone)]
pub struct Folded {
    /// The final call's summary, with the usage and retries of every call summed.
    pub summary: Summary,
    pub passes: u32,
}

/// Answers `req`, folding its older turns first when it does not fit the window of the
/// model the request names (see the module documentation). A call the model refuses as
/// larger than its window re-plans the whole fold for the smaller of the window the
/// summarizer now reports and half of what was sent (`chunks::Replanner`); the calls
/// already made count in `usage`.
pub async fn summarize_fitting(
    summarizer: &dyn Summarize,
    prompts: &Prompts,
    req: &SummaryRequest,
    sink: &dyn ProgressSink,
    part: PartName,
) -> Result<Folded, SummarizeError> {
    let mut spent = Spent::default();
    let ctx = Ctx {
        summarizer,
        prompts,
        req,
        sink,
        part,
    };
    let mut planner = Replanner::new(summarizer, req.model.as_deref(), req.strategy);
    loop {
        match fold_once(&ctx, planner.window(), &mut spent, planner.mode()).await {
            Err(Overflow { sent, why }) => planner.overflowed(sent, &why, "folding it smaller"),
            Ok(done) => return done,
        }
    }
}

/// What every call of a fold shares.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    summarizer: &'a dyn Summarize,
    prompts: &'a Prompts,
    req: &'a SummaryRequest,
    sink: &'a dyn ProgressSink,
    /// The part the calls are reported as (`summary`, `branch`).
    part: PartName,
}

/// Usage and retries of the calls made so far.
#[derive(Default)]
struct Spent {
    cost: Cost,
    /// The folding passes' warnings (a pass the upstream truncated silently).
    warnings: Vec<String>,
}

/// A call the model refused as larger than its window (`sent`: its estimate in tokens).
struct Overflow {
    sent: u64,
    why: String,
}

/// One fold for `window` (`None`: no window known, one call). In `Mode::Splittable` an
/// overflow is returned as [`Overflow`] instead of the fallback.
async fn fold_once(
    ctx: &Ctx<'_>,
    window: Option<u64>,
    spent: &mut Spent,
    mode: Mode,
) -> Result<Result<Folded, SummarizeError>, Overflow> {
    let Ctx {
        summarizer,
        prompts,
        req,
        sink,
        part,
    } = *ctx;
    // Passes are reported as chunks of the part (the final call is the last).
    let call = |r: &SummaryRequest, chunk: Option<u32>| {
        let r = r.clone();
        async move {
            let scoped = Scoped::new(sink, part, chunk);
            let result = summarizer.summarize(&r, mode, &scoped).await;
            match result {
                Err(SummarizeError::ContextOverflow(why)) if mode == Mode::Splittable => {
                    Err(Overflow {
                        sent: request_tokens(&r),
                        why,
                    })
                }
                other => Ok(other),
            }
        }
    };
    let plan = window.and_then(|w| plan_fold(req, w));
    let Some(plan) = plan else {
        return Ok(call(req, None).await?.map(|summary| finish(summary, spent)));
    };
    let mut previous: Option<String> = None;
    let opts = PromptOptions::default();
    let mut rest: &[&str] = &plan.older;
    while !rest.is_empty() {
        let frame = SummaryRequest {
            max_tokens: plan.carry_budget,
            ..prompts.history_request("", previous.as_deref(), 0, &opts)
        };
        let (take, chunk) = next_chunk(rest, room_units(plan.window, &frame));
        let pass = SummaryRequest {
            max_tokens: plan.carry_budget,
            ..prompts.history_request(&chunk, previous.as_deref(), 0, &opts)
        }
        .for_model(req.model.as_deref(), req.strategy);
        let s = match call(&pass, Some(spent.cost.calls + 1)).await? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        spent.cost.add(&s);
        spent.warnings.extend(s.warnings);
        previous = Some(s.text);
        rest = &rest[take..];
    }
    let last = SummaryRequest {
        prompt: plan.final_prompt(previous.as_deref().unwrap_or_default()),
        ..req.clone()
    };
    Ok(call(&last, Some(spent.cost.calls + 1))
        .await?
        .map(|summary| finish(summary, spent)))
}

/// The final summary with every call's usage, retries and warnings.
fn finish(mut summary: Summary, spent: &Spent) -> Folded {
    let mut cost = spent.cost;
    cost.add(&summary);
    summary.usage = cost.usage;
    summary.retries = cost.retries;
    let mut warnings = spent.warnings.clone();
    warnings.append(&mut summary.warnings);
    warnings.dedup();
    summary.warnings = warnings;
    if spent.cost.calls > 0 {
        summary.cached = false;
    }
    Folded {
        summary,
        passes: cost.calls,
    }
}

/// How a prompt is folded: its head, the older turns to summarize first, and what the
/// final call keeps verbatim.
#[derive(Debug, PartialEq)]
struct FoldPlan<'p> {
    window: u64,
    /// Output budget of each folding pass (and so the size of the summary carried).
    carry_budget: u64,
    head: &'p str,
    older: Vec<&'p str>,
    /// The newest turns, the rest of the prompt after them included.
    kept: &'p str,
    label: &'static str,
}

impl FoldPlan<'_> {
    fn final_prompt(&self, carried: &str) -> String {
        format!("{}{}{}\n\n{}", self.head, self.label, carried, self.kept)
    }
}

/// `None` when the request fits `window`, or cannot be folded.
fn plan_fold(req: &SummaryRequest, window: u64) -> Option<FoldPlan<'_>> {
    let fixed = tokens_of(&req.system_prompt).saturating_add(req.max_tokens);
    if fixed.saturating_add(tokens_of(&req.prompt)) <= window {
        return None;
    }
    let starts = turn_starts(&req.prompt);
    if starts.len() < 2 {
        return None;
    }
    let prompt = req.prompt.as_str();
    let head = &prompt[..starts[0]];
    let carry_budget = req.max_tokens.min(window / 4).max(1);
    let label = if is_capitals(&prompt[starts[0]..]) {
        "[EARLIER TURNS, SUMMARIZED]: "
    } else {
        "[Earlier conversation, summarized]: "
    };
    // Room for the kept turns in the final call, in UTF-16 units.
    let final_fixed = fixed
        .saturating_add(tokens_of(head))
        .saturating_add(tokens_of(label))
        .saturating_add(carry_budget)
        .saturating_add(1);
    let room = window.saturating_sub(final_fixed).saturating_mul(4) as usize;
    // Keep the newest turns that fit (at least the last one, which holds the
    // instructions); the older ones are folded.
    let mut first_kept = starts.len() - 1;
    if utf16_len(&prompt[starts[first_kept]..]) > room {
        return None;
    }
    while first_kept > 1 && utf16_len(&prompt[starts[first_kept - 1]..]) <= room {
        first_kept -= 1;
    }
    if first_kept == 0 {
        return None;
    }
    let older = starts[..=first_kept]
        .windows(2)
        .map(|w| prompt[w[0]..w[1]].trim_end_matches('\n'))
        .collect();
    Some(FoldPlan {
        window,
        carry_budget,
        head,
        older,
        kept: &prompt[starts[first_kept]..],
        label,
    })
}

/// Byte offsets of the turns of a serialized conversation: lines that open with a
/// `[Label]: ` (the first at any line start, the others after a blank line).
fn turn_starts(prompt: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let bytes = prompt.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'[' {
            continue;
        }
        let after_blank = i >= 2 && &bytes[i - 2..i] == b"\n\n";
        let at_line = i == 0 || bytes[i - 1] == b'\n';
        let allowed = if starts.is_empty() {
            at_line
        } else {
            after_blank
        };
        if allowed && is_label(&prompt[i..]) {
            starts.push(i);
        }
    }
    starts
}

/// `[Label]: ` with a label of up to 80 letters, digits, spaces and `_.:-`, starting with
/// a letter.
fn is_label(s: &str) -> bool {
    let Some(body) = s.strip_prefix('[') else {
        return false;
    };
    let Some(end) = body.find("]: ").or_else(|| body.find("]:\n")) else {
        return false;
    };
    let label = &body[..end];
    label.len() <= 80
        && label.starts_with(|c: char| c.is_ascii_alphabetic())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '.' | ':' | '-'))
}

/// Whether the label at the start of `s` is written in capitals (hermes's `[USER]:`).
fn is_capitals(s: &str) -> bool {
    let label = s[1..].split(']').next().unwrap_or_default();
    let letters: String = label
        .split(' ')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphabetic)
        .collect();
    !letters.is_empty() && letters.chars().all(|c| c.is_ascii_uppercase())
}

#[cfg(test)]
mod tests;
