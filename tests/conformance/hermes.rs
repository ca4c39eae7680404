//! Differential conformance of the hermes core against hermes-agent 0.19.0.
//!
//! `tests/conformance/hermes/goldens.jsonl` was written by the Python harness next to it
//! (`tests/conformance/hermes/regen.sh`), which runs the real `ContextCompressor.compress()`
//! patched for the divergences H1–H9 of `docs/hermes.md`. Its first line holds the
//! placeholder texts (H12) both sides use: hermes ran with them in place of its own wording,
//! and here they become the `HermesTexts` compactd runs with, so every request and summary
//! compares byte for byte. Each further line is one case: the input, what the summarizer
//! answers, and the expected §15 answer body.
//!
//! Per case: `plan()`; when it asks for a summary, the serialized turns and the request are
//! compared, the golden's answer is handed to `finish()`; then every field of the expected
//! body is compared with `Outcome::to_json()`. Cases listed in `hermes/known-mismatches.txt`
//! may fail (the file says why); any other failure, and a listed case that now passes, fail
//! the test, so the list only ever shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use compactd::hermes::compress::{plan, Input, ModelAnswer, Plan};
use compactd::hermes::settings::{HermesSettings, HermesState};
use compactd::hermes::texts::HermesTexts;
use compactd::hermes::Switches;
use serde_json::Value;

/// The keys every not-compacted answer has (§15).
const NOT_COMPRESSED: [&str; 7] = [
    "compressed",
    "reason",
    "messages",
    "tokensBefore",
    "threshold",
    "state",
    "error",
];

/// Marks the stand-ins for hermes's historical prefixes (H12): compactd recognises the real
/// ones by digest, so a case holding a stand-in is run (it must not panic) but not compared.
const HISTORICAL_STAND_IN: &str = "⟦V-historical.";

/// Where the serialized turns stand in a golden request.
const SERIALIZED: &str = "⟦serialized⟧";

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/hermes")
}

fn text_of(texts: &Value, name: &str) -> String {
    texts[name]
        .as_str()
        .unwrap_or_else(|| panic!("golden header: text {name} missing"))
        .to_string()
}

/// The placeholder texts of the golden header as compactd's `HermesTexts`.
fn texts(header: &Value) -> HermesTexts {
    let t = &header["texts"];
    HermesTexts {
        prefix: text_of(t, "prefix"),
        preamble: text_of(t, "preamble"),
        temporal: text_of(t, "temporal"),
        template: text_of(t, "template"),
        first: text_of(t, "first"),
        update: text_of(t, "update"),
        focus: text_of(t, "focus"),
        memory: text_of(t, "memory"),
        sysnote: text_of(t, "sysnote"),
        fallback: text_of(t, "fallback"),
        fallback_note: text_of(t, "fallback_note"),
    }
}

fn input_of(case: &Value) -> Result<Input, String> {
    let i = &case["input"];
    let de = |v: &Value, what: &str| format!("{what}: {v}");
    Ok(Input {
        messages: i["messages"].as_array().cloned().unwrap_or_default(),
        context_length: i["contextLength"].as_u64().ok_or("contextLength")?,
        settings: serde_json::from_value::<HermesSettings>(i["settings"].clone())
            .map_err(|e| de(&i["settings"], &e.to_string()))?,
        state: serde_json::from_value::<HermesState>(i["state"].clone())
            .map_err(|e| de(&i["state"], &e.to_string()))?,
        focus_topic: i["focusTopic"].as_str().map(str::to_string),
        memory_context: i["memoryContext"].as_str().unwrap_or("").to_string(),
        current_tokens: i["currentTokens"].as_u64(),
        today: i["today"].as_str().map(str::to_string),
    })
}

fn answer_of(case: &Value, model: &str) -> Option<ModelAnswer> {
    let a = &case["answer"];
    if let Some(t) = a["text"].as_str() {
        return Some(ModelAnswer::Text {
            text: t.to_string(),
            model: model.to_string(),
        });
    }
    let f = a.get("failed")?;
    Some(ModelAnswer::Failed {
        abort: f["abort"].as_bool().unwrap_or(false),
        error: f["error"].as_str().unwrap_or("").to_string(),
    })
}

