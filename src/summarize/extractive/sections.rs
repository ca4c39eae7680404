//! The sections of the summary: what each one says, taken from the facts and the earlier
//! summaries, and how important each item is (its tier) when the budget is tight.

use std::collections::HashSet;

use super::diagnostics::{command_key, is_viewer, main_command};
use super::facts::{Facts, Failure};
use super::layout::{Item, Layout, Sec, KEEP, PINNED};
use super::paths::is_covered;
use super::pinned::{decisions, open_errors, standing};
use super::text::{code, collapse_ws, shorten, shorten_middle};
use compactd_core::compaction::ledger::InForce;
use compactd_core::compaction::ledger::{budget_order, is_labelled, split_label, Kind};

/// The items of every section in the order they were added; an item already in its
/// section is not added twice.
pub(super) struct Builder {
    layout: Layout,
    pub(super) items: Vec<Item>,
    seen: HashSet<(usize, String)>,
    seq: usize,
    /// Instructions listed as pinned because they carry a pinned statement.
    quoted: Vec<String>,
    /// The ledger's resolution, applied to every item added.
    in_force: InForce,
}

impl Builder {
    pub(super) fn new(layout: Layout, in_force: InForce) -> Builder {
        Builder {
            layout,
            items: Vec::new(),
            seen: HashSet::new(),
            seq: 0,
            quoted: Vec::new(),
            in_force,
        }
    }

    fn add(&mut self, sec: Sec, text: String, tier: u8, tail_first: bool) {
        self.add_item(sec, text, false, tier, tail_first, Vec::new());
    }

    fn add_item(
        &mut self,
        sec: Sec,
        text: String,
        raw: bool,
        tier: u8,
        tail_first: bool,
        shorter: Vec<String>,
    ) {
        let item = Item {
            section: self.layout.section(sec),
            text,
            raw,
            tier,
            order: 0,
            shorter,
            brief: None,
            group: None,
        };
        if self.insert(item) {
            // Ordered by insertion: the oldest is dropped first, or the newest first.
            self.seq += 1;
            let last = self.items.last_mut().expect("just inserted");
            last.order = if tail_first {
                usize::MAX - self.seq
            } else {
                self.seq
            };
        }
    }

    /// An item with its drop order given (lower first), under a label line if any.
    fn add_ordered(
        &mut self,
        sec: Sec,
        text: String,
        tier: u8,
        order: usize,
        group: Option<(usize, String)>,
    ) {
        self.insert(Item {
            section: self.layout.section(sec),
            text,
            raw: false,
            tier,
            order,
            shorter: Vec::new(),
            brief: None,
            group,
        });
    }

    /// An item whose text ends in a detail it can do without: `brief` is the text without
    /// it, taken when room is short before any item is dropped.
    fn add_detailed(&mut self, sec: Sec, text: String, brief: String, tier: u8) {
        self.add(sec, text, tier, false);
        let section = self.layout.section(sec);
        if let Some(last) = self.items.last_mut().filter(|i| i.section == section) {
            if last.shorter.is_empty() && last.text.starts_with(brief.as_str()) {
                last.brief = Some(brief);
            }
        }
    }

    /// Adds `item` unless its section already says the same (its label line counted) or it
    /// states only what was withdrawn; whether it was added. An item that also states
    /// something withdrawn is added without it.
    fn insert(&mut self, mut item: Item) -> bool {
        match self.in_force.resolve(&item.text) {
            None => return false,
            Some(t) if t != collapse_ws(&item.text) => {
                item.text = t;
                item.shorter.clear();
                item.brief = None;
            }
            Some(_) => {}
        }
        let text = collapse_ws(&item.text).to_lowercase();
        let key = match &item.group {
            Some((_, label)) => format!("{} {text}", label.to_lowercase()),
            None => text,
        };
        if key.is_empty() || !self.seen.insert((item.section, key)) {
            return false;
        }
        self.items.push(item);
        true
    }

    pub(super) fn earlier(&mut self, f: &Facts, secs: &[Sec], tier: u8, tail_first: bool) {
        for e in f.earlier.iter().filter(|e| secs.contains(&e.sec)) {
            self.add_item(e.sec, e.text.clone(), e.raw, tier, tail_first, Vec::new());
        }
    }
}

/// Distinct errors met, listed in the critical context (the newest).
const ERRORS_MET: usize = 24;
/// Commands named in the critical context.
const COMMANDS: usize = 5;
/// Files mentioned (not read or changed) named in the critical context.
const MENTIONED: usize = 8;
/// Notes on what changed, per file.
const NOTES: usize = 2;

