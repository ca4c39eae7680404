//! Resolution: what a summary may still state as current. A statement the ledger holds as
//! withdrawn (replaced by a later one, or taken back) leaves every text the agent reads —
//! a quoted request, an earlier summary's line, a model's copy of it — and stays in
//! `details.pinned` with its status and what replaced it. Nothing else is dropped for
//! being old: a request a newer request followed is history, not withdrawn.
//!
//! Decisions:
//! * Matching is on the statement's own words (whitespace collapsed, ASCII case folded):
//!   a paraphrase is not recognised here (the model path names what it replaced instead).
//! * A text that states something withdrawn beside something in force keeps the rest;
//!   what is left with fewer than [`REMAINDER_WORDS`] words says nothing and goes.
//! * A withdrawn statement restated since (its text in force again) is not withdrawn.

use super::labels::split_label;
use super::model::Ledger;
use super::words::collapse_ws;
use super::Kind;

/// A remainder with fewer words than this says nothing on its own.
pub const REMAINDER_WORDS: usize = 3;

/// The ledger's resolution, ready to apply to texts.
#[derive(Debug, Clone, Default)]
pub struct InForce {
    /// Withdrawn statements, whitespace collapsed, ASCII-lowercased (byte positions kept).
    withdrawn: Vec<String>,
    /// Statements in force, the same way.
    active: Vec<String>,
}

impl InForce {
    pub fn of(ledger: &Ledger) -> InForce {
        // A statement as written, and without its label: summaries list labelled
        // statements under one label line.
        let forms = |t: &str| -> Vec<String> {
            let mut v = vec![collapse_ws(t).to_ascii_lowercase()];
            if let Some((_, body)) = split_label(t) {
                v.push(collapse_ws(body).to_ascii_lowercase());
            }
            v
        };
        let active: Vec<String> = ledger
            .active()
            .filter(|i| i.kind.is_statement() || i.kind == Kind::Objective)
            .flat_map(|i| forms(&i.text))
            .collect();
        let withdrawn = ledger
            .withdrawn()
            .flat_map(|i| forms(&i.text))
            .filter(|w| w.split_whitespace().count() >= 2 && !active.contains(w))
            .collect();
        InForce { withdrawn, active }
    }

    pub fn is_empty(&self) -> bool {
        self.withdrawn.is_empty()
    }

    /// `text` as a summary may state it: unchanged, with its withdrawn statements cut out,
    /// or `None` when nothing in force is left of it.
    pub fn resolve(&self, text: &str) -> Option<String> {
        let mut kept = collapse_ws(text);
        if self.withdrawn.is_empty() {
            return Some(kept);
        }
        // A quote cut short (it ends in "…") of a withdrawn statement is that statement.
        let cut = kept
            .strip_suffix('\u{2026}')
            .map(|c| c.trim_end().to_ascii_lowercase());
        let mut changed = false;
        for w in &self.withdrawn {
            if let Some(core) = cut.as_deref().filter(|c| c.len() >= 12) {
                if w.starts_with(core) || w.starts_with(core.trim_start_matches(['-', '*', ' '])) {
                    return None;
                }
            }
            let lower = kept.to_ascii_lowercase();
            let Some(at) = lower.find(w.as_str()) else {
                continue;
            };
            // The withdrawn words inside a statement in force stay.
            if self
                .active
                .iter()
                .any(|a| a.len() > w.len() && a.contains(w.as_str()) && lower.contains(a.as_str()))
            {
                continue;
            }
            kept.replace_range(at..at + w.len(), " ");
            kept = collapse_ws(&kept);
            changed = true;
        }
        if !changed {
            return Some(kept);
        }
        let words = kept
            .split_whitespace()
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .count();
        (words >= REMAINDER_WORDS).then_some(kept)
    }

    /// A whole summary resolved line by line: a line stating only what was withdrawn
    /// goes, one stating it beside something in force keeps the rest (its list marker
    /// too); other lines are left exactly as they are.
    pub fn resolve_lines(&self, summary: &str) -> String {
        if self.withdrawn.is_empty() {
            return summary.to_string();
        }
        let mut out = String::with_capacity(summary.len());
        for line in summary.split_inclusive('\n') {
            let body = line.trim_end_matches(['\n', '\r']);
            let lower = collapse_ws(body).to_ascii_lowercase();
            let cut = lower
                .strip_suffix('\u{2026}')
                .map(|c| c.trim_end().trim_start_matches(['-', '*', ' ']))
                .filter(|c| c.len() >= 12);
            let touched = self
                .withdrawn
                .iter()
                .any(|w| lower.contains(w.as_str()) || cut.is_some_and(|c| w.starts_with(c)));
            if !touched {
                out.push_str(line);
                continue;
            }
            let marker_len = body.len() - body.trim_start_matches([' ', '-', '*', '\t']).len();
            let (marker, rest) = body.split_at(marker_len);
            if let Some(kept) = self.resolve(rest) {
                out.push_str(marker);
                out.push_str(&kept);
                out.push_str(&line[body.len()..]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::resolution_tests::ledger;

    #[test]
    fn a_replaced_statement_leaves_every_line_and_the_rest_stays() {
        let l = ledger(&[
            "HARD CONSTRAINT: Report all times in UTC.",
            "Never push to main.",
            "From now on, report all times in Pacific time.",
        ]);
        let f = InForce::of(&l);
        let summary = "## Constraints\n- HARD CONSTRAINT: Report all times in UTC.\n- Never push to main.\n- From now on, report all times in Pacific time.\n";
        assert_eq!(
            f.resolve_lines(summary),
            "## Constraints\n- Never push to main.\n- From now on, report all times in Pacific time.\n"
        );
        // Beside something in force, only the withdrawn statement goes.
        assert_eq!(
            f.resolve("Report all times in UTC. Then build the exporter for billing.")
                .as_deref(),
            Some("Then build the exporter for billing.")
        );
        // A quote cut short of it goes with it.
        assert_eq!(f.resolve("HARD CONSTRAINT: Report all times…"), None);
    }

    #[test]
    fn a_label_line_is_no_quote_of_what_was_withdrawn() {
        let l = ledger(&[
            "HARD CONSTRAINT: Budget cap is $201 total.",
            "HARD CONSTRAINT: Budget cap is $956 total.",
            "HARD CONSTRAINT: Only Python 3.11.",
        ]);
        let f = InForce::of(&l);
        let s = "HARD CONSTRAINT:\n- Budget cap is $956 total.\n- Only Python 3.11.\n";
        assert_eq!(f.resolve_lines(s), s);
        assert_eq!(
            f.resolve_lines("- HARD CONSTRAINT: Budget cap is $201 to\u{2026}\n"),
            ""
        );
    }

    #[test]
    fn nothing_withdrawn_changes_nothing() {
        let l = ledger(&[
            "Never push to main.",
            "Add a login page.",
            "Now add a logout button.",
        ]);
        let f = InForce::of(&l);
        assert!(
            f.is_empty(),
            "a request followed by another is not withdrawn"
        );
        let s = "## Goal\n- Add a login page.\n  - odd   spacing kept\n";
        assert_eq!(f.resolve_lines(s), s);
    }
}