/// The expected body with `{"$input": i}` and `"$input"` resolved, the serialized turns put
/// back into the request.
fn expected_of(case: &Value) -> Value {
    let mut e = case["expected"].clone();
    let inputs = case["input"]["messages"].clone();
    match e.get_mut("messages") {
        Some(m) if m.as_str() == Some("$input") => *m = inputs.clone(),
        Some(Value::Array(list)) => {
            for m in list.iter_mut() {
                if let Some(i) = m.get("$input").and_then(Value::as_u64) {
                    *m = inputs[i as usize].clone();
                }
            }
        }
        _ => {}
    }
    let serialized = e["serialized"].as_str().unwrap_or("").to_string();
    if let Some(reqs) = e.get_mut("requests").and_then(Value::as_array_mut) {
        for r in reqs {
            if let Some(Value::String(c)) = r.pointer_mut("/messages/0/content") {
                *c = c.replacen(SERIALIZED, &serialized, 1);
            }
        }
    }
    e
}

/// The first difference between `got` and `want` under `path`, readably.
fn first_diff(path: &str, got: &Value, want: &Value) -> Option<(String, String)> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => {
                        if let Some(d) = first_diff(&p, gv, wv) {
                            return Some(d);
                        }
                    }
                    None => return Some((p, format!("missing, want {}", short(wv)))),
                }
            }
            let gk: Vec<&String> = g.keys().collect();
            let wk: Vec<&String> = w.keys().collect();
            if gk != wk {
                return Some((format!("{path} (keys)"), format!("got {gk:?}, want {wk:?}")));
            }
            None
        }
        (Value::Array(g), Value::Array(w)) => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                if let Some(d) = first_diff(&format!("{path}[{i}]"), gv, wv) {
                    return Some(d);
                }
            }
            (g.len() != w.len()).then(|| {
                (
                    format!("{path} (length)"),
                    format!("got {}, want {}", g.len(), w.len()),
                )
            })
        }
        (Value::String(g), Value::String(w)) if g != w => Some((path.to_string(), text_diff(g, w))),
        _ if got != want => Some((
            path.to_string(),
            format!("got {}, want {}", short(got), short(want)),
        )),
        _ => None,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

fn text_diff(got: &str, want: &str) -> String {
    let at = got
        .chars()
        .zip(want.chars())
        .position(|(a, b)| a != b)
        .unwrap_or(got.chars().count().min(want.chars().count()));
    let window = |s: &str| {
        s.chars()
            .skip(at.saturating_sub(60))
            .take(140)
            .collect::<String>()
    };
    format!(
        "texts differ at char {at} (lengths {} vs {}):\n      got:  {:?}\n      want: {:?}",
        got.chars().count(),
        want.chars().count(),
        window(got),
        window(want)
    )
}

/// The field a difference path belongs to: `messages`, `boundaries.compressEnd`, …
fn category(path: &str) -> String {
    let p = path.trim_start_matches('.');
    let mut parts = p.split(['.', '[', ' ']);
    let first = parts.next().unwrap_or("");
    match first {
        "boundaries" | "threshold" | "fallback" | "state" => {
            format!("{first}.{}", parts.next().unwrap_or(""))
        }
        _ => first.to_string(),
    }
}

/// Runs one case; the first mismatch as (path, description).
fn run_case(case: &Value, texts: &HermesTexts, model: &str) -> Result<(), (String, String)> {
    let input = input_of(case).map_err(|e| ("input".to_string(), e))?;
    let want = expected_of(case);
    // Redaction is off (H10) except in the planted-secrets cases, which run it on both sides.
    let opts = Switches {
        redact: case["redact"].as_bool().unwrap_or(false),
        no_head_role_user: false,
    };
    let want_call = want["requests"].as_array().is_some_and(|r| !r.is_empty());
    let outcome = match plan(input, texts, &opts) {
        Plan::Done(o) => {
            if want_call {
                return Err(("requests".into(), "no summarizer call, want one".into()));
            }
            *o
        }
        Plan::Summarize(p) => {
            if !want_call {
                return Err((
                    "requests".into(),
                    "a summarizer call, want none".to_string(),
                ));
            }
            if p.serialized() != want["serialized"].as_str().unwrap_or("") {
                let w = want["serialized"].as_str().unwrap_or("");
                return Err(("serialized".into(), text_diff(p.serialized(), w)));
            }
            let w = want
                .pointer("/requests/0/messages/0/content")
                .and_then(Value::as_str)
                .unwrap_or("");
            if p.prompt() != w {
                return Err(("requests.prompt".into(), text_diff(p.prompt(), w)));
            }
            let answer =
                answer_of(case, model).ok_or(("answer".to_string(), "none".to_string()))?;
            p.finish(answer)
        }
    };
    let got = outcome.to_json();
    let Value::Object(w) = &want else {
        return Err(("expected".into(), "not an object".into()));
    };
    let compressed = want["compressed"].as_bool().unwrap_or(false);
    for (k, wv) in w {
        // A body that is not compacted must carry §15's short list; the rest (boundaries,
        // the request of a failed summary) is compared when it is there.
        // `serialized` of a compacted answer is compared through `Pending::serialized`
        // above: the answer carries it for dry runs only (it is in `requests` already).
        let required = (compressed && k != "serialized") || NOT_COMPRESSED.contains(&k.as_str());
        match got.get(k) {
            None if wv.is_null() || !required => {}
            None => return Err((k.clone(), format!("missing, want {}", short(wv)))),
            Some(gv) => {
                if let Some(d) = first_diff(&format!(".{k}"), gv, wv) {
                    return Err(d);
                }
            }
        }
    }
    Ok(())
}

