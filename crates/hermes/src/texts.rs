//! The long fixed texts of a hermes compaction, in compactd's own words (H12 of
//! `docs/hermes.md`; the files and their slots are described in `prompts/hermes/README.md`).
//!
//! Design decisions:
//! * One `String` per text, so a caller (and the conformance harness) can build the same
//!   structure around any wording, hermes's included.
//! * A text is its file trimmed: the separators hermes puts around a text are structure,
//!   added by the code that places it, so an editor's final newline changes nothing.
//! * Slots are `{name}`, filled in one left-to-right pass ([`fill`]): a value is never
//!   rescanned (a focus text may contain `{focus}`), and braces that are not slots stay.
//! * No I/O: the service reads replacement files and hands them to
//!   [`HermesTexts::from_lookup`]; [`HermesTexts::problems`] says what would make a
//!   replacement lose what its text carries, and the service refuses it then.

/// Every fixed text, one field per V-name of `docs/hermes.md` (plus the fallback's note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HermesTexts {
    /// V-prefix: starts every summary; begins with [`OPENING_MARKER`].
    pub prefix: String,
    /// V-preamble: the summarizer's role, the `{preamble}` of `first` and `update`.
    pub preamble: String,
    /// V-temporal: the dating rule, slots `{date}` `{date}`.
    pub temporal: String,
    /// V-template: the 12 sections, slots `{budget}` `{temporal}`.
    pub template: String,
    /// V-first: the first-compaction prompt, slots `{preamble}` `{turns}` `{memory}` `{template}`.
    pub first: String,
    /// V-update: the iterative-update prompt, slots `{preamble}` `{previous}` `{turns}`
    /// `{memory}` `{template}`.
    pub update: String,
    /// V-focus: the focus block, slots `{focus}` `{focus}`.
    pub focus: String,
    /// V-memory: the memory provider block, slot `{json}`.
    pub memory: String,
    /// V-sysnote: the note appended to the system message.
    pub sysnote: String,
    /// V-fallback: the static fallback body, slots `{task}` `{previous_note}` `{completed}`
    /// `{blockers}` `{files}` `{dropped}` `{count}` `{reason}`.
    pub fallback: String,
    /// The fallback's note that a previous summary existed (`{previous_note}` is
    /// `"\n\n"` + this note).
    pub fallback_note: String,
}

/// hermes's opening marker, which our prefix keeps so both engines recognise a summary.
pub(crate) const OPENING_MARKER: &str = "[CONTEXT COMPACTION — REFERENCE ONLY]";

/// The file names, in field order (the names `COMPACTD_PROMPTS_DIR/hermes/` may hold).
pub const FILES: [&str; 11] = [
    "prefix.md",
    "preamble.md",
    "temporal.md",
    "template.md",
    "first.md",
    "update.md",
    "focus.md",
    "memory.md",
    "sysnote.md",
    "fallback.md",
    "fallback-note.md",
];

/// The slots each text has, in the order of [`FILES`]: a replacement file must use each
/// of them at least once (a `first.md` without `{turns}` would drop the conversation).
pub(crate) const SLOTS: [&[&str]; 11] = [
    &[],
    &[],
    &["date"],
    &["budget", "temporal"],
    &["preamble", "turns", "memory", "template"],
    &["preamble", "previous", "turns", "memory", "template"],
    &["focus"],
    &["json"],
    &[],
    &[
        "task",
        "previous_note",
        "completed",
        "blockers",
        "files",
        "dropped",
        "count",
        "reason",
    ],
    &[],
];

/// The shipped files, in the order of [`FILES`].
const BUILTIN: [&str; 11] = [
    include_str!("../../../prompts/hermes/prefix.md"),
    include_str!("../../../prompts/hermes/preamble.md"),
    include_str!("../../../prompts/hermes/temporal.md"),
    include_str!("../../../prompts/hermes/template.md"),
    include_str!("../../../prompts/hermes/first.md"),
    include_str!("../../../prompts/hermes/update.md"),
    include_str!("../../../prompts/hermes/focus.md"),
    include_str!("../../../prompts/hermes/memory.md"),
    include_str!("../../../prompts/hermes/sysnote.md"),
    include_str!("../../../prompts/hermes/fallback.md"),
    include_str!("../../../prompts/hermes/fallback-note.md"),
];

