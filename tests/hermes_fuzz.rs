//! Time-bounded fuzzing of the hermes core, run by `cargo test`: hostile message lists
//! (every role, content and tool-call shape hermes meets, and some it crashes on),
//! hostile settings and state, and every kind of summarizer answer. No case may panic,
//! and every answer must leave a session a model API accepts: unchanged means the input
//! as sent; compacted means one source per message and no tool result without its call
//! or call without its result.
//!
//! `COMPACTD_FUZZ_SECS` bounds the run [5]; `COMPACTD_FUZZ_SEED` replays it. A panicking
//! case is written to `target/fuzz-failures/` and named.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use compactd::hermes::compress::{plan, Input, ModelAnswer, Outcome, Plan};
use compactd::hermes::settings::{HermesSettings, HermesState};
use compactd::hermes::summaries::{END_MARKER, MERGE_DELIMITER, PRIOR_CONTEXT_HEADER};
use compactd::hermes::texts::HermesTexts;
use compactd::hermes::Switches;
use fastrand::Rng;
use serde_json::{json, Value};

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

/// Text pieces that hit the rules: markers, secrets, paths, think blocks, lengths where
/// hermes cuts, characters Python and Rust count differently.
fn text(rng: &mut Rng, texts: &HermesTexts) -> String {
    let pieces: Vec<String> = vec![
        "fix the bug in /src/lib.rs".into(),
        texts.prefix.clone(),
        "[CONTEXT SUMMARY]: old".into(),
        END_MARKER.into(),
        MERGE_DELIMITER.into(),
        PRIOR_CONTEXT_HEADER.into(),
        "<think>plan</think>".into(),
        "<thinking>open".into(),
        "MEDIA:/tmp/a.png".into(),
        "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789".into(),
        "ghp_abcdefghijklmnopqrstuvwxyz012345".into(),
        "Traceback: error".into(),
        "{\"exit_code\": 1, \"total_count\": 3}".into(),
        "😀e\u{301}\u{200b}\u{202e}\u{0}\u{1c}\u{fffd}".into(),
        "x".repeat(*pick(rng, &[199, 200, 201, 500, 501, 1500, 6000, 6001])),
        "line\n".repeat(rng.usize(..300)),
        String::new(),
        " \t\n".into(),
    ];
    (0..rng.usize(1..4))
        .map(|_| pick(rng, &pieces).clone())
        .collect()
}

fn hostile(rng: &mut Rng, texts: &HermesTexts) -> Value {
    match rng.usize(..10) {
        0 => Value::Null,
        1 => json!(rng.bool()),
        2 => json!(*pick(rng, &[0.0, -0.0, 1e300, 1.5])),
        3 => json!(u64::MAX),
        4 => json!({}),
        5 => json!([]),
        6 => json!([text(rng, texts)]),
        7 => json!({"nested": [1, {"a": null}]}),
        _ => Value::String(text(rng, texts)),
    }
}

fn part(rng: &mut Rng, texts: &HermesTexts) -> Value {
    match rng.usize(..9) {
        0 => json!({"type": "text", "text": text(rng, texts)}),
        1 => json!({"type": "text", "text": hostile(rng, texts)}),
        2 => json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
        3 => json!({"type": "image_url", "image_url": "data:image/png;base64,AAAA"}),
        4 => json!({"type": "input_image", "image_url": "https://x"}),
        5 => json!({"type": "image", "source": {"data": "AAAA"}}),
        6 => json!({"type": "input_text", "text": "t"}),
        7 => Value::String(text(rng, texts)),
        _ => hostile(rng, texts),
    }
}

fn content(rng: &mut Rng, texts: &HermesTexts) -> Option<Value> {
    Some(match rng.usize(..8) {
        0 => return None,
        1 => Value::Null,
        2 | 3 => Value::String(text(rng, texts)),
        4 | 5 => Value::Array((0..rng.usize(..4)).map(|_| part(rng, texts)).collect()),
        6 => {
            json!({"_multimodal": true, "content": [part(rng, texts)], "text_summary": text(rng, texts)})
        }
        _ => hostile(rng, texts),
    })
}

