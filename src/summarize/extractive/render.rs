//! Rendering: fitting the items into the budget (least important first out, then the
//! must-keep items shortened), and the markdown. The top of the structured form: it asks
//! `sections` for the items and falls back on `short`; the sections and headings
//! themselves are described in `layout`.

use crate::session::text::utf16_len;

use super::facts::Facts;
use super::layout::{Item, Layout, KEEP};
use super::sections::{checkpoint_items, turn_prefix_items, Builder};
use super::short::compact;

const NONE: &str = "(none)";

fn item_len(layout: Layout, item: &Item) -> usize {
    let marker = if item.raw {
        0
    } else {
        utf16_len(layout.marker(item.section))
    };
    marker + utf16_len(&item.text) + 1
}

fn section_len(layout: Layout, section: usize, items: &[Item], alive: &[bool]) -> usize {
    let head = utf16_len(layout.headings()[section]) + 1;
    let mut body = 0;
    let mut n = 0;
    for (i, item) in items.iter().enumerate() {
        if item.section != section || !alive[i] {
            continue;
        }
        n += 1;
        body += if layout.numbered(section) && !item.raw {
            utf16_len(&format!("{n}. ")) + utf16_len(&item.text) + 1
        } else {
            item_len(layout, item)
        };
    }
    head + if n == 0 { NONE.len() } else { body - 1 }
}

pub(super) fn render(layout: Layout, items: &[Item], alive: &[bool]) -> String {
    let mut out = String::new();
    for (s, heading) in layout.headings().iter().enumerate() {
        if s > 0 {
            out.push_str("\n\n");
        }
        out.push_str(heading);
        out.push('\n');
        let mut n = 0;
        for (i, item) in items.iter().enumerate() {
            if item.section != s || !alive[i] {
                continue;
            }
            if n > 0 {
                out.push('\n');
            }
            n += 1;
            if !item.raw {
                if layout.numbered(s) {
                    out.push_str(&format!("{n}. "));
                } else {
                    out.push_str(layout.marker(s));
                }
            }
            out.push_str(&item.text);
        }
        if n == 0 {
            out.push_str(NONE);
        }
    }
    out
}

pub(super) fn structured(f: &Facts, layout: Layout, limit: usize) -> String {
    let mut b = Builder::new(layout);
    match layout {
        Layout::Checkpoint => checkpoint_items(&mut b, f),
        Layout::TurnPrefix => turn_prefix_items(&mut b, f),
    }
    let mut items = b.items;
    let sections = layout.headings().len();
    let mut alive = vec![true; items.len()];
    let mut lens: Vec<usize> = (0..sections)
        .map(|s| section_len(layout, s, &items, &alive))
        .collect();
    let mut counts = vec![0usize; sections];
    for item in &items {
        counts[item.section] += 1;
    }
    let total = |lens: &[usize]| lens.iter().sum::<usize>() + 2 * (lens.len() - 1);
    // Drop the least important items first.
    let mut order: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].tier != KEEP)
        .collect();
    order.sort_by_key(|&i| (items[i].tier, items[i].order));
    for i in order {
        if total(&lens) <= limit {
            break;
        }
        alive[i] = false;
        let s = items[i].section;
        counts[s] -= 1;
        lens[s] = if layout.numbered(s) {
            section_len(layout, s, &items, &alive)
        } else {
            let none = if counts[s] == 0 { NONE.len() + 1 } else { 0 };
            lens[s] - item_len(layout, &items[i]) + none
        };
    }
    // Then shorten what must stay.
    let mut step = 0;
    while total(&lens) > limit {
        let mut changed = false;
        for (i, item) in items.iter_mut().enumerate() {
            if alive[i] && item.tier == KEEP {
                if let Some(s) = item.shorter.get(step) {
                    item.text = s.clone();
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
        step += 1;
        lens = (0..sections)
            .map(|s| section_len(layout, s, &items, &alive))
            .collect();
    }
    let text = render(layout, &items, &alive);
    if utf16_len(&text) <= limit {
        text
    } else {
        compact(f, limit)
    }
}

#[cfg(test)]
mod tests {
    use crate::summarize::extractive::summarize;
    use crate::summarize::extractive::tests::headings;
    use crate::summarize::templates::tests::CONVERSATION;
    use crate::summarize::Prompts;

    #[test]
    fn turn_prefix_has_the_turn_prefix_headings() {
        let r = Prompts::builtin().turn_prefix_request(CONVERSATION, 16384);
        let t = summarize(&r).text;
        assert_eq!(
            headings(&t),
            [
                "## Original Request",
                "## Early Progress",
                "## Context for Suffix"
            ]
        );
        assert!(t.starts_with("## Original Request\n- Add a --verbose flag"));
        assert!(t.contains("- Edited `src/cli.rs`"));
        assert!(t.contains("cannot find value `verbose` in this scope"));
        assert!(t.contains("- Last step: The test build fails"));
    }
}