fn error_text(e: &Failure, line_max: usize) -> String {
    format!(
        "{} failed: {}",
        e.what,
        code(&shorten_middle(&e.line, line_max))
    )
}

fn blocker_item(b: &mut Builder, f: &Facts, sec: Sec) {
    if let Some(e) = f.blocker() {
        let shorter = [200, 100, 50].iter().map(|&n| error_text(e, n)).collect();
        b.add_item(sec, error_text(e, 500), false, KEEP, false, shorter);
    }
}

/// Progress by file: each file changed once, with what the assistant said it was
/// changing; then the commits. Commands run are not progress (see `command_items`).
fn file_items(b: &mut Builder, f: &Facts, sec: Sec) {
    for m in f.modified.iter().filter(|m| m.done()) {
        let notes: Vec<String> = pick_notes(&m.notes)
            .iter()
            .map(|n| shorten(&collapse_ws(n), 140))
            .collect();
        let bare = format!("{} {}", m.verb(), code(&m.path));
        let text = if notes.is_empty() {
            bare.clone()
        } else {
            format!("{bare}: {}", notes.join(" / "))
        };
        b.add_item(sec, text, false, 7, true, vec![bare]);
    }
    for c in &f.commits {
        b.add(sec, format!("Committed: \"{}\"", shorten(c, 160)), 7, true);
    }
}

/// The first and the last note: how the work on a file started and where it ended.
fn pick_notes(notes: &[String]) -> Vec<&String> {
    match notes {
        [] => Vec::new(),
        [one] => vec![one],
        [first, .., last] => vec![first, last].into_iter().take(NOTES).collect(),
    }
}

/// The user's standing instructions, verbatim from the pinned ledger, in conversation
/// order; goal states under the goal when the layout has one. They outrank everything
/// but the budget itself (tier [`PINNED`]); among them the ledger's [`budget_order`]
/// decides which go first when not all fit.
///
/// In a checkpoint, statements labelled alike (`SAFETY RULE: …`) are listed under one
/// label line, after the unlabelled ones: the label is said once, not once per item, and
/// each item still reads as the user wrote it under its label.
fn standing_items(b: &mut Builder, f: &Facts, sec: Sec) {
    let items: Vec<_> = standing(&f.ledger)
        .into_iter()
        .filter(|i| {
            let t = collapse_ws(&i.text);
            is_labelled(&i.text) || !b.quoted.iter().any(|q| q.contains(t.as_str()))
        })
        .collect();
    let mut rank = vec![0; items.len()];
    for (r, p) in budget_order(&items).into_iter().enumerate() {
        rank[p] = r;
    }
    let grouping = b.layout == Layout::Checkpoint;
    // (target section, (label, body) when grouped, position); grouped ones after the others.
    let placed: Vec<(Sec, Option<LabelAndBody<'_>>, usize)> = items
        .iter()
        .enumerate()
        .map(|(p, item)| {
            let target = if item.kind == Kind::Goal && grouping {
                Sec::Goal
            } else {
                sec
            };
            (target, split_label(&item.text).filter(|_| grouping), p)
        })
        .collect();
    let mut labels: Vec<String> = Vec::new();
    let keys: Vec<Option<usize>> = placed
        .iter()
        .map(|(_, split, _)| {
            let (l, _) = (*split)?;
            Some(
                match labels.iter().position(|x| x.eq_ignore_ascii_case(l)) {
                    Some(i) => i,
                    None => {
                        labels.push(l.to_string());
                        labels.len() - 1
                    }
                },
            )
        })
        .collect();
    // Groups in the order of their most important statement (safety rules before notes).
    let mut group_rank = vec![usize::MAX; labels.len()];
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = *k {
            group_rank[k] = group_rank[k].min(rank[placed[i].2]);
        }
    }
    let mut order: Vec<usize> = (0..placed.len()).collect();
    order.sort_by_key(|&i| {
        (
            keys[i].map_or(0, |k| group_rank[k].saturating_add(1)),
            placed[i].2,
        )
    });
    for i in order {
        let (target, split, p) = placed[i];
        let text = split.map_or(items[p].text.as_str(), |(_, body)| body);
        let group = keys[i].map(|k| (k, labels[k].clone()));
        // The most important is dropped last: the highest order.
        b.add_ordered(
            target,
            collapse_ws(text),
            PINNED,
            usize::MAX - rank[p],
            group,
        );
    }
}

