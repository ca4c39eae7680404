//! The ledger alone over the generated conversations: which planted items does
//! `compaction::ledger::update` pin (active, with every value), round by round?
//! Isolates extraction from summarizing: an item the ledger misses here can survive
//! compaction only by a summarizer's grace.

use compactd::compaction::ledger::{update, Ledger, Source, SourceRole};

use crate::generate::{Gen, ItemType};
use crate::rounds::{contains_value, segment, Deck, Tracked, ROUNDS};
use crate::session_writer::SessionWriter;

/// (planted items the ledger pins, planted items, the misses with their types).
pub fn pinned_share(seed: u64) -> (usize, usize, Vec<(ItemType, String)>) {
    let mut g = Gen::new(seed);
    let mut w = SessionWriter::new(seed);
    let mut tracked: Vec<Tracked> = Vec::new();
    let mut ledger = Ledger::default();
    let mut deck = Deck::new(&mut g);
    let mut done = 0;
    for round in 1..=ROUNDS {
        let new = segment(&mut g, &mut w, round, &mut tracked, &mut deck);
        tracked.extend(new);
        let texts: Vec<(String, bool, String)> = w.entries[done..]
            .iter()
            .filter_map(|(id, e)| {
                let m = &e["message"];
                let role = m["role"].as_str()?;
                let text: Vec<&str> = m["content"]
                    .as_array()?
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                (role == "user" || role == "assistant")
                    .then(|| (id.clone(), role == "user", text.join("\n")))
            })
            .collect();
        done = w.entries.len();
        let sources: Vec<Source> = texts
            .iter()
            .map(|(id, user, text)| Source {
                entry_id: Some(id),
                role: if *user {
                    SourceRole::User
                } else {
                    SourceRole::Assistant
                },
                text,
            })
            .collect();
        ledger = update(ledger, &sources, &[] as &[&str]);
    }
    if std::env::var("RETENTION_LEDGER_DEBUG").is_ok() {
        for i in ledger.items() {
            eprintln!(
                "{:?} {:?} {:?} {:?} {:?}",
                i.kind,
                i.status,
                i.values,
                i.text,
                i.superseded_by.as_ref().map(|s| &s.text)
            );
        }
    }
    let mut misses = Vec::new();
    let live: Vec<&Tracked> = tracked
        .iter()
        .filter(|t| t.superseded_in.is_none())
        .collect();
    for t in &live {
        let pinned = ledger.active().any(|i| {
            t.item
                .values
                .iter()
                .all(|v| contains_value(&i.text, v) || i.values.iter().any(|x| x == v))
        });
        if !pinned {
            misses.push((t.item.kind, format!("{:?}: {}", t.item.kind, t.item.text)));
        }
    }
    (live.len() - misses.len(), live.len(), misses)
}
