//! Earlier summaries: a previous summary, or one quoted in the conversation, read back
//! into items by section. Our own headings map to their sections; other headings are kept
//! as bold labels so nothing of an earlier summary is lost in the merge.

use super::layout::Sec;
use compactd_core::compaction::ledger::{group_label, is_labelled};

/// An item of an earlier summary.
pub(super) struct Earlier {
    pub(super) sec: Sec,
    pub(super) text: String,
    /// A code block, rendered as it was.
    pub(super) raw: bool,
    /// A labelled statement (`SAFETY RULE: …`, or a bullet under a `SAFETY RULE:` line):
    /// the user's, carried; it goes back through the pinned ledger, not the sections.
    pub(super) pinned: bool,
}

/// Removes `<read-files>` / `<modified-files>` blocks (the caller appends fresh ones).
fn strip_file_blocks(text: &str) -> String {
    let mut s = text.to_string();
    for tag in ["read-files", "modified-files"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = s.find(&open) {
            let Some(rel) = s[start..].find(&close) else {
                break;
            };
            s.replace_range(start..start + rel + close.len(), "");
        }
    }
    s
}

/// Which section a heading of an earlier summary belongs to.
fn map_heading(title: &str) -> Option<Sec> {
    let t = title.to_lowercase();
    let has = |ws: &[&str]| ws.iter().any(|w| t.contains(w));
    Some(if has(&["in progress", "current", "ongoing"]) {
        Sec::InProgress
    } else if has(&["block"]) {
        Sec::Blocked
    } else if has(&["next", "todo", "remaining"]) {
        Sec::NextSteps
    } else if has(&["decision"]) {
        Sec::Decisions
    } else if has(&["constraint", "preference", "requirement", "convention"]) {
        Sec::Constraints
    } else if has(&["done", "complet", "progress", "accomplish"]) {
        Sec::Done
    } else if has(&["goal", "request", "objective", "task", "purpose"]) {
        Sec::Goal
    } else if has(&[
        "context",
        "critical",
        "file",
        "reference",
        "command",
        "note",
    ]) {
        Sec::Critical
    } else {
        return None;
    })
}

const STANDARD_HEADINGS: &[&str] = &[
    "goal",
    "goals",
    "constraints & preferences",
    "constraints",
    "progress",
    "done",
    "in progress",
    "blocked",
    "key decisions",
    "next steps",
    "critical context",
    "original request",
    "early progress",
    "context for suffix",
];

/// A top-level list item: its text without marker or checkbox.
fn bullet(line: &str) -> Option<&str> {
    if line.starts_with("  ") || line.starts_with('\t') {
        return None;
    }
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let rest = ["- ", "* ", "+ "]
        .iter()
        .find_map(|m| t.strip_prefix(m))
        .or_else(|| {
            (digits > 0)
                .then(|| t[digits..].strip_prefix(". "))
                .flatten()
        })?;
    let rest = ["[x] ", "[X] ", "[ ] "]
        .iter()
        .find_map(|m| rest.strip_prefix(m))
        .unwrap_or(rest);
    Some(rest.trim())
}

struct SummaryParser {
    out: Vec<Earlier>,
    sec: Sec,
    /// A non-standard heading, carried into the next item so it is not lost.
    label: Option<String>,
    item: Option<String>,
    paragraph: bool,
    /// The label line the bullets below it are listed under (`SAFETY RULE:`).
    group: Option<String>,
}

impl SummaryParser {
    fn flush(&mut self) {
        if let Some(text) = self.item.take() {
            self.push(text, false);
        }
        self.paragraph = false;
    }

    fn push(&mut self, text: String, raw: bool) {
        let bare = text.trim().trim_end_matches('.').to_lowercase();
        if bare.is_empty() || bare == "(none)" || bare == "none" {
            return;
        }
        let text = match self.label.take() {
            Some(label) if raw => {
                self.out.push(Earlier {
                    sec: self.sec,
                    text: format!("**{label}**:"),
                    raw: false,
                    pinned: false,
                });
                text
            }
            Some(label) => format!("**{label}**: {text}"),
            None => text,
        };
        let pinned = !raw && (self.group.is_some() || is_labelled(&text));
        let text = match (&self.group, raw) {
            (Some(group), false) => format!("{group} {text}"),
            _ => text,
        };
        self.out.push(Earlier {
            sec: self.sec,
            text,
            raw,
            pinned,
        });
    }

    fn heading(&mut self, level: usize, title: &str) {
        self.flush();
        if let Some(label) = self.label.take() {
            self.out.push(Earlier {
                sec: self.sec,
                text: format!("**{label}**"),
                raw: false,
                pinned: false,
            });
        }
        match map_heading(title) {
            Some(sec) => self.sec = sec,
            None if level <= 2 => self.sec = Sec::Critical,
            None => {}
        }
        let lower = title.to_lowercase();
        if !STANDARD_HEADINGS.contains(&lower.as_str()) {
            self.label = Some(title.to_string());
        }
    }
}