/// A statement's label as written and what follows it (`split_label`).
type LabelAndBody<'a> = (&'a str, &'a str);

fn decision_items(b: &mut Builder, f: &Facts, sec: Sec) {
    let all: Vec<&str> = decisions(&f.ledger).collect();
    for d in &all[all.len().saturating_sub(8)..] {
        b.add(sec, shorten(&collapse_ws(d), 300), 8, true);
    }
}

fn context_items(b: &mut Builder, f: &Facts) {
    for a in &f.additional {
        b.add(Sec::Critical, shorten(a, 500), 10, true);
    }
    // The last error, when open, is the blocker (its own item); one a later run resolved
    // is history. Earlier failures no identical call has since fixed are stated as the
    // ledger words them, so the verification finds them here.
    let open: Vec<&str> = open_errors(&f.ledger).collect();
    for e in &open {
        b.add(Sec::Critical, format!("Open error: {e}"), 10, false);
    }
    // Every distinct error met, resolved or not: what went wrong once teaches the next
    // attempt (the newest kept longest).
    let blocker = f.blocker().map(|e| e.line.as_str());
    let met = &f.errors[f.errors.len().saturating_sub(ERRORS_MET)..];
    for e in met {
        if Some(e.line.as_str()) == blocker || open.iter().any(|o| o.contains(&e.line)) {
            continue;
        }
        let since = if e.resolved { " (passed since)" } else { "" };
        let what = shorten_middle(&e.what, 50);
        let line = code(&shorten_middle(&e.line, 120));
        b.add(
            Sec::Critical,
            format!("Error met: {what} failed: {line}{since}"),
            10,
            false,
        );
    }
}

/// A few representative commands: the programs run most often (the project's build and
/// test commands), not the greps, listings and file moves; per program (`npx tsx`,
/// `npm run`) its shortest form.
fn command_items(b: &mut Builder, f: &Facts) {
    // (program, shortest form, runs, last run)
    let mut counted: Vec<(Vec<String>, String, usize, usize)> = Vec::new();
    for (i, c) in f.commands.items.iter().enumerate() {
        let words = main_command(c);
        if is_viewer(&words) || is_housekeeping(&words) || c.contains('\n') {
            continue;
        }
        let key = command_key(c);
        if key.is_empty() {
            continue;
        }
        match counted.iter_mut().find(|e| e.0 == words) {
            Some(e) => {
                if key.len() < e.1.len() {
                    e.1 = key;
                }
                e.2 += 1;
                e.3 = i;
            }
            None => counted.push((words, key, 1, i)),
        }
    }
    counted.sort_by(|a, b| b.2.cmp(&a.2).then(b.3.cmp(&a.3)));
    let shown: Vec<String> = counted
        .iter()
        .take(COMMANDS)
        .map(|e| code(&shorten(&e.1, 100)))
        .collect();
    if !shown.is_empty() {
        b.add(
            Sec::Critical,
            format!("Commands: {}", shown.join(", ")),
            3,
            false,
        );
    }
}

/// Commands that move files around or record work (git, mv, rm, mkdir, …): what they
/// did shows in the files and the commits, and they teach nothing about the project.
fn is_housekeeping(words: &[String]) -> bool {
    words.first().is_some_and(|w| {
        matches!(
            w.as_str(),
            "git"
                | "mv"
                | "rm"
                | "cp"
                | "mkdir"
                | "rmdir"
                | "touch"
                | "chmod"
                | "ln"
                | "sed"
                | "cd"
                | "pwd"
                | "which"
                | "sleep"
                | "kill"
                | "pkill"
                | "for"
                | "while"
                | "if"
                | "export"
                | "source"
        )
    })
}

/// The files: read (changed files are listed with the progress), then a few others
/// mentioned, each file once whatever its spelling.
fn path_items(b: &mut Builder, f: &Facts) {
    let mut known: Vec<&str> = f.modified.iter().map(|m| m.path.as_str()).collect();
    let mut read: Vec<String> = Vec::new();
    for p in &f.read.items {
        if !is_covered(p, known.iter().copied()) {
            known.push(p);
            read.push(code(p));
        }
    }
    if !read.is_empty() {
        b.add(
            Sec::Critical,
            format!("Read: {}", read.join(", ")),
            2,
            false,
        );
    }
    let mut others: Vec<&str> = Vec::new();
    // Longest first, so a short spelling is recognized as a longer path's end.
    let mut mentioned: Vec<&String> = f.mentioned.items.iter().collect();
    mentioned.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in mentioned {
        if !is_covered(p, known.iter().copied()) && !is_covered(p, others.iter().copied()) {
            others.push(p);
        }
    }
    // Back in order of first mention, the first few.
    let listed: Vec<String> = f
        .mentioned
        .items
        .iter()
        .filter(|p| others.contains(&p.as_str()))
        .take(MENTIONED)
        .map(|p| code(p))
        .collect();
    if !listed.is_empty() {
        b.add(
            Sec::Critical,
            format!("Also mentioned: {}", listed.join(", ")),
            0,
            false,
        );
    }
}

