//! Properties of tool-output pruning over seeded generated sessions and the real ones.
//!
//! Every case is checked against an independent oracle written over `serde_json`
//! values (docs/algorithm.md, "Pruning"): the exact set of pruned results and `tokensSaved`. Then
//! the changes are applied (the file rewritten as `compactd prune -o` does) and:
//! unchanged lines are byte-identical, changed lines differ only in `content` and
//! `prunedAt`, pruning again changes nothing, and the context estimate never grows.
//! A failing case prints its seed; `PRUNE_SEED=n` replays one.

#[path = "support/fixtures.rs"]
mod fixtures;

use compactd::compaction::context::{context_messages, context_tokens};
use compactd::compaction::tokens::estimate;
use compactd::compaction::AgentMessage;
use compactd::pipeline::prune::plan;
use compactd::pipeline::{BodyFormat, SessionInput, SessionOptions};
use compactd::session::{Entry, EntryBody, Role};
use serde_json::{json, Value};

const TOOLS: [&str; 6] = ["bash", "read", "skill", "edit", "grep", "Bash"];

/// What the oracle knows about one tool result on the path.
#[derive(Debug)]
struct Seen {
    input_index: usize,
    tokens: u64,
    accumulated_before: u64,
    protected: bool,
    pruned: bool,
    before_boundary: bool,
}

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// chars/4 of a toolResult message: string content, or text blocks and 4800 per image.
fn oracle_tokens(msg: &Value) -> u64 {
    let chars = match &msg["content"] {
        Value::String(s) => utf16(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map_or(0, utf16),
                Some("image") => 4800,
                _ => 0,
            })
            .sum(),
        _ => 0,
    };
    chars.div_ceil(4) as u64
}

fn notice_savings(tokens: u64) -> u64 {
    let notice = format!("[Output truncated - {tokens} tokens]");
    tokens.saturating_sub(notice.len().div_ceil(4) as u64)
}

/// The non-blank lines of a JSONL body (input positions, header = 0).
fn lines(body: &[u8]) -> Vec<&[u8]> {
    body.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect()
}

fn path_of<'s, 'a>(input: &'s SessionInput<'a>) -> Vec<&'s Entry<'a>> {
    let s = &input.session;
    s.path(input.leaf(), input.leaf_pointer)
        .unwrap()
        .iter()
        .map(|&i| &s.entries[i])
        .collect()
}

fn path_context_tokens(path: &[&Entry]) -> f64 {
    context_tokens(&context_messages(path))
}

fn path_tool_tokens(path: &[&Entry]) -> u64 {
    path.iter()
        .filter_map(|e| match &e.body {
            EntryBody::Message(m) if m.role == Role::ToolResult => {
                Some(estimate(AgentMessage::Stored(m)))
            }
            _ => None,
        })
        .sum()
}

