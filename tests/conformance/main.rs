//! Differential conformance against the reference (`@mariozechner/pi-coding-agent@0.73.1`).
//!
//! The goldens in `goldens/` were written by `golden.mjs` running the reference over the
//! real sessions and the generated corpus (regenerate with `tests/conformance/regen.sh`).
//! This test needs no Node: it runs compactd over the same files and compares every
//! golden field. Serialized texts are rendered with the reference's wrapper wording
//! (`Wrappers::reference()`), which is the only difference D3 allows.
//!
//! Two tests: `cases` (cut point and compaction preparation) and `branchCases`
//! (`collectEntriesForBranchSummary` + `prepareBranchEntries` per token budget).

mod hermes;

use std::path::{Path, PathBuf};

use compactd::compaction::branch::{collect_branch, prepare_branch};
use compactd::compaction::context::{context_messages, context_tokens};
use compactd::compaction::cut_point::find_cut_point;
use compactd::compaction::message::{for_compaction, AgentMessage};
use compactd::compaction::prepare::{boundary, prepare_compaction};
use compactd::compaction::stringify::{stringify, stringify_raw};
use compactd::compaction::tokens::estimate;
use compactd::compaction::{serialize_conversation, Settings, Wrappers};
use compactd::session::entry::value_of;
use compactd::session::tree::Leaf;
use compactd::session::{Block, Content, EntryBody, Session};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Failures {
    list: Vec<String>,
}