fn call(rng: &mut Rng, id: &str, texts: &HermesTexts) -> Value {
    let name = *pick(
        rng,
        &[
            "terminal",
            "read_file",
            "web_extract",
            "patch",
            "x",
            "delegate_task",
        ],
    );
    let arguments = match rng.usize(..6) {
        0 => Value::Null,
        1 => json!(format!(
            "{{\"path\": \"/a/{}\", \"urls\": [{{\"href\": 5}}], \"n\": 1E2}}",
            "p".repeat(rng.usize(..700))
        )),
        2 => json!("not json"),
        3 => json!({"path": "/a"}),
        _ => Value::String(format!("{{\"command\": {}}}", json!(text(rng, texts)))),
    };
    match rng.usize(..12) {
        0 => hostile(rng, texts),
        1 => json!({"id": id, "type": "function", "function": null}),
        2 => {
            json!({"call_id": id, "id": "other", "type": "function", "function": {"name": name, "arguments": arguments}})
        }
        _ => {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}, "index": 0})
        }
    }
}

fn message(rng: &mut Rng, ids: &mut Vec<String>, texts: &HermesTexts) -> Value {
    let role = *pick(
        rng,
        &[
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "system",
            "",
            "developer",
        ],
    );
    let mut m = serde_json::Map::new();
    match rng.usize(..20) {
        0 => {}
        1 => {
            m.insert("role".into(), Value::Null);
        }
        2 => {
            m.insert("role".into(), json!(5));
        }
        _ => {
            m.insert("role".into(), json!(role));
        }
    }
    if let Some(c) = content(rng, texts) {
        m.insert("content".into(), c);
    }
    if role == "assistant" && rng.bool() {
        let calls: Vec<Value> = (0..rng.usize(1..8))
            .map(|_| {
                let id = format!("call_{}", rng.u32(..50));
                ids.push(id.clone());
                call(rng, &id, texts)
            })
            .collect();
        m.insert(
            "tool_calls".into(),
            if rng.usize(..15) == 0 {
                hostile(rng, texts)
            } else {
                Value::Array(calls)
            },
        );
    }
    if role == "tool" {
        let id = match (ids.is_empty(), rng.usize(..8)) {
            (_, 0) => hostile(rng, texts),
            (false, _) => json!(pick(rng, ids)),
            (true, _) => json!("orphan"),
        };
        m.insert("tool_call_id".into(), id);
    }
    for key in [
        "_db_persisted",
        "api_content",
        "_compressed_summary",
        "reasoning_content",
        "x_unknown",
    ] {
        if rng.usize(..12) == 0 {
            m.insert(key.into(), hostile(rng, texts));
        }
    }
    if rng.usize(..40) == 0 {
        return hostile(rng, texts);
    }
    Value::Object(m)
}

fn input(rng: &mut Rng, texts: &HermesTexts) -> Input {
    let mut ids = Vec::new();
    let n = rng.usize(..40);
    let mut messages: Vec<Value> = (0..n).map(|_| message(rng, &mut ids, texts)).collect();
    if rng.bool() && !messages.is_empty() {
        messages[0] = json!({"role": "system", "content": text(rng, texts)});
    }
    Input {
        messages,
        context_length: *pick(rng, &[1, 1000, 8000, 64_000, 200_000, 600_000, u64::MAX]),
        settings: HermesSettings {
            threshold_percent: *pick(rng, &[0.01, 0.5, 0.9, 1.0]),
            target_ratio: *pick(rng, &[0.0, 0.2, 0.9, 5.0]),
            protect_first_n: rng.usize(..6),
            protect_last_n: *pick(rng, &[0, 1, 3, 8, 20, 1000]),
            max_tokens: *pick(rng, &[None, Some(1), Some(100_000), Some(u64::MAX)]),
            abort_on_summary_failure: rng.usize(..5) == 0,
        },
        state: HermesState {
            compression_count: *pick(rng, &[0, 1, u64::MAX - 1]),
            previous_summary: if rng.bool() {
                None
            } else {
                Some(text(rng, texts))
            },
        },
        focus_topic: rng.bool().then(|| text(rng, texts)),
        memory_context: if rng.bool() {
            String::new()
        } else {
            text(rng, texts)
        },
        current_tokens: rng.bool().then(|| rng.u64(..)),
        today: rng.bool().then(|| "2026-01-15".to_string()),
    }
}

