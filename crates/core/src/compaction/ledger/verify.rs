//! Verification: does a summary still carry a pinned item?
//!
//! Decisions:
//! * An item with values is present when **every** value appears in the summary exactly:
//!   case-sensitive (identifiers, paths and names differ by case), tolerant of white space
//!   (any run of white space matches any other; `500 MB` also matches `500MB`), and on
//!   token boundaries (`8080` is not found in `18080`, `$500` not in `$5000`). The wording
//!   around the values may differ freely.
//! * An item whose values are all file paths (`src/export.ts`: a request naming the file
//!   it is about) must also pass the word test below: the summary's file lists carry the
//!   path whatever happened to the request ("Goal: build the exporter for the nimbus
//!   service. Read src/rows.ts." is not kept by a line `src/rows.ts`).
//! * An item without values is present when the summary shares enough of its
//!   *distinctive words* (stemmed content words of four or more characters, or with a
//!   digit; see `words::distinctive_words`): at least 60 % of them, rounded up, and at
//!   least one. An item with no distinctive word at all is present only if its whole
//!   text appears (case-insensitive, white space collapsed).
//! * Only what a summary says counts: a paraphrase that keeps the words but flips the
//!   polarity ("push to main" for "never push to main") still counts as present — the
//!   known limit of a word test.

use std::collections::BTreeSet;

use super::kind::Kind;
use super::model::PinnedItem;
use super::words::{collapse_ws, distinctive_words, word_set};

/// Share of an item's distinctive words a summary must contain.
pub const WORD_OVERLAP: f64 = 0.6;

/// A summary prepared once for checking many items.
pub struct SummaryText {
    collapsed: String,
    lower: String,
    words: BTreeSet<String>,
}

impl SummaryText {
    pub fn new(summary: &str) -> Self {
        let collapsed = collapse_ws(summary);
        SummaryText {
            lower: collapsed.to_lowercase(),
            words: word_set(summary),
            collapsed,
        }
    }

    /// Whether the item is carried by this summary (see the module docs).
    pub fn carries(&self, item: &PinnedItem) -> bool {
        if item.kind == Kind::Entry {
            // Pinned by the user: verbatim, white space aside.
            return self.collapsed.contains(&collapse_ws(&item.text));
        }
        if item.values.is_empty() {
            self.carries_words(&item.text)
        } else {
            item.values.iter().all(|v| self.contains_value(v))
                && (!item.values.iter().all(|v| is_file_path(v)) || self.carries_words(&item.text))
        }
    }

    /// Whether `value` appears exactly, white space aside, on token boundaries.
    pub fn contains_value(&self, value: &str) -> bool {
        let v = collapse_ws(value);
        if v.is_empty() {
            return true;
        }
        contains_bounded(&self.collapsed, &v)
            || (v.contains(' ') && contains_bounded(&self.collapsed, &v.replace(' ', "")))
    }

    /// The distinctive-word overlap test for items without values.
    pub(crate) fn carries_words(&self, text: &str) -> bool {
        let distinctive = distinctive_words(text);
        if distinctive.is_empty() {
            let t = collapse_ws(text).to_lowercase();
            let t = t.trim_end_matches(['.', '!', '?']);
            return self.lower.contains(t);
        }
        let found = distinctive
            .iter()
            .filter(|w| self.words.contains(*w))
            .count();
        let need = ((distinctive.len() as f64 * WORD_OVERLAP).ceil() as usize).max(1);
        found >= need
    }
}

/// Whether the item is carried by `summary`.
pub fn is_present(item: &PinnedItem, summary: &str) -> bool {
    SummaryText::new(summary).carries(item)
}

/// `src/rows.ts`, `README.md`: a file name with a short alphabetic extension (not a
/// version, a URL or a host name).
fn is_file_path(v: &str) -> bool {
    if v.contains("://") {
        return false;
    }
    let name = v.rsplit(['/', '\\']).next().unwrap_or(v);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=4).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphabetic())
    })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn contains_bounded(hay: &str, needle: &str) -> bool {
    let first = needle.chars().next().is_some_and(is_word_char);
    let last = needle.chars().next_back().is_some_and(is_word_char);
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        let glued_before = first && before.is_some_and(is_word_char);
        let glued_after = last && after.is_some_and(is_word_char);
        !(glued_before || glued_after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::{Kind, Speaker};

    fn item(text: &str, values: &[&str]) -> PinnedItem {
        let values = values.iter().map(|v| v.to_string()).collect();
        PinnedItem::new(Kind::Rule, Speaker::User, text, values, None, None)
    }

    #[test]
    fn every_value_must_appear_exactly_and_wording_may_differ() {
        let it = item("Budget cap is $500 total. Never exceed it.", &["$500"]);
        assert!(is_present(&it, "Spending must stay below the $500 cap."));
        assert!(!is_present(&it, "Spending must stay below the budget cap."));
        assert!(!is_present(&it, "The cap is $5000."));
        let two = item("Use port 9090 on db.internal", &["9090", "db.internal"]);
        assert!(!is_present(&two, "Port 9090."));
    }

    #[test]
    fn an_item_whose_values_are_only_file_paths_needs_its_words_too() {
        let it = item(
            "Goal: build a CSV exporter for the mernaldu billing service. Read src/rows.ts.",
            &["src/rows.ts"],
        );
        assert!(!is_present(&it, "<read-files>\nsrc/rows.ts\n</read-files>"));
        assert!(is_present(
            &it,
            "Goal: the mernaldu billing service needs a CSV exporter; read src/rows.ts."
        ));
        // Versions, hosts and URLs are not file paths.
        assert!(!is_file_path("3.31.972"));
        assert!(!is_file_path("db-x.internal"));
        assert!(!is_file_path("https://x.dev/a.ts"));
        assert!(is_file_path("README.md"));
    }

    #[test]
    fn values_are_case_sensitive() {
        let it = item("The key is in STRIPE_API_KEY", &["STRIPE_API_KEY"]);
        assert!(!is_present(&it, "the key is in stripe_api_key"));
    }

    #[test]
    fn values_tolerate_white_space_but_not_partial_tokens() {
        let it = item("Never exceed 500 MB of memory", &["500 MB"]);
        assert!(is_present(&it, "memory cap:\n500\n  MB"));
        assert!(is_present(&it, "memory cap 500MB"));
        let port = item("use port 80", &["80"]);
        assert!(!is_present(&port, "use port 8080"));
        assert!(is_present(&port, "port `80`."));
    }

    #[test]
    fn valueless_items_need_sixty_percent_of_their_distinctive_words() {
        // Distinctive: force, push, main, branch ("never", "to", "the" are stop words);
        // three of four are needed.
        let it = item("Never force push to the main branch.", &[]);
        assert!(is_present(
            &it,
            "Rule: no force-pushing onto the main branch."
        ));
        assert!(!is_present(&it, "Keep the branch tidy."));
    }

    #[test]
    fn an_item_without_distinctive_words_needs_its_whole_text() {
        let it = item("Do it now.", &[]);
        assert!(is_present(&it, "The user said: do it now!"));
        assert!(!is_present(&it, "Now."));
    }
}
