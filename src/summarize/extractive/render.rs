//! Rendering: fitting the items into the budget (least important first out, then the
//! must-keep items shortened), and the markdown. The top of the structured form: it asks
//! `sections` for the items and falls back on `short`; the sections and headings
//! themselves are described in `layout`.

use compactd_core::session::text::utf16_len;

use super::facts::Facts;
use super::layout::{Item, Layout, KEEP, PINNED};
use super::sections::{checkpoint_items, turn_prefix_items, Builder};
use super::short::compact;
use compactd_core::compaction::ledger::InForce;

const NONE: &str = "(none)";
/// Dropped pinned statements tried again in what room is left.
const REFILL_TRIES: usize = 64;

fn item_len(layout: Layout, item: &Item) -> usize {
    let marker = if item.raw {
        0
    } else {
        utf16_len(layout.marker(item.section))
    };
    marker + utf16_len(&item.text) + 1
}

fn section_len(
    layout: Layout,
    section: usize,
    items: &[Item],
    alive: &[bool],
    omit_empty: bool,
) -> usize {
    let head = utf16_len(layout.headings()[section]) + 1;
    let mut body = 0;
    let mut n = 0;
    let mut group = None;
    for (i, item) in items.iter().enumerate() {
        if item.section != section || !alive[i] {
            continue;
        }
        n += 1;
        if let Some((id, label)) = &item.group {
            if group != Some(*id) {
                body += group_len(label);
            }
            group = Some(*id);
        }
        body += if layout.numbered(section) && !item.raw {
            utf16_len(&format!("{n}. ")) + utf16_len(&item.text) + 1
        } else {
            item_len(layout, item)
        };
    }
    match (n, omit_empty) {
        (0, true) => 0,
        (0, false) => head + NONE.len(),
        _ => head + body - 1,
    }
}

/// A label line over a group of items.
fn group_len(label: &str) -> usize {
    utf16_len(label) + 1
}

/// The summary's length from its sections' lengths (an omitted section is 0 long and
/// has no blank line before it).
fn total(lens: &[usize]) -> usize {
    let shown = lens.iter().filter(|&&l| l > 0).count();
    lens.iter().sum::<usize>() + 2 * shown.saturating_sub(1)
}

