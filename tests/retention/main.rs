//! The retention suite: do the items a continuing agent needs survive five rounds of
//! compaction?
//!
//! Generated pi sessions (`generate.rs`) carry planted, typed, unguessable items at
//! early, middle and late positions: the objective, rules and hard constraints with
//! their values, preferences, facts the user supplied, credential names (with a secret
//! value), decisions and supersessions. Each session is compacted five times, fed back
//! as pi stores it (`rounds.rs`), at budgets of 10, 20 and 30 % of the context being
//! compacted, with the extractive summarizer and with a fake model that paraphrases and
//! drops things (`fake_model.rs`). The pipeline is driven in-process
//! (`pipeline::compact::{plan_compaction, run_compaction}`).
//!
//! An item survives a round when the context a continuing agent would see after it
//! (the summary plus the kept messages) contains every one of its values exactly. The
//! table gives, per summarizer and budget, survival per type per round, summed over
//! the seeds; "planted in round 1" is the share of the first round's items still there;
//! "stale" counts supersessions whose old value is in the context while the current one
//! is not; "secret in summary" and "secret in details / pinned section" count
//! compaction entries carrying a credential's value; "size" is `tokensAfter /
//! tokensBefore`. `ledger_check.rs` runs the ledger alone over the same conversations.
//!
//! Asserted: the targets checked compaction was built for — after the fifth round at
//! least 90 % of the planted items survive at a 20 % budget and at least 50 % at 10 %,
//! with either summarizer — and no secret value in `details`, the pinned section or any
//! summary (the summarizers copy user sentences; the pipeline redacts every summary).
//!
//! `cargo test --test retention -- --nocapture` prints the tables (`docs/benchmarks.md`,
//! "Retention").
//! `RETENTION_SEEDS=7,8,9` or `RETENTION_SEEDS=100..140` runs other seeds (default:
//! [`DEFAULT_SEEDS`]). `RETENTION_DEBUG=seed/round` prints that round's context and
//! planted items; `RETENTION_MISSING=1` names every item missing after a round;
//! `RETENTION_PIN=false` turns the pinned ledger off (the pipeline before the ledger: the
//! targets then fail).

mod fake_model;
mod generate;
mod ledger_check;
mod rounds;
mod session_writer;

use compactd::summarize::extractive::Extractive;
use std::fmt::Write as _;
use std::sync::OnceLock;

use generate::ItemType;
use rounds::{RoundResult, ROUNDS};

/// Seeds run by default (a short run, for CI).
pub const DEFAULT_SEEDS: std::ops::Range<u64> = 1..4;
/// Budgets: shares of the context being compacted.
pub const BUDGETS: [f64; 3] = [0.10, 0.20, 0.30];
/// The targets checked compaction was built for: (budget, share of planted items
/// surviving five rounds).
pub const TARGETS: [(f64, f64); 2] = [(0.20, 0.90), (0.10, 0.50)];

fn seeds() -> Vec<u64> {
    let Ok(v) = std::env::var("RETENTION_SEEDS") else {
        return DEFAULT_SEEDS.collect();
    };
    if let Some((a, b)) = v.split_once("..") {
        let a: u64 = a.trim().parse().expect("RETENTION_SEEDS=a..b");
        let b: u64 = b.trim().parse().expect("RETENTION_SEEDS=a..b");
        return (a..b).collect();
    }
    v.split(',')
        .map(|s| s.trim().parse().expect("RETENTION_SEEDS=1,2,3"))
        .collect()
}

/// Results of every seed for one summarizer and budget, summed per round.
struct Cell {
    summarizer: &'static str,
    budget: f64,
    rounds: Vec<RoundResult>,
}

fn sum(runs: &[Vec<RoundResult>]) -> Vec<RoundResult> {
    (0..ROUNDS)
        .map(|r| {
            let mut out = RoundResult::default();
            for kind in ItemType::ALL {
                let (p, n) = runs.iter().fold((0, 0), |(p, n), run| {
                    let &(_, rp, rn) = run[r].by_type.iter().find(|x| x.0 == kind).unwrap();
                    (p + rp, n + rn)
                });
                out.by_type.push((kind, p, n));
            }
            for run in runs {
                out.stale += run[r].stale;
                out.supersessions += run[r].supersessions;
                out.secret_in_summary += run[r].secret_in_summary;
                out.secret_in_pinned += run[r].secret_in_pinned;
                out.first_round.0 += run[r].first_round.0;
                out.first_round.1 += run[r].first_round.1;
                out.tokens_before += run[r].tokens_before;
                out.tokens_after += run[r].tokens_after;
            }
            out
        })
        .collect()
}