/// Checks one session under one set of options; returns how many results were pruned.
fn check(case: &str, body: &[u8], values: &[Value], options: &SessionOptions) -> usize {
    let pruned_at = 1_700_000_000_000u64;
    let input = SessionInput::parse(body, BodyFormat::Jsonl, options.clone())
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    let pruning = plan(&input).unwrap();
    let path = path_of(&input);

    // --- The oracle ---------------------------------------------------------------
    let protect = options.protect_tokens.unwrap_or(40_000);
    let minimum = options.minimum_savings.unwrap_or(20_000);
    let protected_tools = options
        .protected_tools
        .clone()
        .unwrap_or_else(|| vec!["skill".into(), "read".into()]);
    let path_values: Vec<&Value> = path.iter().map(|e| &values[e.index]).collect();
    // v3: the kept entry's id; v1: its line (header = 0), which migration turns into an id.
    let boundary = path_values
        .iter()
        .rev()
        .find(|v| v["type"] == "compaction")
        .and_then(|c| {
            match (
                c["firstKeptEntryId"].as_str(),
                c["firstKeptEntryIndex"].as_u64(),
            ) {
                (Some(id), _) => path_values.iter().position(|v| v["id"] == id),
                (None, Some(line)) => path.iter().position(|e| e.index as u64 == line),
                _ => None,
            }
        })
        .unwrap_or(0);
    let mut accumulated = 0;
    let mut seen = Vec::new();
    for (i, v) in path_values.iter().enumerate().rev() {
        let m = &v["message"];
        if v["type"] != "message" || m["role"] != "toolResult" {
            continue;
        }
        let tokens = oracle_tokens(m);
        seen.push(Seen {
            input_index: path[i].index,
            tokens,
            accumulated_before: accumulated,
            protected: m["toolName"]
                .as_str()
                .is_some_and(|n| protected_tools.iter().any(|p| p == n)),
            pruned: m.get("prunedAt").is_some(),
            before_boundary: i < boundary,
        });
        accumulated += tokens;
    }
    let candidates: Vec<&Seen> = seen
        .iter()
        .filter(|s| {
            !s.pruned
                && !s.before_boundary
                && s.accumulated_before >= protect
                && !s.protected
                && s.tokens >= 50
        })
        .collect();
    let saved: u64 = candidates.iter().map(|s| notice_savings(s.tokens)).sum();
    let expected: Vec<usize> = if !candidates.is_empty() && saved >= minimum {
        let mut v: Vec<usize> = candidates.iter().map(|s| s.input_index).collect();
        v.reverse();
        v
    } else {
        Vec::new()
    };
    let changed: Vec<usize> = pruning.changes.iter().map(|c| c.entry.index).collect();
    let mut changed_sorted = changed.clone();
    changed_sorted.sort_unstable();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_unstable();
    assert_eq!(changed_sorted, expected_sorted, "{case}: pruned results");
    assert_eq!(
        pruning.tokens_saved,
        if expected.is_empty() { 0 } else { saved },
        "{case}: tokensSaved"
    );
    // The rules, stated one by one.
    for c in &pruning.changes {
        let s = seen
            .iter()
            .find(|s| s.input_index == c.entry.index)
            .unwrap();
        assert!(!s.protected, "{case}: a protected result was pruned");
        assert!(
            s.accumulated_before >= protect,
            "{case}: inside protectTokens"
        );
        assert!(s.tokens >= 50, "{case}: a result under 50 tokens");
        assert!(!s.before_boundary, "{case}: before the kept boundary");
        assert!(!s.pruned, "{case}: pruned twice");
        assert_eq!(c.tokens, s.tokens, "{case}: token estimate");
    }
    // Path order.
    let order: Vec<usize> = pruning
        .changes
        .iter()
        .map(|c| path.iter().position(|e| std::ptr::eq(*e, c.entry)).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{case}: path order");

    // --- The answer ---------------------------------------------------------------
    let answer = pruning.response(pruned_at).unwrap();
    assert_eq!(answer.pruned_count, changed.len());
    assert_eq!(answer.entry_indexes, changed);
    for (raw, c) in answer.entries.iter().zip(&pruning.changes) {
        let got: Value = serde_json::from_str(raw.get()).unwrap();
        let mut want = expected_rewrite(&values[c.entry.index], c.tokens, pruned_at);
        if c.entry.migrated_ids {
            let o = want.as_object_mut().unwrap();
            o.insert("id".into(), json!(c.entry.id().unwrap()));
            o.insert("parentId".into(), json!(c.entry.parent_id.as_deref()));
        }
        assert_eq!(got, want, "{case}: answer entry {}", c.entry.index);
        assert_eq!(keys(&got), keys(&want), "{case}: key order");
        assert_eq!(keys(&got["message"]), keys(&want["message"]), "{case}");
    }

    // --- Applying it ----------------------------------------------------------------
    let rewritten = pruning.rewrite(body, pruned_at).unwrap();
    let (old_lines, new_lines) = (split(body), split(&rewritten));
    assert_eq!(old_lines.len(), new_lines.len(), "{case}: line count");
    let old_nonblank = lines(body);
    for (old, new) in old_lines.iter().zip(&new_lines) {
        if old == new {
            continue;
        }
        let old_trim = old.strip_suffix(b"\r").unwrap_or(old);
        let pos = old_nonblank
            .iter()
            .position(|l| l.as_ptr() == old_trim.as_ptr())
            .expect("a changed line is an entry");
        assert!(changed.contains(&pos), "{case}: line {pos} changed unasked");
        let got: Value = serde_json::from_slice(new).unwrap();
        let c = pruning
            .changes
            .iter()
            .find(|c| c.entry.index == pos)
            .unwrap();
        let want = expected_rewrite(&values[pos], c.tokens, pruned_at);
        assert_eq!(got, want, "{case}: rewritten line {pos}");
        assert_eq!(keys(&got), keys(&want), "{case}: no ids added to the file");
    }
    assert_eq!(
        old_lines
            .iter()
            .zip(&new_lines)
            .filter(|(a, b)| a != b)
            .count(),
        changed.len(),
        "{case}: every change is written"
    );

    let again = SessionInput::parse(&rewritten, BodyFormat::Jsonl, options.clone())
        .unwrap_or_else(|e| panic!("{case}: the rewritten file does not parse: {e}"));
    let second = plan(&again).unwrap();
    assert!(
        second.changes.is_empty(),
        "{case}: pruning again pruned {}",
        second.changes.len()
    );
    assert_eq!(second.tokens_saved, 0);
    let new_path = path_of(&again);
    assert_eq!(new_path.len(), path.len(), "{case}: same path");
    let (before, after) = (path_context_tokens(&path), path_context_tokens(&new_path));
    assert!(after <= before, "{case}: context grew {before} → {after}");
    let (before, after) = (path_tool_tokens(&path), path_tool_tokens(&new_path));
    if changed.is_empty() {
        assert_eq!(after, before);
    } else {
        assert!(after < before, "{case}: tool tokens {before} → {after}");
        assert_eq!(
            before - after,
            pruning.tokens_saved,
            "{case}: saved as estimated"
        );
    }
    changed.len()
}

fn values_of(body: &[u8]) -> Vec<Value> {
    lines(body)
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// The entry as pruning must leave it (JSON value, keys in order).
fn expected_rewrite(orig: &Value, tokens: u64, pruned_at: u64) -> Value {
    let mut v = orig.clone();
    let m = v["message"].as_object_mut().unwrap();
    m.insert(
        "content".into(),
        json!([{"type": "text", "text": format!("[Output truncated - {tokens} tokens]")}]),
    );
    m.insert("prunedAt".into(), json!(pruned_at));
    v
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn split(b: &[u8]) -> Vec<&[u8]> {
    b.split(|&c| c == b'\n').collect()
}

// ---------------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------------

/// A JSON string literal of about `len` UTF-16 units, with escapes and non-ASCII.
fn text(rng: &mut fastrand::Rng, len: usize) -> String {
    const PIECES: [&str; 9] = [
        "lorem ipsum ",
        "fn main() {}",
        "\\n",
        "\\\"q\\\"",
        "é",
        "\\u00e9",
        "😀",
        "\\ud83d\\ude00",
        "\\t",
    ];
    let mut out = String::from("\"");
    let mut units = 0;
    while units < len {
        let p = PIECES[rng.usize(..PIECES.len())];
        out.push_str(p);
        units += match p {
            "😀" | "\\ud83d\\ude00" => 2,
            "\\n" | "é" | "\\u00e9" | "\\t" => 1,
            "\\\"q\\\"" => 3,
            p => p.len(),
        };
    }
    out.push('"');
    out
}

fn size(rng: &mut fastrand::Rng) -> usize {
    match rng.u8(..10) {
        0..=3 => rng.usize(..400),
        4..=8 => rng.usize(400..1_500),
        _ => rng.usize(1_500..6_000),
    }
}

fn tool_result(rng: &mut fastrand::Rng, n: usize) -> String {
    let tool = TOOLS[rng.usize(..TOOLS.len())];
    let mut members: Vec<String> = vec![
        r#""role":"toolResult""#.into(),
        format!(r#""toolCallId":"call{n}""#),
        r#""isError":false"#.into(),
        format!(r#""timestamp":{}"#, 1_767_225_600_000u64 + n as u64),
    ];
    match rng.u8(..20) {
        0 => {}                                      // no toolName
        1 => members.push(r#""toolName":7"#.into()), // not a string
        _ => members.push(format!(r#""toolName":"{tool}""#)),
    }
    let content = match rng.u8(..20) {
        0 => None,
        1 => Some("null".to_string()),
        2..=4 => Some({
            let len = size(rng);
            text(rng, len)
        }),
        _ => {
            let mut blocks = Vec::new();
            for _ in 0..rng.usize(1..3) {
                blocks.push(match rng.u8(..10) {
                    0 => r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#.to_string(),
                    1 => r#"{"type":"future","x":1}"#.to_string(),
                    _ => format!(r#"{{"type":"text","text":{}}}"#, {
                        let len = size(rng);
                        text(rng, len)
                    }),
                });
            }
            Some(format!("[{}]", blocks.join(",")))
        }
    };
    if let Some(c) = content {
        members.push(format!(r#""content":{c}"#));
    }
    if rng.u8(..4) == 0 {
        members.push(
            r#""details":{"exitCode":0,"ratio":1.50,"big":1e3,"nested":{"b":2,"a":[true,null]}}"#
                .into(),
        );
    }
    match rng.u8(..12) {
        0 => members.push(format!(r#""prunedAt":{}"#, 1_600_000_000_000u64 + n as u64)),
        1 => members.push(r#""prunedAt":null"#.into()),
        _ => {}
    }
    rng.shuffle(&mut members);
    format!("{{{}}}", members.join(","))
}

/// A generated session file and its options.
fn generate(seed: u64) -> (String, SessionOptions) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let v1 = rng.u8(..5) == 0;
    let mut lines = vec![if v1 {
        format!(
            r#"{{"type":"session","id":"gen-{seed}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/r"}}"#
        )
    } else {
        format!(
            r#"{{"type":"session","version":3,"id":"gen-{seed}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/r"}}"#
        )
    }];
    let n = rng.usize(1..60);
    let mut ids: Vec<String> = Vec::new();
    for k in 0..n {
        let (kind, body) = match rng.u8(..20) {
            0..=2 => (
                "message",
                format!(r#""message":{{"role":"user","content":{}}}"#, {
                    let len = rng.usize(..200);
                    text(&mut rng, len)
                }),
            ),
            3..=6 => {
                let usage = if rng.bool() {
                    format!(
                        r#","usage":{{"input":{},"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":0}}"#,
                        rng.u32(..50_000)
                    )
                } else {
                    String::new()
                };
                (
                    "message",
                    format!(
                        r#""message":{{"role":"assistant","content":[{{"type":"toolCall","id":"call{k}","name":"bash","arguments":{{"cmd":"ls"}}}}],"stopReason":"toolUse"{usage}}}"#
                    ),
                )
            }
            7..=15 => (
                "message",
                format!(r#""message":{}"#, tool_result(&mut rng, k)),
            ),
            16 if !v1 && !ids.is_empty() => {
                let kept = if rng.u8(..5) == 0 {
                    "nowhere".to_string()
                } else {
                    ids[rng.usize(..ids.len())].clone()
                };
                (
                    "compaction",
                    format!(r#""summary":"s{k}","firstKeptEntryId":"{kept}","tokensBefore":1000"#),
                )
            }
            17 => (
                "custom_message",
                r#""customType":"note","content":"hello","display":true"#.to_string(),
            ),
            _ => ("label", r#""label":"x""#.to_string()),
        };
        let id_part = if v1 {
            String::new()
        } else {
            let id = format!("g{k}");
            let parent = match ids.len() {
                0 => "null".to_string(),
                len if rng.u8(..7) == 0 => format!("\"{}\"", ids[rng.usize(..len)]),
                len => format!("\"{}\"", ids[len - 1]),
            };
            ids.push(id.clone());
            format!(r#""id":"{id}","parentId":{parent},"#)
        };
        lines.push(format!(
            r#"{{"type":"{kind}",{id_part}"timestamp":"2026-01-01T00:00:00.000Z",{body}}}"#
        ));
        if rng.u8(..30) == 0 {
            lines.push(String::new());
        }
    }
    let options = SessionOptions {
        leaf_id: (!v1 && rng.u8(..4) == 0).then(|| ids[rng.usize(..ids.len())].clone()),
        protect_tokens: match rng.u8(..10) {
            0 => None,
            1..=2 => Some(rng.u64(..3)),
            _ => Some(rng.u64(..3_000)),
        },
        minimum_savings: match rng.u8(..10) {
            0 => None,
            1..=2 => Some(0),
            _ => Some(rng.u64(..2_000)),
        },
        protected_tools: match rng.u8(..4) {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some(
                TOOLS
                    .iter()
                    .filter(|_| rng.bool())
                    .map(|t| t.to_string())
                    .collect(),
            ),
        },
        ..SessionOptions::default()
    };
    (lines.join("\n") + "\n", options)
}

#[test]
fn generated_sessions() {
    let seeds: Vec<u64> = match std::env::var("PRUNE_SEED") {
        Ok(s) => vec![s.parse().expect("PRUNE_SEED is a number")],
        Err(_) => (0..300).collect(),
    };
    let mut pruned_cases = 0;
    for seed in seeds {
        let (text, options) = generate(seed);
        let pruned = check(
            &format!("seed {seed}"),
            text.as_bytes(),
            &values_of(text.as_bytes()),
            &options,
        );
        pruned_cases += usize::from(pruned > 0);
    }
    // The generator must exercise pruning, not only the no-op.
    if std::env::var("PRUNE_SEED").is_err() {
        assert!(
            pruned_cases > 75,
            "only {pruned_cases} cases pruned anything"
        );
    }
}

#[test]
fn real_sessions() {
    let mut pruned_cases = 0;
    for name in fixtures::ALL {
        let body = std::fs::read(fixtures::path(name)).unwrap();
        let values = values_of(&body);
        let input =
            SessionInput::parse(&body, BodyFormat::Jsonl, SessionOptions::default()).unwrap();
        let entries = &input.session.entries;
        // The last entry, and leaves spread over the file.
        let mut leaves = vec![None];
        leaves.push(entries[entries.len() / 2].id().map(str::to_string));
        for leaf in leaves {
            for (protect, minimum, tools) in [
                (None, None, None),
                (Some(0), Some(0), None),
                (Some(1_000), Some(0), Some(vec![])),
                (Some(20_000), Some(5_000), Some(vec!["bash".to_string()])),
            ] {
                let options = SessionOptions {
                    leaf_id: leaf.clone(),
                    protect_tokens: protect,
                    minimum_savings: minimum,
                    protected_tools: tools,
                    ..SessionOptions::default()
                };
                let case = format!("{name} leaf {leaf:?} {protect:?}/{minimum:?}");
                pruned_cases += usize::from(check(&case, &body, &values, &options) > 0);
            }
        }
    }
    assert!(pruned_cases >= 10, "{pruned_cases}");
}
