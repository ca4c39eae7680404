//! `cargo bench --bench prepare`, two groups per session file:
//!
//! * `prepare-core/<file>`: parse + migrate + path + `compaction::prepare_compaction` — the work
//!   the reference's `prepareCompaction` benchmark does, for a like-for-like ratio;
//! * `prepare/<file>`: the whole POST /v1/prepare work, from the body bytes to the JSON
//!   answer (also serializing the conversation, the summarizer requests and the answer).
//!
//! Inputs: the two real pi sessions in `tests/fixtures/pi-sessions/` and a generated
//! ~50 MB v3 session (`target/bench-data/generated-50mb.jsonl`, written on first use by
//! `support/generate/`, deterministic). Throughput is the input size.
//!
//! `bench/core.sh` runs this and compares with the reference implementation; `bench/compare.sh`
//! uses it to write the generated sessions (`COMPACTD_BENCH_GENERATE_ONLY=1`).

use std::fs;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

use compactd::compaction::{self, Settings};
use compactd::pipeline::{self, BodyFormat, PrepareOptions, PrepareResponse, SessionInput};
use compactd::session::Entry;
use compactd::summarize::Prompts;
use serde_json::value::RawValue;

#[path = "../tests/support/fixtures.rs"]
mod fixtures;
#[path = "support/generate/mod.rs"]
mod generate;

/// What one iteration measures: the block POST /v1/prepare runs.
fn parse_prepare_serialize(bytes: &[u8], prompts: &Prompts) -> Vec<u8> {
    let input = SessionInput::parse(bytes, BodyFormat::Jsonl, PrepareOptions::default())
        .expect("session parses");
    let answer = pipeline::prepare_response(&input, prompts, Settings::default(), None)
        .expect("prepare succeeds");
    answer.to_json()
}

/// The work the reference's benchmark does (parse, migrate, path, `prepareCompaction`),
/// without our conversation serialization and JSON answer: the like-for-like comparison.
fn parse_prepare_core(bytes: &[u8]) -> usize {
    let input = SessionInput::parse(bytes, BodyFormat::Jsonl, PrepareOptions::default())
        .expect("session parses");
    let positions = input.path(None).expect("path");
    let path: Vec<&Entry> = positions
        .iter()
        .map(|&i| &input.session.entries[i])
        .collect();
    let prep = compaction::prepare_compaction(&path, Settings::default()).expect("compactable");
    prep.cut.first_kept + prep.file_ops.read.len()
}

fn fixture(name: &str) -> PathBuf {
    fixtures::path(name)
}

/// One line on stderr per input, so a run shows what was measured (and fails loudly
/// when an input is not compactable, which would make the benchmark meaningless).
fn describe(id: &str, bytes: &[u8], prompts: &Prompts) {
    let input = SessionInput::parse(bytes, BodyFormat::Jsonl, PrepareOptions::default())
        .expect("session parses");
    let answer = pipeline::prepare_response(&input, prompts, Settings::default(), None)
        .expect("prepare succeeds");
    let PrepareResponse::Compactable(c) = &answer else {
        panic!("{id}: the session is not compactable with the default settings");
    };
    let json = answer.to_json();
    eprintln!(
        "{id}: {:.2} MB in, {} entries, path {} entries, firstKept #{}, split {}, \
         previous summary {}, summarized {} entries, history text {:.2} MB, answer {:.2} MB",
        bytes.len() as f64 / 1e6,
        input.session.entries.len(),
        input.path(None).map_or(0, |p| p.len()),
        c.first_kept_entry_index,
        c.is_split_turn,
        c.previous_summary.kept().is_some_and(Option::is_some),
        c.summarized_entry_ids.as_ref().map_or(0, Vec::len),
        c.conversation
            .as_ref()
            .map_or(0, |t| t.history.as_str().len()) as f64
            / 1e6,
        json.len() as f64 / 1e6,
    );
}

/// Wall time of `f` in ms, and its result.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let r = f();
    (t.elapsed().as_secs_f64() * 1e3, r)
}

