//! The summary's size: a share of what it condenses, within fixed bounds and within the
//! request's output budget.
//!
//! A summary as long as the request allows (16k tokens by default) is mostly noise: an
//! agent reads every token of it on every later turn. So the extractive summary aims at
//! [`SHARE`] of the span it condenses, never less than [`MIN_TOKENS`] (room for the goal,
//! the pinned items and the files of any session) and never more than [`MAX_TOKENS`]
//! (9 kB; a turn prefix's summary [`TURN_PREFIX_MAX_TOKENS`]), so that with the file lists
//! the stored summary stays within 12 kB.
//! The request's output budget is a hard ceiling over all of that, and so is the length of
//! the text condensed (a summary never grows its input).

/// The share of the condensed span the summary may take.
pub const SHARE: f64 = 0.20;
/// The least the share is raised to, in tokens.
pub const MIN_TOKENS: usize = 1_000;
/// The most the share may be, in tokens.
pub const MAX_TOKENS: usize = 2_300;
/// The most a turn prefix's summary may be: it sits beside a history summary.
pub const TURN_PREFIX_MAX_TOKENS: usize = 300;

/// UTF-16 units per token, as everywhere in compactd.
const UNITS_PER_TOKEN: usize = 4;

/// The summary's limit in UTF-16 units: the clamped share of `condensed` units, within
/// `max_tokens` and never more than `condensed`.
pub(super) fn limit_units(condensed: usize, max_tokens: u64) -> usize {
    limit_units_within(condensed, max_tokens, MAX_TOKENS)
}

/// [`limit_units`] with another cap (`TURN_PREFIX_MAX_TOKENS`).
pub(super) fn limit_units_within(condensed: usize, max_tokens: u64, cap: usize) -> usize {
    let span_tokens = condensed.div_ceil(UNITS_PER_TOKEN);
    let share = ((span_tokens as f64) * SHARE).floor() as usize;
    let target = share.clamp(MIN_TOKENS.min(cap), cap);
    let ceiling = usize::try_from(max_tokens).unwrap_or(usize::MAX);
    target
        .min(ceiling)
        .saturating_mul(UNITS_PER_TOKEN)
        .min(condensed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_a_fifth_of_the_span() {
        // 50,000 tokens condensed: 10,000 is over the cap; 10,000 tokens: 2,000.
        assert_eq!(limit_units(40_000, 16_384), 2_000 * 4);
        assert_eq!(limit_units(30_000, 16_384), 1_500 * 4);
    }

    #[test]
    fn budget_is_at_least_the_floor_and_at_most_the_cap() {
        assert_eq!(limit_units(200_000, 16_384), MAX_TOKENS * 4);
        assert_eq!(limit_units(8_000_000, 16_384), MAX_TOKENS * 4);
        // 2,000 tokens condensed: a fifth is 400, raised to the floor.
        assert_eq!(limit_units(8_000, 16_384), MIN_TOKENS * 4);
    }

    #[test]
    fn budget_stays_within_the_output_budget_and_the_input() {
        assert_eq!(limit_units(200_000, 500), 2_000);
        assert_eq!(limit_units(200_000, 0), 0);
        // Less text than the floor: never longer than the text.
        assert_eq!(limit_units(1_000, 16_384), 1_000);
        assert_eq!(limit_units(0, 16_384), 0);
    }
}
