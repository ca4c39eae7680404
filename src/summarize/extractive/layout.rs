//! The summary's shape: the logical sections ([`Sec`]), the layouts that place them
//! under headings ([`Layout`]), and the [`Item`] a section holds with its tier.
//!
//! Design decision: this is the vocabulary shared by the steps that read (`facts`,
//! `earlier`), fill (`sections`) and write (`render`) sections, so it lives below all of
//! them and imports none of its siblings; the steps then depend on it one way.

/// A logical section of the summary; [`Layout`] places it under a heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sec {
    Goal,
    Constraints,
    Done,
    InProgress,
    Blocked,
    Decisions,
    NextSteps,
    Critical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// The sections of `prompts/initial.md` (history and branch summaries).
    Checkpoint,
    /// The sections of `prompts/turn-prefix.md`.
    TurnPrefix,
}

/// The headings of a history or branch summary, in order (`prompts/initial.md`).
pub const CHECKPOINT_HEADINGS: [&str; 8] = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress\n### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
];

/// The headings of a turn-prefix summary, in order (`prompts/turn-prefix.md`).
pub const TURN_PREFIX_HEADINGS: [&str; 3] = [
    "## Original Request",
    "## Early Progress",
    "## Context for Suffix",
];

/// Shortened before anything else is given up (the first and the latest request, the
/// blocking error); dropped only when the pinned items alone fill the budget.
pub(super) const KEEP: u8 = u8::MAX;
/// The user's standing statements from the pinned ledger: the last to go.
pub(super) const PINNED: u8 = u8::MAX - 1;

impl Layout {
    pub(super) fn headings(self) -> &'static [&'static str] {
        match self {
            Layout::Checkpoint => &CHECKPOINT_HEADINGS,
            Layout::TurnPrefix => &TURN_PREFIX_HEADINGS,
        }
    }

    /// Output section of a logical section.
    pub(super) fn section(self, sec: Sec) -> usize {
        match self {
            Layout::Checkpoint => sec as usize,
            Layout::TurnPrefix => match sec {
                Sec::Goal => 0,
                Sec::Done | Sec::Decisions => 1,
                _ => 2,
            },
        }
    }

    pub(super) fn numbered(self, section: usize) -> bool {
        self == Layout::Checkpoint && section == Sec::NextSteps as usize
    }

    pub(super) fn marker(self, section: usize) -> &'static str {
        match (self, section) {
            (Layout::Checkpoint, 2) => "- [x] ",
            (Layout::Checkpoint, 3) => "- [ ] ",
            _ => "- ",
        }
    }
}

/// One line of a section, with what the budget needs to know about it.
pub(super) struct Item {
    pub(super) section: usize,
    pub(super) text: String,
    pub(super) raw: bool,
    /// Lower tiers are dropped first; within a tier, lower `order` first.
    pub(super) tier: u8,
    pub(super) order: usize,
    /// Shorter versions of a kept item, longest first, for tight budgets.
    pub(super) shorter: Vec<String>,
    /// The text without the detail it can do without, taken before any item is dropped.
    pub(super) brief: Option<String>,
    /// The label line it is listed under (`SAFETY RULE:`), shared by the items of one
    /// group, which follow each other at the end of their section: `(id, label)`.
    pub(super) group: Option<(usize, String)>,
}