fn pct(p: usize, n: usize) -> String {
    if n == 0 {
        "–".into()
    } else {
        format!("{:.0} %", 100.0 * p as f64 / n as f64)
    }
}

/// The tables, as Markdown (`docs/benchmarks.md` carries the first two): survival of all items
/// per round, survival per type after round 5, then each cell per type per round.
fn table(cells: &[Cell], seeds: &[u64]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Seeds {seeds:?}, pinned ledger {}.\n",
        if rounds::checking().pin { "on" } else { "off" }
    );
    let _ = writeln!(
        out,
        "| summarizer | budget | round 1 | round 2 | round 3 | round 4 | round 5 | stale | secret in summary | secret in pinned | size |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for c in cells {
        let mut row = format!("| {} | {:.0} % |", c.summarizer, c.budget * 100.0);
        for r in &c.rounds {
            let (p, n) = r.totals();
            let _ = write!(row, " {} |", pct(p, n));
        }
        let last = c.rounds.last().unwrap();
        let _ = writeln!(
            out,
            "{row} {}/{} | {} | {} | {:.0} % |",
            last.stale,
            last.supersessions,
            secrets(c, |r| r.secret_in_summary),
            secrets(c, |r| r.secret_in_pinned),
            100.0 * last.tokens_after as f64 / last.tokens_before.max(1.0)
        );
    }
    let _ = write!(out, "\nAfter round 5, per type:\n\n| type |");
    for c in cells {
        let _ = write!(out, " {} {:.0} % |", c.summarizer, c.budget * 100.0);
    }
    let _ = writeln!(out, "\n|---|{}", "---:|".repeat(cells.len()));
    for kind in ItemType::ALL {
        let _ = write!(out, "| {} |", kind.name());
        for c in cells {
            let last = c.rounds.last().unwrap();
            let &(_, p, n) = last.by_type.iter().find(|x| x.0 == kind).unwrap();
            let _ = write!(out, " {p}/{n} |");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "\nPer cell: items present in the context after the round / items planted so far (superseded ones excluded).\n"
    );
    for c in cells {
        let _ = writeln!(
            out,
            "#### {} summarizer, budget {:.0} %\n",
            c.summarizer,
            c.budget * 100.0
        );
        let mut head = String::from("| type |");
        let mut rule = String::from("|---|");
        for r in 1..=ROUNDS {
            let _ = write!(head, " round {r} |");
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{head}\n{rule}");
        for kind in ItemType::ALL {
            let mut row = format!("| {} |", kind.name());
            for r in &c.rounds {
                let &(_, p, n) = r.by_type.iter().find(|x| x.0 == kind).unwrap();
                let _ = write!(row, " {p}/{n} |");
            }
            let _ = writeln!(out, "{row}");
        }
        let mut all = String::from("| **all** |");
        let mut first = String::from("| planted in round 1 |");
        let mut stale = String::from("| stale (old value current) |");
        let mut leaks = String::from("| secret in summary |");
        let mut pinned_leaks = String::from("| secret in details / pinned section |");
        let mut size = String::from("| size (after / before) |");
        for r in &c.rounds {
            let (p, n) = r.totals();
            let _ = write!(all, " **{}** |", pct(p, n));
            let _ = write!(first, " {} |", pct(r.first_round.0, r.first_round.1));
            let _ = write!(stale, " {}/{} |", r.stale, r.supersessions);
            let _ = write!(leaks, " {} |", r.secret_in_summary);
            let _ = write!(pinned_leaks, " {} |", r.secret_in_pinned);
            let _ = write!(
                size,
                " {:.0} % |",
                100.0 * r.tokens_after as f64 / r.tokens_before.max(1.0)
            );
        }
        let _ = writeln!(
            out,
            "{all}\n{first}\n{stale}\n{leaks}\n{pinned_leaks}\n{size}\n"
        );
    }
    out
}

/// Every cell of the table, computed once for the tests that read it.
fn cells() -> &'static [Cell] {
    static CELLS: OnceLock<Vec<Cell>> = OnceLock::new();
    CELLS.get_or_init(|| {
        let seeds = seeds();
        let mut cells = Vec::new();
        for name in ["extractive", "paraphrasing model"] {
            for &budget in &BUDGETS {
                let runs: Vec<Vec<RoundResult>> = seeds
                    .iter()
                    .map(|&seed| match name {
                        "extractive" => rounds::run(seed, budget, &Extractive),
                        _ => rounds::run(seed, budget, &fake_model::FakeModel { seed }),
                    })
                    .collect();
                cells.push(Cell {
                    summarizer: name,
                    budget,
                    rounds: sum(&runs),
                });
            }
        }
        cells
    })
}

