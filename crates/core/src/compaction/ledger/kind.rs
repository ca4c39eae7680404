//! What an item is and who said it: the two closed vocabularies of the ledger.

use serde::{Deserialize, Serialize};

/// What a pinned item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// An entry the user pinned (`pinEntries`): its text verbatim in every later summary;
    /// nothing replaces it.
    Entry,
    /// A standing instruction: "never …", "always …", "must …", "don't …".
    Rule,
    /// A hard limit with its value: budgets, caps, maxima, "only …", "do not exceed …".
    Constraint,
    /// How the user likes it done: "I prefer …", "please use …".
    Preference,
    /// A value the user supplied: identifiers, endpoints, versions, names.
    Fact,
    /// A state of the work the user marked ("GOAL STATE: steps 1-3 of 5 done"): only a
    /// later statement on the same subject replaces it, never the next request.
    Goal,
    /// The latest real request.
    Objective,
    /// "We decided …", "let's go with …", "use X instead of Y".
    Decision,
    /// A file the work modified.
    File,
    /// A failing tool call with no later success.
    Error,
}

impl Kind {
    /// Every kind, in the order the re-inserted section lists them.
    pub const ALL: [Kind; 10] = [
        Kind::Entry,
        Kind::Rule,
        Kind::Constraint,
        Kind::Preference,
        Kind::Goal,
        Kind::Fact,
        Kind::Objective,
        Kind::Decision,
        Kind::File,
        Kind::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Entry => "entry",
            Kind::Rule => "rule",
            Kind::Constraint => "constraint",
            Kind::Preference => "preference",
            Kind::Fact => "fact",
            Kind::Goal => "goal",
            Kind::Objective => "objective",
            Kind::Decision => "decision",
            Kind::File => "file",
            Kind::Error => "error",
        }
    }

    /// The user's standing statements: what stays in force until the user says otherwise,
    /// and what the summary states verbatim beside its narrative.
    pub fn is_standing(self) -> bool {
        matches!(
            self,
            Kind::Entry
                | Kind::Rule
                | Kind::Constraint
                | Kind::Preference
                | Kind::Goal
                | Kind::Fact
        )
    }

    /// Statements a later statement on the same subject may replace.
    pub fn is_statement(self) -> bool {
        matches!(
            self,
            Kind::Rule
                | Kind::Constraint
                | Kind::Preference
                | Kind::Fact
                | Kind::Goal
                | Kind::Decision
        )
    }
}

/// Who said it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Speaker {
    #[default]
    User,
    Assistant,
    /// A tool result (errors).
    Tool,
    /// Computed from the session (modified files).
    Session,
}
