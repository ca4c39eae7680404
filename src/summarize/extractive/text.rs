//! String helpers every step shares: whitespace, cutting to a budget, code spans, and
//! [`Ordered`], the set of strings in order of first appearance. The bottom of the
//! folder: it imports none of its siblings.

use std::collections::HashSet;

use compactd_core::session::text::utf16_len;

/// Strings in order of first appearance, without repeats.
#[derive(Default)]
pub(super) struct Ordered {
    pub(super) items: Vec<String>,
    seen: HashSet<String>,
}

impl Ordered {
    pub(super) fn insert(&mut self, s: &str) -> bool {
        if self.seen.contains(s) {
            return false;
        }
        self.seen.insert(s.to_string());
        self.items.push(s.to_string());
        true
    }
}

pub(super) fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` UTF-16 units, cut at a word boundary when one is near, ending in `…`.
pub(super) fn shorten(s: &str, max: usize) -> String {
    if utf16_len(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let u = c.len_utf16();
        if units + u > max - 1 {
            break;
        }
        units += u;
        end = i + c.len_utf8();
    }
    let mut cut = &s[..end];
    if let Some(space) = cut.rfind(char::is_whitespace) {
        if space * 5 >= end * 4 {
            cut = &cut[..space];
        }
    }
    format!("{}…", cut.trim_end())
}

/// At most `max` UTF-16 units, the middle cut out (`…`): an error line says what failed at
/// its start and why at its end ("cp: /a/long/path: No such file or directory").
pub(super) fn shorten_middle(s: &str, max: usize) -> String {
    if utf16_len(s) <= max || max < 8 {
        return shorten(s, max);
    }
    let tail_units = (max - 1) * 2 / 5;
    let head = shorten(s, max - tail_units);
    let head = head.trim_end_matches('…');
    let mut units = 0;
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        units += c.len_utf16();
        if units > tail_units {
            break;
        }
        start = i;
    }
    format!("{head}…{}", &s[start..])
}

/// The largest char boundary at or below `max` bytes.
pub(super) fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A markdown code span that survives backticks in the text.
pub(super) fn code(s: &str) -> String {
    if !s.contains('`') {
        format!("`{s}`")
    } else if !s.contains("``") {
        format!("`` {s} ``")
    } else {
        s.to_string()
    }
}