/// The markdown; with `omit_empty`, sections with nothing alive are left out instead of
/// saying "(none)".
pub(super) fn render(layout: Layout, items: &[Item], alive: &[bool], omit_empty: bool) -> String {
    let mut out = String::new();
    for (s, heading) in layout.headings().iter().enumerate() {
        let mut lines = items
            .iter()
            .enumerate()
            .filter(|&(i, item)| item.section == s && alive[i])
            .peekable();
        if omit_empty && lines.peek().is_none() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(heading);
        out.push('\n');
        let mut n = 0;
        let mut group = None;
        for (_, item) in lines {
            if n > 0 {
                out.push('\n');
            }
            n += 1;
            if let Some((id, label)) = &item.group {
                if group != Some(*id) {
                    out.push_str(label);
                    out.push('\n');
                }
                group = Some(*id);
            }
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

/// The structured summary within `limit` UTF-16 units. When everything does not fit,
/// what goes is, in this order (the budget goes to what matters first):
/// 0. the details items can do without (a done request's outcome);
/// 1. the ordinary items, least important tier first (empty sections are then left out
///    rather than saying "(none)");
/// 2. the label lines over groups of statements (`SAFETY RULE:`);
/// 3. the must-keep items (the first and latest request, the blocker) are shortened;
/// 4. then dropped;
/// 5. then the pinned statements, in the ledger's budget order from the end.
///
/// The pinned statements a summary cannot hold are restored after it, within what is
/// left, by the verification (`compaction::ledger::check_summary`), or listed as left out.
pub(super) fn structured(f: &Facts, layout: Layout, limit: usize) -> String {
    let mut b = Builder::new(layout, InForce::of(&f.ledger));
    match layout {
        Layout::Checkpoint => checkpoint_items(&mut b, f),
        Layout::TurnPrefix => turn_prefix_items(&mut b, f),
    }
    let mut items = b.items;
    let sections = layout.headings().len();
    let mut alive = vec![true; items.len()];
    let lens_of = |items: &[Item], alive: &[bool], omit: bool| -> Vec<usize> {
        (0..sections)
            .map(|s| section_len(layout, s, items, alive, omit))
            .collect()
    };
    let mut lens = lens_of(&items, &alive, false);
    if total(&lens) <= limit {
        return render(layout, &items, &alive, false);
    }
    // Details an item can do without (a done request's outcome) go before any item does,
    // least important first.
    let mut order: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].brief.is_some())
        .collect();
    order.sort_by_key(|&i| (items[i].tier, items[i].order));
    for i in order {
        let s = items[i].section;
        let before = item_len(layout, &items[i]);
        if let Some(brief) = items[i].brief.take() {
            items[i].text = brief;
        }
        lens[s] = if layout.numbered(s) {
            section_len(layout, s, &items, &alive, false)
        } else {
            lens[s] - before + item_len(layout, &items[i])
        };
        if total(&lens) <= limit {
            return render(layout, &items, &alive, false);
        }
    }
    // The budget binds: empty sections go first.
    lens = lens_of(&items, &alive, true);
    let mut counts = vec![0usize; sections];
    let mut in_group: Vec<usize> = Vec::new();
    for item in &items {
        counts[item.section] += 1;
        if let Some((id, _)) = item.group {
            if in_group.len() <= id {
                in_group.resize(id + 1, 0);
            }
            in_group[id] += 1;
        }
    }
    // Lengths are updated per dropped item, not recomputed (linear in the items).
    let drop_in_order = |tiers: &dyn Fn(u8) -> bool,
                         items: &[Item],
                         alive: &mut [bool],
                         lens: &mut Vec<usize>,
                         counts: &mut Vec<usize>,
                         in_group: &mut Vec<usize>| {
        let mut order: Vec<usize> = (0..items.len())
            .filter(|&i| alive[i] && tiers(items[i].tier))
            .collect();
        order.sort_by_key(|&i| (items[i].tier, items[i].order));
        for i in order {
            if total(lens) <= limit {
                break;
            }
            alive[i] = false;
            let s = items[i].section;
            counts[s] -= 1;
            // The last item of a group takes its label line with it.
            let label = match &items[i].group {
                Some((id, label)) => {
                    in_group[*id] -= 1;
                    if in_group[*id] == 0 {
                        group_len(label)
                    } else {
                        0
                    }
                }
                None => 0,
            };
            lens[s] = if counts[s] == 0 {
                0
            } else if layout.numbered(s) {
                section_len(layout, s, items, alive, true)
            } else {
                lens[s] - item_len(layout, &items[i]) - label
            };
        }
    };
    drop_in_order(
        &|t| t < PINNED,
        &items,
        &mut alive,
        &mut lens,
        &mut counts,
        &mut in_group,
    );
    // Label lines are the grouping's, not a statement: they go before any statement or
    // must-keep item has to (each statement still says what it asks).
    if total(&lens) > limit && items.iter().any(|i| i.group.is_some()) {
        for item in &mut items {
            item.group = None;
        }
        in_group.clear();
        lens = lens_of(&items, &alive, true);
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
        lens = lens_of(&items, &alive, true);
    }
    drop_in_order(
        &|t| t == KEEP,
        &items,
        &mut alive,
        &mut lens,
        &mut counts,
        &mut in_group,
    );
    drop_in_order(
        &|t| t == PINNED,
        &items,
        &mut alive,
        &mut lens,
        &mut counts,
        &mut in_group,
    );
    // One long statement must not shut out several short ones: the dropped statements
    // that still fit go back in, most important first (a bounded number of tries).
    let mut dropped: Vec<usize> = (0..items.len())
        .filter(|&i| !alive[i] && items[i].tier == PINNED)
        .collect();
    dropped.sort_by_key(|&i| std::cmp::Reverse(items[i].order));
    for i in dropped.into_iter().take(REFILL_TRIES) {
        let s = items[i].section;
        alive[i] = true;
        let before = lens[s];
        lens[s] = section_len(layout, s, &items, &alive, true);
        if total(&lens) > limit {
            alive[i] = false;
            lens[s] = before;
        }
    }
    // Without a pinned statement to keep, a request that had to be cut is better told
    // in the one-paragraph form, which has no headings to pay for.
    let pinned = (0..items.len()).any(|i| alive[i] && items[i].tier == PINNED);
    let cut = step > 0 || (0..items.len()).any(|i| !alive[i] && items[i].tier == KEEP);
    if alive.iter().any(|&a| a) && total(&lens) <= limit && (pinned || !cut) {
        render(layout, &items, &alive, true)
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