fn secrets(c: &Cell, of: fn(&RoundResult) -> usize) -> usize {
    c.rounds.iter().map(of).sum()
}

#[test]
fn planted_items_survive_five_rounds() {
    let cells = cells();
    println!("{}", table(cells, &seeds()));
    let mut failures = Vec::new();
    for c in cells {
        let (p, n) = c.rounds.last().unwrap().totals();
        let share = p as f64 / n.max(1) as f64;
        for &(budget, target) in &TARGETS {
            if (c.budget - budget).abs() < 1e-9 && share < target {
                failures.push(format!(
                    "{} at {:.0} %: {p}/{n} = {:.1} % of planted items survive five rounds (target {:.0} %)",
                    c.summarizer,
                    budget * 100.0,
                    share * 100.0,
                    target * 100.0
                ));
            }
        }
        let leaks = secrets(c, |r| r.secret_in_pinned);
        if leaks > 0 {
            failures.push(format!(
                "{} at {:.0} %: {leaks} compaction entries carry a secret value in details or the pinned section",
                c.summarizer,
                c.budget * 100.0
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The summarizers copy user sentences, secret values included; the pipeline redacts
/// every summary (the table's "secret in summary" row).
#[test]
fn no_summary_carries_a_secret_value() {
    let leaks: Vec<String> = cells()
        .iter()
        .filter(|c| secrets(c, |r| r.secret_in_summary) > 0)
        .map(|c| {
            format!(
                "{} at {:.0} %: {} summaries carry a secret value",
                c.summarizer,
                c.budget * 100.0,
                secrets(c, |r| r.secret_in_summary)
            )
        })
        .collect();
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
}

#[test]
fn runs_are_deterministic() {
    let a = rounds::run(11, 0.2, &fake_model::FakeModel { seed: 11 });
    let b = rounds::run(11, 0.2, &fake_model::FakeModel { seed: 11 });
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn value_matching_needs_whole_values() {
    assert!(rounds::contains_value("use port 9431.", "9431"));
    assert!(!rounds::contains_value("use port 94317", "9431"));
    assert!(!rounds::contains_value("port 19431", "9431"));
    assert!(rounds::contains_value("cap $4,817 total", "$4,817"));
    assert!(!rounds::contains_value("cap 4817 dollars", "$4,817"));
    assert!(rounds::contains_value("prefix [kalo]: x", "[kalo]"));
}

/// The ledger alone pins every planted item but the session's goal when it is phrased as
/// a plain request ("I want you to migrate …"): the ledger reads that as a step, which
/// the next request replaces (see `compaction::ledger::classify`, "Goal").
#[test]
fn the_ledger_pins_every_planted_item_but_uncued_goals() {
    let mut misses = Vec::new();
    let (mut pinned, mut planted, mut goals) = (0, 0, 0);
    for seed in seeds() {
        let (p, n, m) = ledger_check::pinned_share(seed);
        pinned += p;
        planted += n;
        for (kind, m) in m {
            match kind {
                ItemType::Objective => goals += 1,
                _ => misses.push(format!("seed {seed}: {m}")),
            }
        }
    }
    println!("the ledger pins {pinned}/{planted} planted items ({goals} goals not pinned)");
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}
