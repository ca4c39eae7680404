//! Time-bounded fuzzing of session parsing and the whole core, run by `cargo test`.
//!
//! Seeds: the conformance corpus (336 adversarial sessions), the real sessions (cut to
//! keep cases fast) and their JSON forms. Each case mutates a seed — bytes (flips,
//! JSON tokens, deletions, duplications) or structure (a value anywhere replaced by a
//! hostile one, ids and parentIds rewired into cycles and duplicates, lines dropped,
//! duplicated, swapped, truncated) — picks options (leaf, budgets, branch ends, prune
//! settings, from 0 to u64::MAX) and runs it through every pipeline (`exercise.rs`).
//!
//! `COMPACTD_FUZZ_SECS` bounds the run [10]; `COMPACTD_FUZZ_SEED` replays a run. A
//! panicking case is written to `target/fuzz-failures/` and the test fails naming it.
//! For long coverage-guided runs, see `fuzz/` (cargo-fuzz).

mod exercise;
#[path = "../support/fixtures.rs"]
mod fixtures;
mod mutate;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use compactd::pipeline::{
    BodyFormat, BranchSummaryOptions, CompactOptions, PrepareOptions, PruneOptions,
};
use serde_json::Value;

use mutate::{mutate_bytes, Draw, Rng};

/// Hostile values a structural mutation puts anywhere.
fn hostile(rng: &mut Rng, ids: &[String]) -> Value {
    let id = || Value::String(String::new());
    match rng.below(18) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(2)),
        2 => serde_json::json!(-0.0),
        3 => serde_json::json!(1e21),
        4 => serde_json::json!(1.5),
        5 => serde_json::json!(u64::MAX),
        6 => serde_json::json!(i64::MIN),
        7 => Value::String("😀\u{0}\"\\\u{2028}".repeat(1 + rng.below(3))),
        8 => Value::String("x".repeat(rng.below(9000))),
        9 => serde_json::json!({}),
        10 => serde_json::json!([]),
        11 => {
            serde_json::json!([{"type": "text", "text": "t"}, {"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}}])
        }
        12 => {
            serde_json::json!({"role": "bashExecution", "command": "c", "output": "o", "exitCode": 1, "excludeFromContext": true})
        }
        13 => serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        14 | 15 if !ids.is_empty() => Value::String(rng.pick(ids).clone()),
        16 => Value::String(
            [
                "message",
                "compaction",
                "branch_summary",
                "custom_message",
                "session",
                "model_change",
                "label",
            ][rng.below(7)]
            .into(),
        ),
        _ => id(),
    }
}

/// Replaces a random node of `v` (or a key's value) with a hostile value, or removes a key.
fn mutate_value(rng: &mut Rng, v: &mut Value, ids: &[String], depth: usize) {
    let descend = depth < 6 && rng.below(3) != 0;
    match v {
        Value::Object(map) if !map.is_empty() => {
            let key = map.keys().nth(rng.below(map.len())).unwrap().clone();
            if descend {
                mutate_value(rng, map.get_mut(&key).unwrap(), ids, depth + 1);
            } else if rng.chance(4) {
                map.remove(&key);
            } else {
                map.insert(key, hostile(rng, ids));
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len());
            if descend {
                mutate_value(rng, &mut items[i], ids, depth + 1);
            } else if rng.chance(4) {
                items.remove(i);
            } else {
                items[i] = hostile(rng, ids);
            }
        }
        _ => *v = hostile(rng, ids),
    }
}

fn mutate_lines(rng: &mut Rng, lines: &mut Vec<Vec<u8>>, ids: &[String]) {
    for _ in 0..1 + rng.below(3) {
        if lines.is_empty() {
            return;
        }
        let i = rng.below(lines.len());
        match rng.below(8) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let copy = lines[i].clone();
                lines.insert(rng.below(lines.len() + 1), copy);
            }
            2 => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            3 => lines.truncate(i.max(1)),
            _ => {
                // Structural: mutate the line's JSON, or rewire its id / parentId.
                let Ok(mut v) = serde_json::from_slice::<Value>(&lines[i]) else {
                    continue;
                };
                if rng.chance(3) && !ids.is_empty() && v.is_object() {
                    let field = if rng.chance(2) { "parentId" } else { "id" };
                    v[field] = Value::String(rng.pick(ids).clone());
                } else {
                    mutate_value(rng, &mut v, ids, 0);
                }
                lines[i] = serde_json::to_vec(&v).unwrap();
            }
        }
    }
}