impl HermesTexts {
    /// The texts shipped with compactd.
    pub fn builtin() -> HermesTexts {
        Self::from_lookup(|_| None)
    }

    /// Each text from `lookup(file name)` when it answers, else the shipped one. Pure.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> HermesTexts {
        let mut texts = FILES
            .iter()
            .zip(BUILTIN)
            .map(|(name, builtin)| match lookup(name) {
                Some(s) => s.trim().to_string(),
                None => builtin.trim().to_string(),
            });
        let mut next = || texts.next().unwrap_or_default();
        HermesTexts {
            prefix: next(),
            preamble: next(),
            temporal: next(),
            template: next(),
            first: next(),
            update: next(),
            focus: next(),
            memory: next(),
            sysnote: next(),
            fallback: next(),
            fallback_note: next(),
        }
    }

    /// The texts in the order of [`FILES`].
    pub fn all(&self) -> [&str; 11] {
        [
            &self.prefix,
            &self.preamble,
            &self.temporal,
            &self.template,
            &self.first,
            &self.update,
            &self.focus,
            &self.memory,
            &self.sysnote,
            &self.fallback,
            &self.fallback_note,
        ]
    }

    /// What is wrong with these texts, if anything: a text missing one of its [`SLOTS`],
    /// or a prefix that does not begin with [`OPENING_MARKER`] (hermes would not
    /// recognise our summaries).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.prefix.starts_with(OPENING_MARKER) {
            out.push(format!("prefix.md must begin with {OPENING_MARKER}"));
        }
        for ((file, text), slots) in FILES.iter().zip(self.all()).zip(SLOTS) {
            for slot in slots {
                if !text.contains(&format!("{{{slot}}}")) {
                    out.push(format!("{file} lacks the slot {{{slot}}}"));
                }
            }
        }
        out
    }
}

