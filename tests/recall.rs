//! Recall on the real sessions, compacted once more after their latest compaction: a
//! distinctive identifier of the compacted part finds an entry holding it in the top 5,
//! a user request asked by three of its rarer words is in the top 5, and no match is
//! outside the scope. Prints the figures (`--nocapture`).

#[path = "support/fixtures.rs"]
mod fixtures;

use std::collections::{HashMap, HashSet};

use compactd::compaction::Settings;
use compactd::config::Checking;
use compactd::pipeline::compact::{plan_compaction, run_compaction};
use compactd::pipeline::options::RecallOptions;
use compactd::pipeline::recall::recall;
use compactd::pipeline::{BodyFormat, CompactOptions, SessionInput};
use compactd::recall::{documents, search};
use compactd::session::Entry;
use compactd::summarize::extractive::Extractive;
use compactd::summarize::{Prompts, Silent};

/// The session with one more compaction appended (compactd's own, extractive).
fn compacted_once_more(body: &str) -> String {
    let input = SessionInput::parse(
        body.as_bytes(),
        BodyFormat::Jsonl,
        CompactOptions::default(),
    )
    .unwrap();
    let prompts = Prompts::builtin();
    let plan = plan_compaction(&input, &prompts, Settings::default(), Checking::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let result = rt
        .block_on(run_compaction(
            plan,
            &prompts,
            &Extractive,
            time::OffsetDateTime::UNIX_EPOCH,
            &Silent,
        ))
        .unwrap();
    format!("{body}{}\n", result.entry)
}

#[test]
fn the_real_sessions_compacted_part_is_recalled() {
    for file in fixtures::ALL {
        let session = compacted_once_more(&fixtures::read(file));
        let input = SessionInput::parse(
            session.as_bytes(),
            BodyFormat::Jsonl,
            RecallOptions {
                q: Some("x".into()),
                ..RecallOptions::default()
            },
        )
        .unwrap();
        let answer = recall(&input, Settings::default()).unwrap();
        let path: Vec<&Entry> = input
            .path(None)
            .unwrap()
            .iter()
            .map(|&i| &input.session.entries[i])
            .collect();
        let last = path
            .last()
            .unwrap()
            .compaction()
            .expect("the new compaction");
        let first_kept = last.first_kept_entry_id.as_deref().unwrap();
        let end = path
            .iter()
            .position(|e| e.id() == Some(first_kept))
            .unwrap();
        let docs = documents(&path[..end]);
        // The service searches exactly this part.
        assert_eq!(answer.searched, docs.len(), "{file}");
        let in_scope: HashSet<&str> = path[..end].iter().filter_map(|e| e.id()).collect();
        let lower: HashMap<&str, String> = docs
            .iter()
            .map(|d| (d.entry_id, d.text.to_lowercase()))
            .collect();

        // Identifiers held by at most three entries, about 40 of them, spread out.
        let mut held: HashMap<String, usize> = HashMap::new();
        for d in &docs {
            let distinct: HashSet<String> = identifiers(&d.text).into_iter().collect();
            for id in distinct {
                *held.entry(id).or_default() += 1;
            }
        }
        let mut rare: Vec<String> = held
            .into_iter()
            .filter(|(_, n)| *n <= 3)
            .map(|(id, _)| id)
            .collect();
        rare.sort();
        let step = (rare.len() / 40).max(1);
        let rare: Vec<String> = rare.into_iter().step_by(step).collect();
        let mut found = 0;
        for id in &rare {
            let hits = search(&docs, id, 5);
            for h in &hits {
                assert!(
                    in_scope.contains(h.entry_id.as_str()),
                    "{file}: {} outside",
                    h.entry_id
                );
            }
            let needle = id.to_lowercase();
            if hits
                .iter()
                .any(|h| lower[h.entry_id.as_str()].contains(&needle))
            {
                found += 1;
            } else {
                eprintln!("{file}: {id:?} not in the top 5");
            }
        }
        let id_share = found as f64 / rare.len() as f64;

        // User requests by their three rarest words of five letters or more.
        let mut df: HashMap<String, usize> = HashMap::new();
        for d in &docs {
            for w in words_of(&d.text) {
                *df.entry(w).or_default() += 1;
            }
        }
        let (mut asked, mut hit) = (0, 0);
        let users: Vec<_> = docs.iter().filter(|d| d.role == "user").collect();
        // About 30 of them, spread out.
        for d in users.iter().step_by((users.len() / 30).max(1)) {
            if d.text.split_whitespace().count() < 6 {
                continue;
            }
            let mut words: Vec<String> = words_of(&d.text).into_iter().collect();
            if words.len() < 3 {
                continue;
            }
            words.sort_by_key(|w| (df[w], w.clone()));
            asked += 1;
            let q = words[..3].join(" ");
            if search(&docs, &q, 5)
                .iter()
                .any(|h| h.entry_id == d.entry_id)
            {
                hit += 1;
            } else {
                eprintln!("{file}: request {} by {q:?} not in the top 5", d.entry_id);
            }
        }
        let request_share = hit as f64 / asked as f64;
        println!(
            "{file}: {} entries searched; identifiers {found}/{} = {id_share:.3}; requests {hit}/{asked} = {request_share:.3}",
            docs.len(),
            rare.len()
        );
        assert!(
            rare.len() >= 20 && asked >= 10,
            "{file}: too few to measure"
        );
        assert!(id_share >= 0.95, "{file}: identifiers {id_share}");
        assert!(request_share >= 0.8, "{file}: requests {request_share}");
    }
}

/// Terms that name one thing: paths, dotted, snake and camel-case names, codes; as the
/// search reads them (no sentence punctuation after, no `./` or markup before).
fn identifiers(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "()[]{}\"'`,;<>=*".contains(c))
        .map(|t| t.trim_end_matches(|c: char| !c.is_alphanumeric()))
        .map(|t| t.trim_start_matches(|c: char| !c.is_alphanumeric()))
        .filter(|t| t.len() >= 6 && t.len() <= 60)
        .filter(|t| {
            let joined = t.contains(['/', '.', '_']) && t.chars().any(char::is_alphabetic);
            let camel = t
                .chars()
                .zip(t.chars().skip(1))
                .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
            (joined || camel) && !t.starts_with("http") && t.chars().all(|c| c.is_ascii_graphic())
        })
        .map(str::to_string)
        .collect()
}

fn words_of(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| w.len() >= 5)
        .map(str::to_lowercase)
        .collect()
}
