//! The model path's two-way channel: the user's standing statements in force, numbered
//! for the summarizer's prompt, and the short trailer in which a model may name those a
//! later message replaced.
//!
//! ```text
//! <standing-statements>            (in the prompt)
//! S1. Never push to main.
//! S2. Deploy window: Tuesdays only.
//! </standing-statements>
//!
//! …the model's summary…            (in the answer)
//! Replaced: S2
//! ```
//!
//! Decisions:
//! * Only the user's standing statements are numbered (rules, constraints, preferences,
//!   goal states, facts): they are what the summary carries verbatim beside the model's
//!   narrative, so they are what a model can help resolve. Oldest first, as the ledger
//!   holds them; the numbers are positions in this list, stable within one compaction.
//! * The list is bounded ([`Standing::of`]'s `max_units`): a ledger of thousands of
//!   statements does not become a prompt of thousands of lines.
//! * The trailer is read from the end of the answer only, and only the form the prompt
//!   asks for: `Replaced:` and numbers (`S2`, `[S2]`, `2`), with `and` and `none` allowed.
//!   Reading stops at the first other word, so "S2 (by S5)" names S2 alone. A number not in
//!   the list is ignored; no trailer names nothing. The line is removed either way, so a
//!   continuing agent never reads it.
//! * What a model names is withdrawn in the ledger ([`Ledger::withdraw_named`]) with a
//!   note saying who judged it, so it leaves the summary and stays in `details`.

use super::model::{Ledger, SupersededBy};
use super::words::collapse_ws;
use super::{Kind, Speaker};

/// The word the trailer starts with.
pub const TRAILER_KEYWORD: &str = "Replaced";

/// What a statement the summarizer named is marked withdrawn by.
pub const NAMED_BY_SUMMARIZER: &str = "named as replaced by the summarizing model";

/// The standing statements a prompt lists, numbered from 1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// Item ids, in the order they are numbered.
    ids: Vec<String>,
    /// `S1. text` lines (continuation lines indented), ready for the prompt.
    block: String,
}

impl Standing {
    /// The user's standing statements in force in `ledger`, oldest first, as many as fit
    /// in `max_units` UTF-16 units of block.
    pub fn of(ledger: &Ledger, max_units: usize) -> Standing {
        let mut out = Standing::default();
        let mut used = 0usize;
        for item in ledger
            .active()
            // A pinned entry is the user's choice: no model withdraws it.
            .filter(|i| i.kind.is_standing() && i.kind != Kind::Entry && i.origin == Speaker::User)
        {
            let line = numbered_line(out.ids.len() + 1, &item.text);
            let cost = line.encode_utf16().count();
            if used + cost > max_units {
                break;
            }
            used += cost;
            out.block.push_str(&line);
            out.ids.push(item.id.clone());
        }
        if out.block.ends_with('\n') {
            out.block.pop();
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The numbered lines, without a final newline.
    pub fn block(&self) -> &str {
        &self.block
    }

    /// Withdraws in `ledger` the statements these numbers name, as the summarizing model's
    /// judgement ([`NAMED_BY_SUMMARIZER`]); how many changed.
    pub fn withdraw_in(&self, ledger: &mut Ledger, numbers: &[usize]) -> usize {
        let ids = self.ids_named(numbers);
        if ids.is_empty() {
            return 0;
        }
        ledger.withdraw_named(&ids, NAMED_BY_SUMMARIZER)
    }

    /// The ids of the statements these numbers name; numbers not in the list are ignored.
    pub fn ids_named(&self, numbers: &[usize]) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for &n in numbers {
            if let Some(id) = n.checked_sub(1).and_then(|i| self.ids.get(i)) {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
        }
        ids
    }
}

fn numbered_line(n: usize, text: &str) -> String {
    let mut line = format!("S{n}. ");
    for (k, l) in text.trim().lines().enumerate() {
        if k > 0 {
            line.push_str("\n    ");
        }
        line.push_str(l.trim_end());
    }
    line.push('\n');
    line
}

/// A model's answer without its trailer, and the numbers the trailer named (empty when
/// there was none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered<'a> {
    pub text: &'a str,
    pub named: Vec<usize>,
}

/// Splits the trailer off `answer`: trailing blank lines and `Replaced:` lines at its end.
pub fn split_trailer(answer: &str) -> Answered<'_> {
    let mut end = answer.trim_end().len();
    let mut named = Vec::new();
    let mut found = false;
    loop {
        let head = &answer[..end];
        let start = head.rfind('\n').map_or(0, |i| i + 1);
        let Some(numbers) = trailer_numbers(&head[start..]) else {
            break;
        };
        found = true;
        // Lines are read from the end; keep the numbers in reading order.
        named.splice(0..0, numbers);
        end = answer[..start].trim_end().len();
        if start == 0 {
            break;
        }
    }
    if !found {
        return Answered {
            text: answer,
            named,
        };
    }
    let mut seen = Vec::new();
    named.retain(|n| {
        let fresh = !seen.contains(n);
        seen.push(*n);
        fresh
    });
    Answered {
        text: &answer[..end],
        named,
    }
}

