//! Checked compaction in the pipeline: every summary that becomes a final
//! text is verified against the pinned ledger, the missing items restored within a
//! share of the summary's output budget, and the outcome counted; and `madeProgress`
//! states a real saving, or why there is none.
//!
//! Design decisions:
//! * The restored section may take `pin_budget_share` of the output budget the
//!   summarizer was given for that summary (its `max_tokens`): the summary was allowed
//!   that much, so the section stays in proportion to it whatever the model wrote.
//! * Metrics are counted here, where the answer's `retention` is made, so the HTTP API
//!   and the command line count alike (the latter has no recorder: a no-op).
//! * Every summary that leaves compactd has what looks like a secret redacted, whether
//!   or not pinning is on: summarizers copy user sentences, credential values included,
//!   and a summary is stored in the session and sent to models again.
//! * A compaction and a branch summary end with the same step ([`finish`]): each plan
//!   holds its ledger and its `Checking` (the request's `pin` already applied), so both
//!   pin the same way and only the restored section's budget differs ([`RestoreBudget`]).

use crate::config::Checking;
use crate::telemetry::metric;
use compactd_core::compaction::file_ops::{format_file_lists, FileLists};
use compactd_core::compaction::ledger::{
    check_summary, check_summary_within, redact, InForce, Ledger, Retention, STANDING_TOKENS,
};

use super::chunks::tokens_of;

/// What the restored section of a final summary may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreBudget {
    /// `pin_budget_share` of the output budget the summarizer was given for the summary
    /// (its `max_tokens`).
    ShareOf(u64),
    /// All that the summary leaves of these tokens (a compaction's `targetTokens`, less
    /// the messages it keeps).
    LeftOf(u64),
}

/// A final summary and what it kept of the ledger (`None`: pinning is off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSummary {
    pub summary: String,
    pub retention: Option<Retention>,
}

/// The last step of every summary that becomes an entry: `text` with the file lists
/// appended and secrets redacted; with pinning on, verified against `ledger`, what it
/// dropped restored within `budget`, and its retention counted.
pub fn finish(
    text: String,
    files: &FileLists,
    ledger: &Ledger,
    checking: &Checking,
    budget: RestoreBudget,
) -> CheckedSummary {
    if !checking.pin {
        return CheckedSummary {
            summary: without_secrets(text + &format_file_lists(files)),
            retention: None,
        };
    }
    // Nothing withdrawn is stated as current, whoever wrote the text.
    let text = InForce::of(ledger).resolve_lines(&text);
    let summary = without_secrets(text + &format_file_lists(files));
    let v = match budget {
        RestoreBudget::ShareOf(output) => {
            verify(&summary, ledger, output, checking.pin_budget_share)
        }
        // A target governs the whole: no room beyond what the summary left of it.
        RestoreBudget::LeftOf(left) => {
            let left = left.saturating_sub(tokens_of(&summary)) as usize;
            let c = check_summary(&summary, ledger, left);
            Verified {
                summary: c.summary,
                retention: c.retention,
            }
        }
    };
    record(&v.retention);
    CheckedSummary {
        summary: v.summary,
        retention: Some(v.retention),
    }
}