/// Where one iteration's time goes (median of `runs` runs, ms), printed to stderr.
///
/// * `parse` (`SessionInput::parse`), `pipeline::prepare_response`, `to_json` and `drop` are the
///   four steps of one benchmark iteration; their sum is printed last.
/// * `utf8` (the UTF-8 check `parse` starts with) and `json-scan` (split the lines and
///   let serde_json scan each into a `RawValue`: a floor for any serde_json-based
///   parse) are measured outside the library for comparison, not added to the total.
/// * `path`, `core prepare` (`compaction::prepare_compaction`: tokens, cut point, file ops) and
///   `plan` (`plan_requests`: conversation serialization and summarizer prompts) are
///   the parts of `pipeline::prepare_response`; the rest of it builds the message lists.
///
/// Set COMPACTD_BENCH_PHASES=0 to skip.
fn phases(id: &str, bytes: &[u8], prompts: &Prompts, runs: usize) {
    if std::env::var_os("COMPACTD_BENCH_PHASES").is_some_and(|v| v == "0") {
        return;
    }
    const NAMES: [&str; 9] = [
        "utf8",
        "json-scan",
        "parse",
        "path",
        "core prepare",
        "plan",
        "pipeline::prepare_response",
        "to_json",
        "drop",
    ];
    let mut samples: Vec<[f64; 9]> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut t = [0.0; 9];
        let (ms, text) = timed(|| std::str::from_utf8(bytes).expect("UTF-8"));
        t[0] = ms;
        t[1] = timed(|| {
            let mut n = 0usize;
            for line in text.split('\n') {
                if !line.trim().is_empty() {
                    let raw: &RawValue = serde_json::from_str(line).expect("JSON line");
                    n += raw.get().len();
                }
            }
            black_box(n)
        })
        .0;
        let (ms, input) = timed(|| {
            SessionInput::parse(bytes, BodyFormat::Jsonl, PrepareOptions::default()).unwrap()
        });
        t[2] = ms;
        let (ms, positions) = timed(|| input.path(None).unwrap());
        t[3] = ms;
        let path: Vec<&Entry> = positions
            .iter()
            .map(|&i| &input.session.entries[i])
            .collect();
        let (ms, prep) = timed(|| compaction::prepare_compaction(&path, Settings::default()).ok());
        t[4] = ms;
        if let Some(prep) = &prep {
            let opts = pipeline::prepare::prompt_options(&input.options);
            t[5] = timed(|| black_box(pipeline::prepare::plan_requests(prep, prompts, &opts))).0;
        }
        drop(prep);
        let (ms, answer) = timed(|| {
            pipeline::prepare_response(&input, prompts, Settings::default(), None).unwrap()
        });
        t[6] = ms;
        let (ms, json) = timed(|| answer.to_json());
        t[7] = ms;
        black_box(&json);
        drop(path);
        let start = Instant::now();
        drop(json);
        drop(answer);
        drop(input);
        t[8] = start.elapsed().as_secs_f64() * 1e3;
        samples.push(t);
    }
    let median = |k: usize| {
        let mut v: Vec<f64> = samples.iter().map(|s| s[k]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let total = median(2) + median(6) + median(7) + median(8);
    let parts: Vec<String> = NAMES
        .iter()
        .enumerate()
        .map(|(k, n)| format!("{n} {:.1}", median(k)))
        .collect();
    eprintln!(
        "{id}: phases (ms, median of {runs}): {}; parse + pipeline::prepare_response + to_json + drop = {total:.1}",
        parts.join(", ")
    );
}

/// The seed of `generated-20mb.jsonl`, the session `bench/compare.sh` times over HTTP:
/// not the 50 MB one's, so it is a session no test and no tuning has seen.
const SEED_20MB: u64 = 0x20_5e55_10f5_2026;

fn bench_prepare(c: &mut Criterion) {
    // `COMPACTD_BENCH_GENERATE_ONLY=1`: write the generated sessions and measure nothing
    // (bench/compare.sh uses it).
    if std::env::var_os("COMPACTD_BENCH_GENERATE_ONLY").is_some_and(|v| v == "1") {
        let big = generate::ensure_generated_50mb().expect("write the generated session");
        let path = generate::data_dir().join("generated-20mb.jsonl");
        let small = generate::ensure(&path, SEED_20MB, 20_000_000).expect("write 20 MB");
        eprintln!("generated {} and {}", big.display(), small.display());
        return;
    }
    let prompts = Prompts::builtin();
    // `COMPACTD_BENCH_PROFILE=core|full:FILE:N`: N iterations on FILE and nothing else, for
    // a profiler (`valgrind --tool=callgrind`, `perf record`) to look at one phase alone.
    if let Some(spec) = std::env::var_os("COMPACTD_BENCH_PROFILE") {
        let spec = spec.to_string_lossy().into_owned();
        let mut parts = spec.splitn(3, ':');
        let (what, file, n) = (parts.next(), parts.next(), parts.next());
        let bytes = fs::read(file.expect("FILE")).expect("read FILE");
        let n: usize = n.and_then(|n| n.parse().ok()).unwrap_or(1);
        let start = Instant::now();
        for _ in 0..n {
            match what {
                Some("core") => drop(black_box(parse_prepare_core(black_box(&bytes)))),
                _ => drop(black_box(parse_prepare_serialize(
                    black_box(&bytes),
                    &prompts,
                ))),
            }
        }
        let secs = start.elapsed().as_secs_f64() / n as f64;
        eprintln!(
            "{spec}: {:.2} ms per iteration, {:.0} MB/s",
            secs * 1e3,
            bytes.len() as f64 / 1e6 / secs
        );
        return;
    }
    let generated = generate::ensure_generated_50mb().expect("write the generated session");
    let inputs = [
        (
            "before-compaction",
            fixture("before-compaction.jsonl"),
            false,
        ),
        ("large-session", fixture("large-session.jsonl"), false),
        ("generated-50mb", generated, true),
    ];

    let inputs: Vec<(&str, Vec<u8>, bool)> = inputs
        .into_iter()
        .map(|(id, path, big)| {
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            (id, bytes, big)
        })
        .collect();
    for (group_name, full) in [("prepare", true), ("prepare-core", false)] {
        let mut group = c.benchmark_group(group_name);
        for (id, bytes, big) in &inputs {
            let (id, big) = (*id, *big);
            if full {
                describe(id, bytes, &prompts);
                phases(id, bytes, &prompts, if big { 3 } else { 7 });
            }
            group.throughput(Throughput::Bytes(bytes.len() as u64));
            if big {
                // Hundreds of ms per iteration: a few iterations per sample, flat sampling.
                group
                    .sampling_mode(SamplingMode::Flat)
                    .sample_size(10)
                    .warm_up_time(Duration::from_secs(3))
                    .measurement_time(Duration::from_secs(if full { 20 } else { 10 }));
            } else {
                group
                    .sampling_mode(SamplingMode::Auto)
                    .sample_size(30)
                    .warm_up_time(Duration::from_secs(2))
                    .measurement_time(Duration::from_secs(6));
            }
            if full {
                group.bench_function(id, |b| {
                    b.iter(|| parse_prepare_serialize(black_box(bytes), &prompts))
                });
            } else {
                group.bench_function(id, |b| b.iter(|| parse_prepare_core(black_box(bytes))));
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench_prepare);
criterion_main!(benches);