/// The numbers a trailer line names, or `None` when the line is no trailer.
fn trailer_numbers(line: &str) -> Option<Vec<usize>> {
    let decoration = |c: char| matches!(c, '*' | '_' | '`' | '>' | '-' | '#') || c.is_whitespace();
    let line = line.trim_matches(decoration);
    let keyword = line.get(..TRAILER_KEYWORD.len())?;
    if !keyword.eq_ignore_ascii_case(TRAILER_KEYWORD) {
        return None;
    }
    // The colon is part of the form: "Replaced the parser …" is prose.
    let rest = line[TRAILER_KEYWORD.len()..]
        .trim_start_matches(decoration)
        .strip_prefix(':')?
        .trim_matches(decoration);
    let mut numbers = Vec::new();
    let mut tokens = 0;
    for token in collapse_ws(rest).split([' ', ',', ';']) {
        let t = token.trim_matches(|c: char| matches!(c, '[' | ']' | '.' | '`' | '*' | '#'));
        if t.is_empty() || t.eq_ignore_ascii_case("and") {
            continue;
        }
        tokens += 1;
        if t.eq_ignore_ascii_case("none") || t.eq_ignore_ascii_case("(none)") {
            break;
        }
        let digits = t.strip_prefix(['S', 's']).unwrap_or(t);
        match digits.parse::<usize>() {
            Ok(n) if !digits.starts_with('+') => numbers.push(n),
            // Prose after the keyword and its colon: no trailer, unless numbers came first.
            _ if tokens == 1 => return None,
            _ => break,
        }
    }
    Some(numbers)
}

impl Ledger {
    /// Marks the active items with these ids withdrawn by `by` (what judged them
    /// replaced); returns how many changed. Unknown ids are ignored.
    pub fn withdraw_named(&mut self, ids: &[String], by: &str) -> usize {
        let mut changed = 0;
        for item in self.items_mut() {
            if item.is_active() && ids.contains(&item.id) {
                item.supersede(SupersededBy {
                    item_id: None,
                    text: by.to_string(),
                    entry_id: None,
                });
                changed += 1;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::resolution_tests::ledger;
    use crate::compaction::ledger::InForce;

    fn standing(texts: &[&str]) -> (Ledger, Standing) {
        let l = ledger(texts);
        let s = Standing::of(&l, usize::MAX);
        (l, s)
    }

    #[test]
    fn standing_statements_are_numbered_oldest_first_and_requests_are_not() {
        let (l, s) = standing(&[
            "Never push to main.",
            "Add a --verbose flag to the CLI.",
            "The budget cap is $500 total.",
        ]);
        assert_eq!(s.len(), 2, "{l:#?}");
        assert_eq!(
            s.block(),
            "S1. Never push to main.\nS2. The budget cap is $500 total."
        );
        assert_eq!(s.ids_named(&[2]), [l.items()[2].id.clone()]);
    }

    #[test]
    fn the_list_is_bounded() {
        let (l, _) = standing(&["Never push to main.", "Always run cargo fmt first."]);
        let one = Standing::of(&l, "S1. Never push to main.\n".len());
        assert_eq!(one.len(), 1);
        assert!(Standing::of(&l, 3).is_empty());
    }

    #[test]
    fn invented_and_repeated_numbers_name_nothing_more() {
        let (_, s) = standing(&["Never push to main.", "Always run cargo fmt first."]);
        assert_eq!(s.ids_named(&[0, 3, 99]), Vec::<String>::new());
        assert_eq!(s.ids_named(&[2, 2]).len(), 1);
    }

    #[test]
    fn the_trailer_is_read_in_the_forms_a_model_writes_it() {
        let cases: &[(&str, &[usize])] = &[
            ("## Goal\nShip it.\n\nReplaced: S2, S5", &[2, 5]),
            ("## Goal\nShip it.\nreplaced: s1 and s3\n", &[1, 3]),
            ("## Goal\nShip it.\n\n**Replaced:** [S4]\n\n", &[4]),
            ("## Goal\nShip it.\n`Replaced: S2`", &[2]),
            ("## Goal\nShip it.\nReplaced: 2; 3.", &[2, 3]),
            ("## Goal\nShip it.\nReplaced: none", &[]),
            ("## Goal\nShip it.\nReplaced: S2 (by S5)", &[2]),
            ("## Goal\nShip it.\nReplaced: S1\nReplaced: S1, S2", &[1, 2]),
        ];
        for (answer, want) in cases {
            let a = split_trailer(answer);
            assert_eq!(a.text, "## Goal\nShip it.", "{answer:?}");
            assert_eq!(a.named, *want, "{answer:?}");
        }
    }

    #[test]
    fn an_answer_without_a_trailer_is_left_as_it_is() {
        for answer in [
            "## Goal\nShip it.\n",
            "## Key Decisions\n- Replaced the parser with a hand-written one.",
            "## Goal\nReplaced: S1\nmore text after it",
            "## Notes\nReplaced: the old parser, as asked.",
        ] {
            let a = split_trailer(answer);
            assert_eq!(a.text, answer);
            assert!(a.named.is_empty());
        }
    }

    #[test]
    fn a_named_statement_is_withdrawn_and_leaves_what_the_agent_reads() {
        let (mut l, s) = standing(&["Never push to main.", "Always deploy on Tuesdays only."]);
        let ids = s.ids_named(&split_trailer("Done.\nReplaced: S2").named);
        assert_eq!(l.withdraw_named(&ids, NAMED_BY_SUMMARIZER), 1);
        let gone = l.get(&ids[0]).unwrap();
        assert_eq!(
            gone.superseded_by.as_ref().unwrap().text,
            NAMED_BY_SUMMARIZER
        );
        assert_eq!(l.active().count(), 1);
        let text = InForce::of(&l).resolve_lines("- Always deploy on Tuesdays only.\n- Ship.\n");
        assert_eq!(text, "- Ship.\n");
        // Again: nothing left to change.
        assert_eq!(l.withdraw_named(&ids, NAMED_BY_SUMMARIZER), 0);
    }
}