/// The sections an earlier summary had for the state of the work: stale once the work
/// shown here was finished.
fn earlier_state(b: &mut Builder, f: &Facts, secs: &[Sec], tier: u8, tail_first: bool) {
    if !f.finished() {
        b.earlier(f, secs, tier, tail_first);
    }
}

pub(super) fn checkpoint_items(b: &mut Builder, f: &Facts) {
    let earlier_goal = f.earlier.iter().any(|e| e.sec == Sec::Goal);
    earlier_goal_items(b, f);
    request_items(b, f, !earlier_goal);
    b.earlier(f, &[Sec::Constraints], 9, true);
    standing_items(b, f, Sec::Constraints);
    b.earlier(f, &[Sec::Done], 7, false);
    file_items(b, f, Sec::Done);
    // A turn that ended with the assistant's reply is not in progress: the reply is
    // context for the user's next message.
    match (&f.last_assistant, f.waiting) {
        (Some(last), false) => b.add(Sec::InProgress, shorten(last, 300), 10, false),
        (Some(last), true) => b.add(
            Sec::Critical,
            format!("Last reply: {}", shorten(last, 500)),
            8,
            false,
        ),
        (None, _) => {}
    }
    earlier_state(b, f, &[Sec::InProgress], 9, true);
    blocker_item(b, f, Sec::Blocked);
    earlier_state(b, f, &[Sec::Blocked], 9, true);
    b.earlier(f, &[Sec::Decisions], 7, false);
    decision_items(b, f, Sec::Decisions);
    // Derived steps: fixing the blocker matters; "continue …" repeats the work in
    // progress and "wait for the user" is boilerplate, the first to go.
    for (step, tier) in next_steps(f) {
        b.add(Sec::NextSteps, step, tier, true);
    }
    earlier_state(b, f, &[Sec::NextSteps], 7, true);
    context_items(b, f);
    b.earlier(f, &[Sec::Critical], 7, true);
    command_items(b, f);
    path_items(b, f);
}

pub(super) fn turn_prefix_items(b: &mut Builder, f: &Facts) {
    request_items(b, f, true);
    b.earlier(f, &[Sec::Goal], 9, true);
    b.earlier(f, &[Sec::Done, Sec::Decisions], 7, false);
    file_items(b, f, Sec::Done);
    decision_items(b, f, Sec::Decisions);
    blocker_item(b, f, Sec::Critical);
    if let Some(last) = &f.last_assistant {
        b.add(
            Sec::Critical,
            format!("Last step: {}", shorten(last, 500)),
            10,
            false,
        );
    }
    standing_items(b, f, Sec::Critical);
    context_items(b, f);
    b.earlier(f, &[Sec::Constraints, Sec::Critical], 7, true);
    earlier_state(
        b,
        f,
        &[Sec::InProgress, Sec::Blocked, Sec::NextSteps],
        7,
        true,
    );
    command_items(b, f);
    path_items(b, f);
}

/// Derived only: fix the blocker; continue the in-progress item (or say the assistant is
/// waiting for the user).
fn next_steps(f: &Facts) -> Vec<(String, u8)> {
    let mut steps = Vec::new();
    if let Some(e) = f.blocker() {
        steps.push((
            format!(
                "Fix the blocker: {} fails with {}",
                e.what,
                code(&shorten(&e.line, 200))
            ),
            10,
        ));
    }
    match (&f.last_assistant, f.waiting) {
        (Some(_), true) if steps.is_empty() => steps.push((
            "The assistant ended its turn; wait for the user's next request.".to_string(),
            1,
        )),
        (Some(last), _) => steps.push((format!("Continue: {}", shorten(last, 200)), 4)),
        (None, _) => {
            if let Some(r) = f.real_requests().last() {
                steps.push((format!("Continue with the request: {}", shorten(r, 200)), 4));
            }
        }
    }
    steps
}

mod requests;
use requests::{earlier_goal_items, request_items};

#[cfg(test)]
mod tests;
