//! The sections of the summary: what each one says, taken from the facts and the earlier
//! summaries, and how important each item is (its tier) when the budget is tight.

use std::collections::HashSet;

use super::diagnostics::{is_viewer, main_command};
use super::facts::{Facts, Failure};
use super::layout::{Item, Layout, Sec, KEEP};
use super::text::{code, collapse_ws, shorten};

/// The items of every section in the order they were added; an item already in its
/// section is not added twice.
pub(super) struct Builder {
    layout: Layout,
    pub(super) items: Vec<Item>,
    seen: HashSet<(usize, String)>,
    seq: usize,
}

impl Builder {
    pub(super) fn new(layout: Layout) -> Builder {
        Builder {
            layout,
            items: Vec::new(),
            seen: HashSet::new(),
            seq: 0,
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
        let section = self.layout.section(sec);
        let key = collapse_ws(&text).to_lowercase();
        if key.is_empty() || !self.seen.insert((section, key)) {
            return;
        }
        self.seq += 1;
        let order = if tail_first {
            usize::MAX - self.seq
        } else {
            self.seq
        };
        self.items.push(Item {
            section,
            text,
            raw,
            tier,
            order,
            shorter,
        });
    }

    pub(super) fn earlier(&mut self, f: &Facts, secs: &[Sec], tier: u8, tail_first: bool) {
        for e in f.earlier.iter().filter(|e| secs.contains(&e.sec)) {
            self.add_item(e.sec, e.text.clone(), e.raw, tier, tail_first, Vec::new());
        }
    }
}

fn request_item(b: &mut Builder, f: &Facts) {
    let Some(first) = f.requests.first() else {
        return;
    };
    let shorter = [300, 160, 80, 40]
        .iter()
        .map(|&n| shorten(first, n))
        .collect();
    b.add_item(Sec::Goal, shorten(first, 800), false, KEEP, false, shorter);
    let later = &f.requests[1..];
    for (i, r) in later.iter().enumerate() {
        if r.split_whitespace().count() < 3 {
            continue; // "ok", "yo", "wow": not a request
        }
        let tier = if i + 1 == later.len() { 6 } else { 5 };
        b.add(Sec::Goal, shorten(r, 300), tier, false);
    }
}

fn error_text(e: &Failure, line_max: usize) -> String {
    format!("{} failed: {}", e.what, code(&shorten(&e.line, line_max)))
}

fn blocker_item(b: &mut Builder, f: &Facts, sec: Sec) {
    if let Some(e) = f.blocker() {
        let shorter = [200, 100, 50].iter().map(|&n| error_text(e, n)).collect();
        b.add_item(sec, error_text(e, 500), false, KEEP, false, shorter);
    }
}

fn file_items(b: &mut Builder, f: &Facts, sec: Sec) {
    for m in f.modified.iter().filter(|m| m.done()) {
        b.add(sec, format!("{} {}", m.verb(), code(&m.path)), 8, true);
    }
    for c in &f.done_commands.items {
        // Commands that only look at files go first when the budget is tight.
        let tier = if is_viewer(&main_command(c)) { 1 } else { 4 };
        let c = shorten(&collapse_ws(c), 160);
        b.add(sec, format!("Ran {}", code(&c)), tier, false);
    }
}

fn decision_items(b: &mut Builder, f: &Facts, sec: Sec) {
    let all = &f.decisions.items;
    for d in &all[all.len().saturating_sub(8)..] {
        b.add(sec, shorten(&collapse_ws(d), 240), 3, false);
    }
}

fn context_items(b: &mut Builder, f: &Facts) {
    for a in &f.additional {
        b.add(Sec::Critical, shorten(a, 500), 10, true);
    }
    if let Some(e) = &f.last_error {
        let note = if e.resolved {
            " (a later run succeeded)"
        } else {
            ""
        };
        b.add(
            Sec::Critical,
            format!(
                "Last error ({}): {}{note}",
                e.what,
                code(&shorten(&e.line, 500))
            ),
            5,
            false,
        );
    }
}

fn path_items(b: &mut Builder, f: &Facts) {
    let recent: Vec<String> = f.commands.items[f.commands.items.len().saturating_sub(20)..]
        .iter()
        .map(|c| code(&shorten(&collapse_ws(c), 80)))
        .collect();
    if !recent.is_empty() {
        b.add(
            Sec::Critical,
            format!("Commands run: {}", recent.join(", ")),
            1,
            false,
        );
    }
    let mut listed: HashSet<&str> = HashSet::new();
    for m in &f.modified {
        if listed.insert(&m.path) {
            b.add(
                Sec::Critical,
                format!("{} (modified)", code(&m.path)),
                2,
                true,
            );
        }
    }
    for p in &f.read.items {
        if listed.insert(p) {
            b.add(Sec::Critical, format!("{} (read)", code(p)), 2, true);
        }
    }
    for p in &f.mentioned.items {
        if listed.insert(p) && !f.read.contains(p) {
            b.add(Sec::Critical, code(p), 0, true);
        }
    }
}

pub(super) fn checkpoint_items(b: &mut Builder, f: &Facts) {
    // Goal: earlier goals, the first request, later distinct requests.
    b.earlier(f, &[Sec::Goal], 9, true);
    request_item(b, f);
    b.earlier(f, &[Sec::Constraints], 9, true);
    for c in &f.constraints.items {
        b.add(Sec::Constraints, shorten(&collapse_ws(c), 300), 6, true);
    }
    b.earlier(f, &[Sec::Done], 7, false);
    file_items(b, f, Sec::Done);
    if let Some(last) = &f.last_assistant {
        b.add(Sec::InProgress, shorten(last, 500), 10, false);
    }
    b.earlier(f, &[Sec::InProgress], 9, true);
    blocker_item(b, f, Sec::Blocked);
    b.earlier(f, &[Sec::Blocked], 9, true);
    b.earlier(f, &[Sec::Decisions], 7, false);
    decision_items(b, f, Sec::Decisions);
    for step in next_steps(f) {
        b.add(Sec::NextSteps, step, 10, true);
    }
    b.earlier(f, &[Sec::NextSteps], 7, true);
    context_items(b, f);
    b.earlier(f, &[Sec::Critical], 7, true);
    path_items(b, f);
}

pub(super) fn turn_prefix_items(b: &mut Builder, f: &Facts) {
    request_item(b, f);
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
    for c in &f.constraints.items {
        b.add(Sec::Critical, shorten(&collapse_ws(c), 300), 6, true);
    }
    context_items(b, f);
    b.earlier(
        f,
        &[
            Sec::Constraints,
            Sec::InProgress,
            Sec::Blocked,
            Sec::NextSteps,
            Sec::Critical,
        ],
        7,
        true,
    );
    path_items(b, f);
}

/// Derived only: fix the blocker; continue the in-progress item (or say the assistant is
/// waiting for the user).
fn next_steps(f: &Facts) -> Vec<String> {
    let mut steps = Vec::new();
    if let Some(e) = f.blocker() {
        steps.push(format!(
            "Fix the blocker: {} fails with {}",
            e.what,
            code(&shorten(&e.line, 200))
        ));
    }
    match (&f.last_assistant, f.waiting) {
        (Some(_), true) if steps.is_empty() => steps
            .push("The assistant ended its turn; wait for the user's next request.".to_string()),
        (Some(last), _) => steps.push(format!("Continue: {}", shorten(last, 200))),
        (None, _) => {
            if let Some(r) = f.requests.last() {
                steps.push(format!("Continue with the request: {}", shorten(r, 200)));
            }
        }
    }
    steps
}