/// `name  # reason` lines; blank lines and `#` comments ignored.
fn known_mismatches() -> BTreeSet<String> {
    let path = dir().join("known-mismatches.txt");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn hermes_conformance_with_reference_goldens() {
    // COMPACTD_HERMES_GOLDENS: goldens of another corpus (a differential run,
    // tests/conformance/hermes/README.md).
    let path = std::env::var_os("COMPACTD_HERMES_GOLDENS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir().join("goldens.jsonl"));
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = data.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap_or("{}")).unwrap();
    assert_eq!(header["reference"], "hermes-agent==0.19.0");
    let texts = texts(&header);
    let model = header["model"].as_str().unwrap_or("").to_string();
    let known = known_mismatches();
    let (mut total, mut passed, mut stand_ins, mut redacted) = (0usize, 0usize, 0usize, 0usize);
    let mut failures: Vec<(String, String, String)> = Vec::new();
    let mut categories: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut divergences: BTreeMap<String, usize> = BTreeMap::new();
    for line in lines {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap_or("?").to_string();
        total += 1;
        redacted += usize::from(case["redact"] == true);
        for d in case["divergences"].as_array().into_iter().flatten() {
            *divergences
                .entry(d.as_str().unwrap_or("?").into())
                .or_default() += 1;
        }
        let result = catch_unwind(AssertUnwindSafe(|| run_case(&case, &texts, &model)))
            .unwrap_or_else(|_| Err(("panic".into(), "compactd panicked".into())));
        let stand_in = case["input"]["messages"]
            .to_string()
            .contains(HISTORICAL_STAND_IN);
        if stand_in && !matches!(&result, Err((w, _)) if w == "panic") {
            stand_ins += 1;
            continue;
        }
        match result {
            Ok(()) => passed += 1,
            Err((where_, what)) => {
                categories
                    .entry(category(&where_))
                    .or_default()
                    .push(name.clone());
                failures.push((name, where_, what));
            }
        }
    }
    println!(
        "hermes conformance: {passed} of {} cases passed ({stand_ins} more with historical \
         stand-ins ran without panicking; {redacted} with redaction on); divergences applied: \
         {divergences:?}",
        total - stand_ins
    );
    for (cat, names) in &categories {
        println!(
            "  mismatch {cat}: {} ({})",
            names.len(),
            names.iter().take(6).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    assert!(
        total >= 300,
        "expected the full golden corpus, found {total} cases"
    );
    assert!(
        redacted >= 30,
        "expected the planted-secrets cases (redaction on), found {redacted}"
    );
    let failed: BTreeSet<String> = failures.iter().map(|f| f.0.clone()).collect();
    let unexpected: Vec<&(String, String, String)> =
        failures.iter().filter(|f| !known.contains(&f.0)).collect();
    let fixed: Vec<&String> = known.iter().filter(|k| !failed.contains(*k)).collect();
    for (name, where_, what) in unexpected.iter().take(25) {
        eprintln!("{name}: {where_}: {what}");
    }
    assert!(
        unexpected.is_empty(),
        "{} hermes conformance mismatches outside known-mismatches.txt ({passed} of {total} passed)",
        unexpected.len()
    );
    assert!(
        fixed.is_empty(),
        "cases in known-mismatches.txt now pass, remove them: {fixed:?}"
    );
}