impl Failures {
    fn check<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: impl FnOnce() -> String,
        got: T,
        want: T,
    ) -> bool {
        if got != want {
            let mut msg = format!("{}: got {:?}, want {:?}", what(), got, want);
            if msg.len() > 600 {
                msg.truncate(600);
                msg.push('…');
            }
            self.list.push(msg);
            false
        } else {
            true
        }
    }

    fn text(&mut self, what: impl FnOnce() -> String, got: &str, want: &str) {
        if got != want {
            let at = got
                .char_indices()
                .zip(want.chars())
                .find(|((_, a), b)| a != b)
                .map_or(got.len().min(want.len()), |((i, _), _)| i);
            let lo = at.saturating_sub(80);
            let lo = (0..=lo)
                .rev()
                .find(|&i| got.is_char_boundary(i) && want.is_char_boundary(i))
                .unwrap_or(0);
            let snippet = |s: &str| {
                s.get(lo..)
                    .unwrap_or("")
                    .chars()
                    .take(160)
                    .collect::<String>()
            };
            self.list.push(format!(
                "{}: texts differ at byte {at} (lengths {} vs {}):\n  got:  {:?}\n  want: {:?}",
                what(),
                got.len(),
                want.len(),
                snippet(got),
                snippet(want)
            ));
        }
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Every golden file, sorted; fails unless the whole corpus is there.
fn golden_files() -> Vec<PathBuf> {
    let dir = root().join("tests/conformance/goldens");
    let mut goldens: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    goldens.sort();
    assert!(
        goldens.len() >= 300,
        "expected the full golden corpus, found {}",
        goldens.len()
    );
    goldens
}

fn opt_usize(v: &Value) -> Option<usize> {
    v.as_i64().and_then(|i| usize::try_from(i).ok())
}

fn run_golden(golden_path: &Path, f: &mut Failures, raw_checked: &mut usize) -> usize {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(golden_path).unwrap()).unwrap();
    let name = golden_path
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let session_path = root().join(golden["session"].as_str().unwrap());
    let body = std::fs::read_to_string(&session_path)
        .unwrap_or_else(|e| panic!("{}: {e}", session_path.display()));
    let session = match Session::from_jsonl(&body) {
        Ok(s) => s,
        Err(e) => {
            f.list.push(format!("{name}: session rejected: {e}"));
            return 0;
        }
    };
    let wrappers = Wrappers::reference();
    let mut passed = 0;

    // Ids after migration (D2), token estimates and JSON.stringify of tool arguments,
    // per input position (header = 0).
    let offset = usize::from(session.header.is_some());
    let ids = golden["ids"].as_array().unwrap();
    let entry_tokens = golden["entryTokens"].as_array().unwrap();
    f.check(
        || format!("{name}: entry count"),
        session.entries.len() + offset,
        ids.len(),
    );
    for e in &session.entries {
        let want_id = ids.get(e.index).and_then(Value::as_str);
        f.check(
            || format!("{name}: id of entry {}", e.index),
            e.id(),
            want_id,
        );
        let msg = match &e.body {
            EntryBody::Message(m) => Some(AgentMessage::Stored(m)),
            EntryBody::CustomMessage { content } => Some(AgentMessage::Custom(content)),
            EntryBody::BranchSummary { summary, .. } => Some(AgentMessage::BranchSummary(summary)),
            EntryBody::Compaction(c) => Some(AgentMessage::CompactionSummary(&c.summary)),
            EntryBody::Other => None,
        };
        let want = entry_tokens.get(e.index).and_then(Value::as_u64);
        f.check(
            || format!("{name}: tokens of entry {}", e.index),
            msg.map(estimate),
            want,
        );
    }
    for call in golden["toolCallArgs"].as_array().unwrap() {
        let index = call["index"].as_u64().unwrap() as usize;
        let block = call["block"].as_u64().unwrap() as usize;
        let entry = &session.entries[index - offset];
        let got = match entry.message().map(|m| &m.content) {
            Some(Content::Blocks(bs)) => match bs.get(block) {
                Some(Block::ToolCall(c)) => Some(stringify(&value_of(c.arguments))),
                _ => None,
            },
            _ => None,
        };
        f.check(
            || format!("{name}: JSON.stringify(arguments) of entry {index} block {block}"),
            got.as_deref(),
            call["json"].as_str(),
        );
        // The allocation-free path must agree wherever it applies.
        if let Some(Content::Blocks(bs)) = entry.message().map(|m| &m.content) {
            if let Some(Block::ToolCall(c)) = bs.get(block) {
                let mut raw = String::new();
                if stringify_raw(c.arguments.get(), &mut raw).is_ok() {
                    *raw_checked += 1;
                    f.check(
                        || format!("{name}: raw JSON.stringify of entry {index} block {block}"),
                        Some(raw.as_str()),
                        call["json"].as_str(),
                    );
                }
            }
        }
    }

    for (ci, case) in golden["cases"].as_array().unwrap().iter().enumerate() {
        let before = f.list.len();
        let what = |field: &str| {
            format!(
                "{name} case {ci} (leaf {}, keep {}): {field}",
                case["leafId"], case["keepRecentTokens"]
            )
        };
        let leaf = match case["leafId"].as_str() {
            Some(id) => Leaf::Id(id),
            None => Leaf::Last,
        };
        let positions = match session.path(leaf, "/leafId") {
            Ok(p) => p,
            Err(e) => {
                f.list.push(format!("{}: {e}", what("path")));
                continue;
            }
        };
        let path: Vec<_> = positions.iter().map(|&i| &session.entries[i]).collect();
        let settings = Settings {
            keep_recent_tokens: case["keepRecentTokens"].as_u64().unwrap(),
            reserve_tokens: case["reserveTokens"].as_u64().unwrap(),
        };
        f.check(
            || what("pathLength"),
            path.len() as u64,
            case["pathLength"].as_u64().unwrap(),
        );
        let (_, boundary_start) = boundary(&path);
        f.check(
            || what("boundaryStart"),
            boundary_start as u64,
            case["boundaryStart"].as_u64().unwrap(),
        );
        let tokens = context_tokens(&context_messages(&path));
        f.check(
            || what("tokensBefore"),
            tokens,
            case["tokensBefore"].as_f64().unwrap(),
        );

        let cut = find_cut_point(
            &path,
            boundary_start,
            path.len(),
            settings.keep_recent_tokens,
        );
        let want_cut = &case["cutPoint"];
        f.check(
            || what("cutPoint.firstKeptEntryIndex"),
            cut.first_kept as i64,
            want_cut["firstKeptEntryIndex"].as_i64().unwrap(),
        );
        f.check(
            || what("cutPoint.turnStartIndex"),
            cut.turn_start,
            opt_usize(&want_cut["turnStartIndex"]),
        );
        f.check(
            || what("cutPoint.isSplitTurn"),
            cut.is_split_turn,
            want_cut["isSplitTurn"].as_bool().unwrap(),
        );

        let prepared = prepare_compaction(&path, settings);
        let want = &case["prepared"];
        match (prepared, want.is_null()) {
            (Err(_), true) => {}
            (Ok(p), false) => {
                f.check(
                    || what("firstKeptEntryId"),
                    p.first_kept().id(),
                    want["firstKeptEntryId"].as_str(),
                );
                f.check(
                    || what("firstKeptEntryIndex"),
                    p.cut.first_kept as u64,
                    want["firstKeptEntryIndex"].as_u64().unwrap(),
                );
                f.check(
                    || what("isSplitTurn"),
                    p.cut.is_split_turn,
                    want["isSplitTurn"].as_bool().unwrap(),
                );
                f.check(
                    || what("turnStartIndex"),
                    p.cut.turn_start,
                    opt_usize(&want["turnStartIndex"]),
                );
                f.check(
                    || what("tokensBefore"),
                    p.tokens_before,
                    want["tokensBefore"].as_f64().unwrap(),
                );
                f.check(
                    || what("previousSummary"),
                    p.previous_summary.map(|s| s.decode().into_owned()),
                    want["previousSummary"].as_str().map(str::to_string),
                );
                let lists = p.file_ops.lists();
                f.check(
                    || what("readFiles"),
                    lists.read_files,
                    strings(&want["readFiles"]),
                );
                f.check(
                    || what("modifiedFiles"),
                    lists.modified_files,
                    strings(&want["modifiedFiles"]),
                );
                f.check(
                    || what("messagesToSummarizeCount"),
                    p.history_messages().count() as u64,
                    want["messagesToSummarizeCount"].as_u64().unwrap(),
                );
                f.check(
                    || what("turnPrefixMessagesCount"),
                    p.turn_prefix_messages().count() as u64,
                    want["turnPrefixMessagesCount"].as_u64().unwrap(),
                );
                let history = serialize_conversation(p.history_messages(), &wrappers);
                f.text(
                    || what("history"),
                    &history,
                    want["history"].as_str().unwrap(),
                );
                if let Some(want_prefix) = want["turnPrefix"].as_str() {
                    let prefix = serialize_conversation(p.turn_prefix_messages(), &wrappers);
                    f.text(|| what("turnPrefix"), &prefix, want_prefix);
                } else {
                    f.check(|| what("split turn"), p.cut.is_split_turn, false);
                }
                // Every summarized message comes from the compaction view of its entry.
                let n = p
                    .summarized_entries()
                    .filter_map(|e| for_compaction(e))
                    .count();
                f.check(
                    || what("summarized message count"),
                    n as u64,
                    want["messagesToSummarizeCount"].as_u64().unwrap()
                        + want["turnPrefixMessagesCount"].as_u64().unwrap(),
                );
            }
            (Ok(p), true) => f.list.push(format!(
                "{}: compactd prepared a cut at {} where the reference has nothing to compact",
                what("prepared"),
                p.cut.first_kept
            )),
            (Err((why, _)), false) => f.list.push(format!(
                "{}: compactd found nothing to compact ({why:?})",
                what("prepared")
            )),
        }
        if f.list.len() == before {
            passed += 1;
        }
    }
    passed
}