/// An earlier summary's items by section, in order.
pub(super) fn parse_summary(text: &str) -> Vec<Earlier> {
    let text = strip_file_blocks(text);
    let mut p = SummaryParser {
        out: Vec::new(),
        sec: Sec::Critical,
        label: None,
        item: None,
        paragraph: false,
        group: None,
    };
    let mut fence: Option<String> = None;
    for line in text.lines() {
        if let Some(block) = &mut fence {
            block.push('\n');
            block.push_str(line);
            if line.trim_start().starts_with("```") {
                let block = fence.take().unwrap_or_default();
                p.push(block, true);
            }
            continue;
        }
        let t = line.trim();
        if t.starts_with("```") {
            p.flush();
            fence = Some(line.to_string());
            continue;
        }
        if t.is_empty() {
            p.flush();
            p.group = None;
            continue;
        }
        if let Some(group) = group_label(t) {
            p.flush();
            p.group = Some(group.to_string());
            continue;
        }
        if matches!(t, "---" | "***" | "___") || t == "**Turn Context (split turn):**" {
            p.flush();
            continue;
        }
        if t.starts_with('#') {
            let level = t.bytes().take_while(|&c| c == b'#').count();
            let title = t[level..].trim();
            if !title.is_empty() && t.as_bytes().get(level) == Some(&b' ') {
                p.group = None;
                p.heading(level, title);
                continue;
            }
        }
        if let Some(rest) = bullet(line) {
            p.flush();
            p.item = Some(rest.to_string());
            continue;
        }
        match &mut p.item {
            Some(item) if !p.paragraph && (line.starts_with(' ') || line.starts_with('\t')) => {
                item.push('\n');
                item.push_str(line.trim_end());
            }
            Some(item) if p.paragraph => {
                item.push('\n');
                item.push_str(t);
            }
            _ => {
                p.flush();
                p.group = None;
                p.item = Some(t.to_string());
                p.paragraph = true;
            }
        }
    }
    if let Some(block) = fence {
        p.flush();
        p.push(block, true);
    }
    p.flush();
    if let Some(label) = p.label.take() {
        p.out.push(Earlier {
            sec: p.sec,
            text: format!("**{label}**"),
            raw: false,
            pinned: false,
        });
    }
    p.out
}

#[cfg(test)]
mod tests {
    use crate::summarize::extractive::summarize;
    use crate::summarize::extractive::tests::history;
    use crate::summarize::templates::tests::CONVERSATION;

    #[test]
    fn merges_a_previous_summary_without_losing_items() {
        let previous = "# Context Checkpoint: CLI work\n\n## Goal\nShip the CLI.\n\n## Constraints & Preferences\n- E2E tests only\n\n## Progress\n### Done\n- [x] Created `src/main.rs`\n\n### In Progress\n- [ ] Wiring the parser\n\n### Blocked\n(none)\n\n## Key Decisions\n- **clap**: derive API\n\n## Next Steps\n1. Add flags\n\n## Critical Context\n- Build with `cargo build --release`\n\n## Agreed Structure\n```\nsrc/\n  cli.rs\n```\n\n<read-files>\nsrc/old.rs\n</read-files>\n\n<modified-files>\nsrc/main.rs\n</modified-files>";
        let t = summarize(&history(CONVERSATION, Some(previous), 13107)).text;
        assert!(!t.contains("<read-files>") && !t.contains("<modified-files>"));
        assert!(!t.contains("src/old.rs"));
        for item in [
            "- Ship the CLI.",
            "- E2E tests only",
            "- [x] Created `src/main.rs`",
            "- [ ] Wiring the parser",
            "- **clap**: derive API",
            "Add flags",
            "- Build with `cargo build --release`",
            "**Agreed Structure**:",
            "```\nsrc/\n  cli.rs\n```",
            "**Context Checkpoint: CLI work**",
            "- Add a --verbose flag",
            "- [x] Edited `src/cli.rs`",
        ] {
            assert!(t.contains(item), "{item:?} missing:\n{t}");
        }
        // The previous goal comes first; new state-like items lead their sections.
        assert!(t.find("Ship the CLI").unwrap() < t.find("Add a --verbose").unwrap());
        assert!(t.contains("## Next Steps\n1. Fix the blocker"));
        // Merging twice does not duplicate.
        let again = summarize(&history(CONVERSATION, Some(&t), 13107)).text;
        assert_eq!(again.matches("E2E tests only").count(), 1);
        assert_eq!(again.matches("Edited `src/cli.rs`").count(), 1);
    }
}
