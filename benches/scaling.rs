//! The cores' cost by session length: the pinned ledger and the extractive summarizer on
//! generated conversations of 2,000 and 20,000 messages. Criterion reports time per message
//! (`Throughput::Elements`), so linear cost shows as the same throughput at both sizes.
//! `bash bench/scaling.sh` measures the same over HTTP for every route, up to 200,000.
//!
//!     cargo bench --bench scaling

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use compactd::compaction::ledger::{extract, Source, SourceRole};
use compactd::summarize::extractive;
use compactd::summarize::{RequestKind, SummaryRequest};

const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "file", "test", "build", "error", "config", "parser",
    "server", "client", "cache", "token", "module", "route", "deploy", "schema", "index",
];

/// Message `i` of a conversation: user, assistant, tool result, assistant; every tenth
/// user message states a rule, every twentieth tool result fails.
fn text(i: usize) -> String {
    let mut rng = fastrand::Rng::with_seed(i as u64);
    let sentence: Vec<&str> = (0..rng.usize(5..14))
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect();
    let sentence = sentence.join(" ");
    match i % 4 {
        0 if i % 40 == 0 => format!("From now on never touch {} {i}. {sentence}", WORDS[i % 19]),
        3 => format!("Decided to {sentence}"),
        _ => sentence,
    }
}

fn role(i: usize) -> SourceRole<'static> {
    match i % 4 {
        0 => SourceRole::User,
        2 => SourceRole::ToolResult {
            is_error: i % 80 == 2,
            tool_name: "read",
            call: None,
        },
        _ => SourceRole::Assistant,
    }
}

/// The conversation as pi's summarizer prompt carries it.
fn prompt(texts: &[String]) -> String {
    let mut out = String::from("<conversation>\n");
    for (i, t) in texts.iter().enumerate() {
        let label = match i % 4 {
            0 => "[User]",
            2 => "[Tool result]",
            _ => "[Assistant]",
        };
        out.push_str(&format!("{label}: {t}\n\n"));
    }
    out.push_str("</conversation>\n\nSummarize the conversation above.");
    out
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    for n in [2_000usize, 20_000] {
        let texts: Vec<String> = (0..n).map(text).collect();
        let ids: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
        let sources: Vec<Source<'_>> = (0..n)
            .map(|i| Source {
                entry_id: Some(&ids[i]),
                role: role(i),
                text: &texts[i],
            })
            .collect();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("ledger", n), &sources, |b, s| {
            b.iter(|| black_box(extract::<&str>(s, &[])))
        });
        let req = SummaryRequest {
            kind: RequestKind::History,
            system_prompt: String::new(),
            prompt: prompt(&texts),
            max_tokens: 2000,
            strategy: None,
            model: None,
            ledger: None,
        };
        group.bench_with_input(BenchmarkId::new("extractive", n), &req, |b, r| {
            b.iter(|| black_box(extractive::summarize(r)))
        });
    }
    group.finish();
}

criterion_group!(benches, scaling);
criterion_main!(benches);