#[test]
fn conformance_with_reference_goldens() {
    let goldens = golden_files();
    let mut f = Failures { list: Vec::new() };
    let mut cases = 0;
    let mut passed = 0;
    let mut raw_checked = 0usize;
    for g in &goldens {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(g).unwrap()).unwrap();
        cases += v["cases"].as_array().map_or(0, Vec::len);
        passed += run_golden(g, &mut f, &mut raw_checked);
    }
    println!(
        "conformance: {passed} of {cases} cases passed over {} sessions",
        goldens.len()
    );
    assert!(
        raw_checked > 1000,
        "the raw JSON.stringify path was checked only {raw_checked} times"
    );
    if !f.list.is_empty() {
        for m in f.list.iter().take(40) {
            eprintln!("{m}");
        }
        panic!(
            "{} conformance mismatches ({} of {cases} cases passed)",
            f.list.len(),
            passed
        );
    }
}

/// Counts over the branch cases of the corpus.
#[derive(Default)]
struct BranchTally {
    pairs: usize,
    selections: usize,
    passed: usize,
    /// Selections whose walk stopped at a summary entry that did not fit (the 90 % rule):
    /// taken anyway / left out.
    taken: usize,
    dropped: usize,
    empty: usize,
    nothing_collected: usize,
}

fn run_branch_golden(golden_path: &Path, f: &mut Failures, t: &mut BranchTally) {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(golden_path).unwrap()).unwrap();
    let name = golden_path
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let cases = golden["branchCases"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no branchCases; regenerate the goldens"));
    let selections = |c: &Value| c["selections"].as_array().unwrap().len();
    t.pairs += cases.len();
    t.selections += cases.iter().map(selections).sum::<usize>();
    for s in cases
        .iter()
        .flat_map(|c| c["selections"].as_array().unwrap())
    {
        match s["summaryRule"].as_str() {
            Some("taken") => t.taken += 1,
            Some("dropped") => t.dropped += 1,
            _ => {}
        }
        t.empty += usize::from(s["messageCount"] == 0);
    }
    if cases.is_empty() {
        return;
    }
    let session_path = root().join(golden["session"].as_str().unwrap());
    let body = std::fs::read_to_string(&session_path)
        .unwrap_or_else(|e| panic!("{}: {e}", session_path.display()));
    let session = match Session::from_jsonl(&body) {
        Ok(s) => s,
        Err(e) => {
            f.list.push(format!("{name}: session rejected: {e}"));
            return;
        }
    };
    let wrappers = Wrappers::reference();

    for (bi, case) in cases.iter().enumerate() {
        let (old_id, target_id) = (
            case["oldLeafId"].as_str().unwrap(),
            case["targetId"].as_str().unwrap(),
        );
        let what = |field: &str| {
            format!(
                "{name} branch case {bi} ({} {old_id:?} -> {target_id:?}): {field}",
                case["kind"].as_str().unwrap_or("?")
            )
        };
        let before = f.list.len();
        let (Some(old), Some(target)) = (session.position(old_id), session.position(target_id))
        else {
            f.list.push(what("an id is not in the session"));
            continue;
        };
        let collected = match collect_branch(&session, old, target) {
            Ok(c) => c,
            Err(e) => {
                f.list.push(format!("{}: {e}", what("collect")));
                continue;
            }
        };
        f.check(
            || what("commonAncestorId"),
            collected
                .common_ancestor
                .and_then(|p| session.entries[p].id()),
            case["commonAncestorId"].as_str(),
        );
        let want_ids: Vec<Option<&str>> = case["entryIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::as_str)
            .collect();
        t.nothing_collected += usize::from(want_ids.is_empty());
        f.check(
            || what("entryIds"),
            collected.entries.iter().map(|e| e.id()).collect::<Vec<_>>(),
            want_ids,
        );
        let pair_ok = f.list.len() == before;

        for s in case["selections"].as_array().unwrap() {
            let before = f.list.len();
            let budget = s["tokenBudget"].as_i64().unwrap();
            let what = |field: &str| what(&format!("budget {budget}: {field}"));
            let sel = prepare_branch(&collected.entries, budget);
            f.check(
                || what("messageCount"),
                sel.messages.len() as u64,
                s["messageCount"].as_u64().unwrap(),
            );
            f.check(
                || what("totalTokens"),
                sel.total_tokens,
                s["totalTokens"].as_u64().unwrap(),
            );
            let lists = sel.file_ops.lists();
            f.check(
                || what("readFiles"),
                lists.read_files,
                strings(&s["readFiles"]),
            );
            f.check(
                || what("modifiedFiles"),
                lists.modified_files,
                strings(&s["modifiedFiles"]),
            );
            let text = serialize_conversation(sel.messages.iter().map(|(m, _)| *m), &wrappers);
            f.text(
                || what("conversation"),
                &text,
                s["conversation"].as_str().unwrap(),
            );
            if pair_ok && f.list.len() == before {
                t.passed += 1;
            }
        }
    }
}

#[test]
fn branch_conformance_with_reference_goldens() {
    let goldens = golden_files();
    let mut f = Failures { list: Vec::new() };
    let mut t = BranchTally::default();
    for g in &goldens {
        run_branch_golden(g, &mut f, &mut t);
    }
    println!(
        "branch conformance: {} of {} selections passed ({} pairs over {} sessions; \
         90 % rule: {} summaries taken over budget, {} left out; {} empty selections, \
         {} pairs with nothing collected)",
        t.passed,
        t.selections,
        t.pairs,
        goldens.len(),
        t.taken,
        t.dropped,
        t.empty,
        t.nothing_collected
    );
    // The corpus must exercise every branch of prepareBranchEntries, not pass vacuously.
    assert!(
        t.selections >= 2000 && t.pairs >= 600,
        "too few branch cases: {} pairs, {} selections",
        t.pairs,
        t.selections
    );
    assert!(
        t.taken >= 50 && t.dropped >= 50,
        "the 90 % rule is barely exercised: {} taken, {} dropped",
        t.taken,
        t.dropped
    );
    assert!(
        t.empty >= 100 && t.empty < t.selections / 2,
        "{} of {} selections are empty",
        t.empty,
        t.selections
    );
    if !f.list.is_empty() {
        for m in f.list.iter().take(40) {
            eprintln!("{m}");
        }
        panic!(
            "{} branch conformance mismatches ({} of {} selections passed)",
            f.list.len(),
            t.passed,
            t.selections
        );
    }
}
