//! Noticing a prompt the server cut without saying so.
//!
//! Ollama's OpenAI-compatible endpoint keeps only as many prompt tokens as its context
//! length (`num_ctx`, `OLLAMA_CONTEXT_LENGTH`, 2048 or 4096 by default) and answers 200;
//! the summary is then written from a fragment. The one trace is the prompt count it
//! reports. compactd compares it with a conservative lower bound of what it sent: one
//! token per 8 non-whitespace characters, half the usual chars/4 (no tokenizer packs
//! text that densely; runs of whitespace are left out as some tokenizers fold them).
//! Below that bound, and above a floor where the bound means something, the answer
//! carries a warning, `compactd_truncated_prompts_total{model}` counts it and the log
//! names the model.

use crate::summarize::{SummaryRequest, Usage};

/// Below this many lower-bound tokens no verdict is given (tiny prompts, templates).
const MIN_LOWER_BOUND: u64 = 256;

/// Non-whitespace characters per token of the lower bound.
const CHARS_PER_TOKEN_BOUND: u64 = 8;

/// `Some((reported, lower_bound))` when the reported prompt tokens fall below the lower
/// bound of what was sent; `None` when they do not, or none were reported.
pub(super) fn suspected(req: &SummaryRequest, usage: &Usage) -> Option<(u64, u64)> {
    let reported = usage.input + usage.cache_read + usage.cache_write;
    if reported == 0 {
        return None;
    }
    let dense = |s: &str| s.chars().filter(|c| !c.is_whitespace()).count() as u64;
    let lower = (dense(&req.system_prompt) + dense(&req.prompt)) / CHARS_PER_TOKEN_BOUND;
    (lower >= MIN_LOWER_BOUND && reported < lower).then_some((reported, lower))
}

/// The warning an answer carries.
pub(super) fn warning(model: &str, reported: u64, lower: u64) -> String {
    format!(
        "{model} reported {reported} prompt tokens for a prompt of at least {lower}: the server \
         probably cut the prompt to its context length, and the summary may be written from a \
         fragment. Raise the server's context length (Ollama: OLLAMA_CONTEXT_LENGTH or num_ctx) \
         to the candidate's context_window, or lower context_window to match it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::RequestKind;

    fn req(prompt: String) -> SummaryRequest {
        SummaryRequest {
            kind: RequestKind::History,
            system_prompt: "sys".into(),
            prompt,
            max_tokens: 100,
            strategy: None,
            model: None,
            ledger: None,
        }
    }

    fn usage(input: u64) -> Usage {
        Usage {
            input,
            ..Usage::default()
        }
    }

    #[test]
    fn a_cut_prompt_is_noticed() {
        // 120,000 characters: ~30,000 tokens; Ollama's default context keeps 4,096.
        let r = req("fn main() { x(); }\n".repeat(6_000));
        let (reported, lower) = suspected(&r, &usage(4_096)).unwrap();
        assert_eq!(reported, 4_096);
        assert!(lower > 10_000, "{lower}");
        // An honest count (chars/4, or even chars/6) is not.
        assert_eq!(suspected(&r, &usage(28_000)), None);
        assert_eq!(suspected(&r, &usage(19_000)), None);
        // No count reported: no verdict.
        assert_eq!(suspected(&r, &usage(0)), None);
    }

    #[test]
    fn small_or_sparse_prompts_are_left_alone() {
        assert_eq!(suspected(&req("short".into()), &usage(1)), None);
        // Whitespace does not count towards the bound.
        let spaces = req(format!("a{}b", " ".repeat(100_000)));
        assert_eq!(suspected(&spaces, &usage(10)), None);
    }
}