/// Fills the `{name}` slots of `template` from `slots` in one left-to-right pass: values
/// are not rescanned, and a `{…}` whose name is not in `slots` stays as written.
pub fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let slot = after.find('}').and_then(|close| {
            let name = &after[..close];
            slots
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, value)| (close, *value))
        });
        match slot {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot names of a text, in order of appearance.
    fn slots_of(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close)
                    if !after[..close].is_empty()
                        && after[..close]
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c == '_') =>
                {
                    out.push(&after[..close]);
                    rest = &after[close + 1..];
                }
                _ => rest = after,
            }
        }
        out
    }

    #[test]
    fn builtin_texts_have_hermes_slots_in_hermes_order() {
        let t = HermesTexts::builtin();
        assert_eq!(slots_of(&t.prefix), Vec::<&str>::new());
        assert_eq!(slots_of(&t.preamble), Vec::<&str>::new());
        assert_eq!(slots_of(&t.temporal), ["date", "date"]);
        assert_eq!(slots_of(&t.template), ["budget", "temporal"]);
        assert_eq!(
            slots_of(&t.first),
            ["preamble", "turns", "memory", "template"]
        );
        assert_eq!(
            slots_of(&t.update),
            ["preamble", "previous", "turns", "memory", "template"]
        );
        assert_eq!(slots_of(&t.focus), ["focus", "focus"]);
        assert_eq!(slots_of(&t.memory), ["json"]);
        assert_eq!(slots_of(&t.sysnote), Vec::<&str>::new());
        assert_eq!(
            slots_of(&t.fallback),
            [
                "task",
                "previous_note",
                "completed",
                "blockers",
                "files",
                "dropped",
                "count",
                "reason"
            ]
        );
        assert_eq!(slots_of(&t.fallback_note), Vec::<&str>::new());
    }

    #[test]
    fn builtin_texts_have_no_problems_and_replacements_are_checked() {
        assert_eq!(HermesTexts::builtin().problems(), Vec::<String>::new());
        let t = HermesTexts::from_lookup(|name| match name {
            "first.md" => Some("{preamble}{memory}{template}".into()),
            "prefix.md" => Some("[SUMMARY]".into()),
            _ => None,
        });
        assert_eq!(
            t.problems(),
            [
                "prefix.md must begin with [CONTEXT COMPACTION — REFERENCE ONLY]",
                "first.md lacks the slot {turns}"
            ]
        );
    }

    #[test]
    fn builtin_prefix_keeps_the_opening_marker_and_names_the_historical_sections() {
        let t = HermesTexts::builtin();
        assert!(t.prefix.starts_with(OPENING_MARKER));
        for heading in [
            "## Historical Task Snapshot",
            "## Historical In-Progress State",
            "## Historical Pending User Asks",
            "## Historical Remaining Work",
        ] {
            assert!(t.prefix.contains(heading), "{heading}");
        }
    }

    /// The 12 headings of hermes's template (2247–2320), in order; the fallback adds
    /// `## Last Dropped Turns` before the last one (2064–2111).
    const HEADINGS: [&str; 12] = [
        "## Historical Task Snapshot",
        "## Goal",
        "## Constraints & Preferences",
        "## Completed Actions",
        "## Active State",
        "## Historical In-Progress State",
        "## Blocked",
        "## Key Decisions",
        "## Resolved Questions",
        "## Historical Pending User Asks",
        "## Relevant Files",
        "## Historical Remaining Work",
    ];

    fn headings(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with("## ")).collect()
    }

    #[test]
    fn template_and_fallback_keep_hermes_headings_in_order() {
        let t = HermesTexts::builtin();
        let mut template = HEADINGS.to_vec();
        template.push("## Critical Context");
        assert_eq!(headings(&t.template), template);
        let mut fallback = HEADINGS.to_vec();
        fallback.extend(["## Last Dropped Turns", "## Critical Context"]);
        assert_eq!(headings(&t.fallback), fallback);
        // hermes: the fallback starts with the snapshot heading and ends with its reason slot.
        assert!(t
            .fallback
            .starts_with("## Historical Task Snapshot\n{task}\n\n## Goal\n"));
        assert!(t.fallback.ends_with(".{reason}"));
    }

    #[test]
    fn template_ends_with_budget_then_temporal_between_two_lines() {
        // hermes 2318–2320: "…changed.\n" + T + "\nWrite only…" with T = "" or "\n…\n".
        let t = HermesTexts::builtin();
        let (before, after) = t.template.split_once("\n{temporal}\n").unwrap();
        assert!(before.contains("{budget}"));
        assert!(!before.ends_with('\n') && !after.starts_with('\n'));
        assert!(!after.contains('\n'));
    }

    #[test]
    fn wrappers_place_the_slots_as_hermes_does() {
        let t = HermesTexts::builtin();
        // hermes 2339–2349: preamble, "\n\n", instruction, "\n\n<label>\n" + C + M, …, S.
        assert!(t.first.starts_with("{preamble}\n\n"));
        assert!(t.first.contains("\n{turns}{memory}\n\n"));
        assert!(t.first.ends_with(":\n\n{template}"));
        // 2324–2336: the previous summary on the line after its label, then the turns.
        assert!(t.update.starts_with("{preamble}\n\n"));
        assert!(t.update.contains(":\n{previous}\n\n"));
        assert!(t.update.contains(":\n{turns}{memory}\n\n"));
        assert!(t.update.ends_with("\n\n{template}"));
    }

    #[test]
    fn texts_are_trimmed_files() {
        let t = HermesTexts::from_lookup(|name| {
            (name == "sysnote.md").then(|| "\n  [Note: ours]\n\n".to_string())
        });
        assert_eq!(t.sysnote, "[Note: ours]");
        assert_eq!(t.prefix, HermesTexts::builtin().prefix);
        assert!(!t.temporal.starts_with('\n') && !t.temporal.ends_with('\n'));
    }

    #[test]
    fn fill_is_one_pass_and_leaves_unknown_braces() {
        assert_eq!(
            fill("a {focus} b {focus} {x} {", &[("focus", "{focus}")]),
            "a {focus} b {focus} {x} {"
        );
        assert_eq!(fill("{a}{b}}", &[("a", "1"), ("b", "{a}")]), "1{a}}");
        assert_eq!(fill("{{a}}", &[("a", "é")]), "{é}");
        assert_eq!(fill("", &[("a", "1")]), "");
    }
}
