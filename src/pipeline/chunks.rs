//! What every chunked summary shares (the fold of a rendered prompt in `fold`, the history
//! of a compaction in `compact::history`): the size estimate of a request, the chunker,
//! and the re-planner after a context overflow.
//!
//! A request the model refuses as larger than its window (the chars/4 estimate is off for
//! code and non-Latin text) is planned again: the window becomes the smaller of the one
//! the summarizer now reports (the engine shrinks it on an overflow) and half the estimate
//! of what was sent. Each re-plan at least halves the window, so [`MAX_REPLANS`] take a
//! misjudged window down sixteenfold before the last try goes through the plain call (and
//! its fallback).

use crate::summarize::{Mode, Strategy, Summarize, Summary, SummaryRequest, Usage};
use crate::telemetry::metric;
use compactd_core::session::text::utf16_len;

/// Re-plans after a context overflow, at most.
const MAX_REPLANS: u32 = 4;

/// Tokens a prompt of `text` occupies, by the same chars/4 estimate pi uses.
pub(crate) fn tokens_of(text: &str) -> u64 {
    utf16_len(text).div_ceil(4) as u64
}

/// Estimated tokens of a request as sent: prompts and output budget.
pub(crate) fn request_tokens(req: &SummaryRequest) -> u64 {
    tokens_of(&req.system_prompt)
        .saturating_add(tokens_of(&req.prompt))
        .saturating_add(req.max_tokens)
}

/// Room for conversation text in a request of `window` tokens whose instructions, without
/// the text, are `frame`, in UTF-16 units (4 per token).
pub(crate) fn room_units(window: u64, frame: &SummaryRequest) -> usize {
    // max_tokens may be close to u64::MAX (a client's reserveTokens).
    window
        .saturating_sub(request_tokens(frame))
        .saturating_mul(4) as usize
}

/// The first `max_units` UTF-16 units of `s`, never splitting a character, with a marker.
pub(crate) fn truncate_units(s: &str, max_units: usize) -> String {
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

/// How many of `parts` one pass takes: as many as fit in `room_units` UTF-16 units
/// joined by blank lines, at least one.
pub(crate) fn chunk_take(parts: &[impl AsRef<str>], room_units: usize) -> usize {
    let mut take = 0;
    let mut units = 0usize;
    for part in parts {
        let add = utf16_len(part.as_ref()) + if take > 0 { 2 } else { 0 };
        if take > 0 && units + add > room_units {
            break;
        }
        units += add;
        take += 1;
    }
    take
}

/// As many parts as fit `room_units` (at least one; a part larger than the room keeps its
/// beginning), joined by blank lines, and how many were taken.
pub(crate) fn next_chunk(parts: &[impl AsRef<str>], room_units: usize) -> (usize, String) {
    let take = chunk_take(parts, room_units);
    let mut chunk = parts[..take]
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join("\n\n");
    if utf16_len(&chunk) > room_units {
        chunk = truncate_units(&chunk, room_units.max(400));
    }
    (take, chunk)
}

/// How many passes the chunker makes of `parts` when each has `room_units` (the first
/// pass's room: later passes also carry the running summary, so there may be more).
pub(crate) fn passes(parts: &[impl AsRef<str>], room_units: usize) -> u32 {
    let mut rest = parts;
    let mut passes = 0;
    while !rest.is_empty() {
        rest = &rest[chunk_take(rest, room_units)..];
        passes += 1;
    }
    passes
}

/// The window a chunked summary plans for, re-planned after each context overflow.
pub(crate) struct Replanner<'s> {
    summarizer: &'s dyn Summarize,
    model: Option<&'s str>,
    strategy: Option<Strategy>,
    window: Option<u64>,
    replans: u32,
}

impl<'s> Replanner<'s> {
    /// Planning for the window of what answers `model` with `strategy`.
    pub(crate) fn new(
        summarizer: &'s dyn Summarize,
        model: Option<&'s str>,
        strategy: Option<Strategy>,
    ) -> Self {
        Replanner {
            summarizer,
            model,
            strategy,
            window: summarizer.context_window(model, strategy),
            replans: 0,
        }
    }

    /// The window to plan for (`None`: no window known, one call).
    pub(crate) fn window(&self) -> Option<u64> {
        self.window
    }

    /// How the next call is made: splittable (an overflow is returned, to re-plan) until
    /// [`MAX_REPLANS`] re-plans were made, then with the fallback.
    pub(crate) fn mode(&self) -> Mode {
        if self.replans < MAX_REPLANS {
            Mode::Splittable
        } else {
            Mode::WithFallback
        }
    }

    /// `sent` (its estimate in tokens) exceeded the model's window: plans for a smaller
    /// one (see the module documentation). `doing` says what happens next, for the log.
    pub(crate) fn overflowed(&mut self, sent: u64, why: &str, doing: &str) {
        let reported = self
            .summarizer
            .context_window(self.model, self.strategy)
            .unwrap_or(u64::MAX);
        let smaller = reported.min(self.window.unwrap_or(u64::MAX).min(sent) / 2);
        tracing::warn!(
            sent, window = smaller, error = %why,
            "the summary request exceeds the model's context window; {doing}"
        );
        metrics::counter!(metric::REPLANS.name).increment(1);
        self.window = Some(smaller);
        self.replans += 1;
    }
}

/// What the calls of one answer cost, summed in this one place: usage, retries, calls.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cost {
    pub(crate) usage: Usage,
    pub(crate) retries: u32,
    pub(crate) calls: u32,
}

impl Cost {
    /// Counts one call's answer.
    pub(crate) fn add(&mut self, s: &Summary) {
        self.usage.add(&s.usage);
        self.retries += s.retries;
        self.calls += 1;
    }
}