fn answer(rng: &mut Rng, texts: &HermesTexts) -> ModelAnswer {
    match rng.usize(..6) {
        0 => ModelAnswer::Failed {
            abort: true,
            error: text(rng, texts),
        },
        1 => ModelAnswer::Failed {
            abort: false,
            error: "x".repeat(rng.usize(..400)),
        },
        2 => ModelAnswer::Text {
            text: String::new(),
            model: "m".into(),
        },
        3 => ModelAnswer::Text {
            text: "<think>only thinking</think>".into(),
            model: "m".into(),
        },
        _ => ModelAnswer::Text {
            text: format!(
                "## Historical Task Snapshot\nold\n\n## Progress\n{}",
                text(rng, texts)
            ),
            model: "m".into(),
        },
    }
}

/// `call_id || id` of a call, when a string.
fn call_id(c: &Value) -> Option<&str> {
    ["call_id", "id"]
        .iter()
        .filter_map(|k| c.get(*k))
        .find(|v| compactd::hermes::py::is_truthy(v))
        .and_then(Value::as_str)
}

fn check(input: &[Value], outcome: &Outcome) {
    let body = outcome.to_json();
    let messages = body["messages"].as_array().expect("messages");
    if !outcome.compressed() {
        assert_eq!(
            messages.as_slice(),
            input,
            "unchanged means the input as sent"
        );
        return;
    }
    assert_eq!(
        body["sources"].as_array().map(Vec::len),
        Some(messages.len())
    );
    let calls: Vec<&str> = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .flat_map(|m| {
            m.get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(call_id)
        .collect();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .filter_map(|m| m.get("tool_call_id").and_then(Value::as_str))
        .filter(|id| !id.is_empty())
        .collect();
    for r in &results {
        assert!(calls.contains(r), "result {r:?} without its call");
    }
    for c in &calls {
        assert!(results.contains(c), "call {c:?} without its result");
    }
}

#[test]
fn fuzz_the_hermes_core() {
    let secs: u64 = std::env::var("COMPACTD_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(5, |s: u64| s.div_ceil(2));
    let seed: u64 = std::env::var("COMPACTD_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0004_E2E5);
    let texts = HermesTexts::builtin();
    let mut rng = Rng::with_seed(seed);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut cases, mut compressed) = (0u64, 0u64);
    static LAST_PANIC: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = info.to_string();
    }));
    while Instant::now() < deadline || cases < 300 {
        let case = input(&mut rng, &texts);
        let reply = answer(&mut rng, &texts);
        let opts = Switches {
            redact: rng.bool(),
            no_head_role_user: rng.usize(..4) == 0,
        };
        let messages = case.messages.clone();
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let outcome = match plan(case.clone(), &texts, &opts) {
                Plan::Done(o) => *o,
                Plan::Summarize(p) => p.finish(reply.clone()),
            };
            check(&messages, &outcome);
            outcome.compressed()
        }));
        match run {
            Ok(c) => compressed += u64::from(c),
            Err(_) => {
                std::panic::set_hook(hook);
                let message = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let dir = format!("{}/target/fuzz-failures", env!("CARGO_MANIFEST_DIR"));
                std::fs::create_dir_all(&dir).unwrap();
                let path = format!("{dir}/hermes-{seed:x}-{cases}.json");
                std::fs::write(&path, Value::Array(messages).to_string()).unwrap();
                panic!("case {cases} panicked: {message}\n  messages: {path}\n  settings: {:?} {:?}\n  answer: {reply:?}\n  replay: COMPACTD_FUZZ_SEED={seed}", case.settings, case.state);
            }
        }
        cases += 1;
    }
    std::panic::set_hook(hook);
    eprintln!("hermes fuzz: {cases} cases in {secs} s, {compressed} compacted (seed {seed})");
    assert!(
        compressed > cases / 10 && compressed < cases,
        "{compressed} of {cases} compacted"
    );
}