/// `summary` with every value that looks like a key, token or password replaced by
/// the ledger's redaction marker (the same rules that keep secrets out of the ledger).
pub fn without_secrets(summary: String) -> String {
    match redact(&summary) {
        std::borrow::Cow::Borrowed(_) => summary,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

/// A verified summary and what it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub summary: String,
    pub retention: Retention,
}

/// Verifies `summary` against the ledger and restores what it dropped, within
/// `share × output_tokens` tokens.
pub fn verify(summary: &str, ledger: &Ledger, output_tokens: u64, share: f64) -> Verified {
    let budget = (output_tokens as f64 * share.clamp(0.0, 1.0)).floor();
    let budget = if budget.is_finite() && budget < usize::MAX as f64 {
        budget as usize
    } else {
        usize::MAX
    };
    // Standing statements in force are the user's words beside the narrative: they get
    // their own room, not only a share of the narrative's.
    let checked = check_summary_within(summary, ledger, budget, STANDING_TOKENS);
    Verified {
        summary: checked.summary,
        retention: checked.retention,
    }
}

/// Counts a final summary's retention (`compactd_pinned_items_total{outcome}`).
pub fn record(retention: &Retention) {
    let counts = [
        ("pinned", retention.pinned),
        ("present", retention.present),
        ("reinserted", retention.reinserted),
        ("left_out", retention.left_out.len()),
    ];
    for (outcome, n) in counts {
        metrics::counter!(metric::PINNED_ITEMS.name, "outcome" => outcome).increment(n as u64);
    }
}

/// `madeProgress` and, when false, why: the context must shrink by at least
/// `min_progress` (a share of `tokens_before`).
pub fn progress(
    tokens_before: f64,
    tokens_after: u64,
    min_progress: f64,
) -> (bool, Option<String>) {
    let after = tokens_after as f64;
    let limit = tokens_before * (1.0 - min_progress.clamp(0.0, 1.0));
    if after <= limit && after < tokens_before {
        return (true, None);
    }
    let percent = |share: f64| format!("{:.1} %", share * 100.0);
    let reason = if after >= tokens_before {
        format!(
            "The compacted context (about {tokens_after} tokens) is not smaller than before \
             ({} tokens): compacting again would not help.",
            tokens_before.round()
        )
    } else {
        format!(
            "The compacted context (about {tokens_after} tokens) saves only {} of the \
             {} tokens before; at least {} is required (COMPACTD_MIN_PROGRESS).",
            percent(1.0 - after / tokens_before),
            tokens_before.round(),
            percent(min_progress)
        )
    };
    (false, Some(reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_needs_the_minimum_saving() {
        assert_eq!(progress(1000.0, 950, 0.05), (true, None));
        let (made, why) = progress(1000.0, 960, 0.05);
        assert!(!made);
        assert!(why.unwrap().contains("saves only 4.0 %"));
        let (made, why) = progress(1000.0, 1200, 0.05);
        assert!(!made);
        assert!(why.unwrap().contains("not smaller"));
        // A zero minimum still needs some saving.
        assert!(!progress(1000.0, 1000, 0.0).0);
        assert!(progress(1000.0, 999, 0.0).0);
    }

    /// A ledger of two user rules and a modified file.
    fn a_rule_and_a_file() -> Ledger {
        compactd_core::compaction::ledger::extract(
            &[compactd_core::compaction::ledger::Source {
                entry_id: Some("u1"),
                role: compactd_core::compaction::ledger::SourceRole::User,
                text: "Never push to main. The budget cap is $500 total.",
            }],
            &["src/a.rs"],
        )
    }

    #[test]
    fn the_budget_is_a_share_of_the_output_budget() {
        let ledger = a_rule_and_a_file();
        let all = verify("Nothing.", &ledger, 10_000, 0.25);
        assert_eq!(all.retention.left_out, Vec::<String>::new());
        assert!(all.retention.reinserted > 0);
        // No share at all: the standing statements still stand beside the narrative, the
        // modified file (no statement of the user's) is left out.
        let none = verify("Nothing.", &ledger, 10_000, 0.0);
        let summary = &none.summary;
        assert!(summary.contains("Never push to main."), "{summary}");
        assert!(summary.contains("$500"), "{summary}");
        assert!(!summary.contains("src/a.rs"), "{summary}");
        assert_eq!(none.retention.left_out.len(), 1);
    }

    #[test]
    fn finishing_pins_only_when_asked_and_within_its_budget() {
        let ledger = a_rule_and_a_file();
        let files = FileLists::default();
        let off = Checking {
            pin: false,
            ..Checking::default()
        };
        let on = Checking {
            pin: true,
            ..Checking::default()
        };
        let plain = finish(
            "Nothing.".into(),
            &files,
            &ledger,
            &off,
            RestoreBudget::ShareOf(1),
        );
        assert_eq!(plain.retention, None);
        assert!(plain.summary.starts_with("Nothing."));
        let wide = finish(
            "Nothing.".into(),
            &files,
            &ledger,
            &on,
            RestoreBudget::LeftOf(10_000),
        );
        let wide = wide.retention.unwrap();
        assert!(wide.reinserted > 0 && wide.left_out.is_empty());
        // What is left of the budget after the summary itself: nothing here.
        let summary_tokens = tokens_of(&plain.summary);
        let tight = finish(
            "Nothing.".into(),
            &files,
            &ledger,
            &on,
            RestoreBudget::LeftOf(summary_tokens),
        );
        assert_eq!(tight.retention.unwrap().reinserted, 0);
    }
}