fn options(rng: &mut Rng, ids: &[String]) -> exercise::CaseOptions {
    let tokens = [0, 1, 100, 2_000, 20_000, 1 << 40, u64::MAX];
    let id = |rng: &mut Rng| match rng.below(6) {
        0 => None,
        1 => Some("no-such-id".to_string()),
        _ if ids.is_empty() => None,
        _ => Some(rng.pick(ids).clone()),
    };
    // One set of values, sent to every endpoint (each takes its own).
    let leaf_id = id(rng);
    let keep_recent_tokens = rng.chance(2).then(|| *rng.pick(&tokens));
    let reserve_tokens = rng.chance(2).then(|| *rng.pick(&tokens));
    let context_window = rng.chance(2).then(|| *rng.pick(&tokens));
    let include_messages = Some(rng.chance(2));
    let short_summary = Some(rng.chance(3));
    let old_leaf_id = id(rng);
    let target_id = id(rng);
    let replace_instructions = Some(rng.chance(2));
    let custom_instructions = rng.chance(3).then(|| "focus {{x}} \u{0}".to_string());
    exercise::CaseOptions {
        compact: CompactOptions {
            prepare: PrepareOptions {
                leaf_id: leaf_id.clone(),
                keep_recent_tokens,
                reserve_tokens,
                context_window,
                include_messages,
                custom_instructions: custom_instructions.clone(),
                ..PrepareOptions::default()
            },
            short_summary,
            ..CompactOptions::default()
        },
        branch: BranchSummaryOptions {
            old_leaf_id,
            target_id,
            custom_instructions,
            replace_instructions,
            context_window,
            reserve_tokens,
            ..BranchSummaryOptions::default()
        },
        prune: PruneOptions {
            leaf_id,
            protect_tokens: rng.chance(2).then(|| *rng.pick(&tokens)),
            minimum_savings: rng.chance(2).then(|| *rng.pick(&tokens)),
            protected_tools: rng.chance(3).then(|| vec!["bash".to_string()]),
        },
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut seeds = Vec::new();
    let corpus = format!("{root}/tests/conformance/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap_or_else(|e| panic!("{corpus}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        seeds.push(std::fs::read(f).unwrap());
    }
    for name in fixtures::ALL {
        let path = fixtures::path(name);
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Whole lines, about 150 kB: long enough for cut points, short enough to be quick.
        let cut = text[..150_000]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap_or(0);
        seeds.push(text[..cut].to_vec());
    }
    seeds
}

fn as_json_body(rng: &mut Rng, lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = if rng.chance(4) {
        b"[".to_vec()
    } else {
        b"{\"entries\":[".to_vec()
    };
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(l);
    }
    out.push(b']');
    if out[0] == b'{' {
        out.push(b'}');
    }
    out
}

#[test]
fn fuzz_parsing_and_the_core() {
    let secs: u64 = std::env::var("COMPACTD_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("COMPACTD_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_CAFE_F00D);
    let seeds = seeds();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut rng = Rng::with_seed(seed);
    let mut cases = 0u64;
    let mut parsed = 0u64;
    // Keep the panic's message and place quietly: it is reported below with its input.
    static LAST_PANIC: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = info.to_string();
    }));
    while Instant::now() < deadline || cases < 200 {
        let base = rng.pick(&seeds);
        let ids = exercise::ids_of(base);
        let mut lines: Vec<Vec<u8>> = base
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let structural = rng.below(3) != 0;
        if structural {
            mutate_lines(&mut rng, &mut lines, &ids);
        }
        let format = if rng.chance(3) {
            BodyFormat::Json
        } else {
            BodyFormat::Jsonl
        };
        let mut body = match format {
            BodyFormat::Json => as_json_body(&mut rng, &lines),
            BodyFormat::Jsonl => lines.join(&b'\n'),
        };
        if !structural || rng.chance(4) {
            mutate_bytes(&mut rng, &mut body);
        }
        let opts = options(&mut rng, &ids);
        let limit = if rng.chance(10) {
            rng.below(50) + 1
        } else {
            200_000
        };
        let case_rng = rng.get_seed();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            exercise::exercise(&body, format, opts.clone(), limit)
        }));
        if outcome.is_err() {
            std::panic::set_hook(hook);
            let message = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let dir = format!("{}/target/fuzz-failures", env!("CARGO_MANIFEST_DIR"));
            std::fs::create_dir_all(&dir).unwrap();
            let path = format!("{dir}/case-{case_rng:016x}.body");
            std::fs::write(&path, &body).unwrap();
            panic!(
                "case {cases} panicked: {message}\n  body: {path} ({format:?}, limit {limit})\n  options: {opts:?}\n  replay: COMPACTD_FUZZ_SEED={seed}"
            );
        }
        if compactd::pipeline::SessionInput::parse(&body, format, PrepareOptions::default()).is_ok()
        {
            parsed += 1;
        }
        cases += 1;
    }
    std::panic::set_hook(hook);
    eprintln!("fuzz: {cases} cases in {secs} s, {parsed} parsed (seed {seed})");
    // Both kinds of case must occur, or the mutations test only one side.
    assert!(
        parsed > cases / 10 && parsed < cases,
        "{parsed} of {cases} parsed"
    );
}
