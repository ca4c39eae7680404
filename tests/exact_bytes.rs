//! Input kept exactly, as a property over generated inputs: whatever compactd
//! sends back unchanged is byte-identical to what came in.
//!
//! Sessions and hermes message lists are drawn with unknown fields in random places,
//! numbers in every JSON spelling (`1e5`, `1E+05`, `-0`, `0.10`, `1e999`, 30 digits),
//! strings with every escape (`\/`, `\u00e9`, pairs, lone surrogates `\ud800`) and odd
//! whitespace. Then:
//! * pi (`/v1/prepare`'s answer): `messagesToSummarize` then `turnPrefixMessages` are
//!   exactly the messages of `summarizedEntryIds`, each the entry's `message` text as sent;
//! * pi (`/v1/prune`'s answer): a pruned entry keeps every field but the message's
//!   `content` (and the added `prunedAt`) as sent, byte for byte;
//! * hermes (`/v1/hermes/compress`'s answer, the summary given): every returned message
//!   is its source's text as sent, unless it differs from it as a value (compaction
//!   rewrote it).
//!
//! A fixed seed: a failure is shrunk, printed, and replays on the next run.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use compactd::hermes::compress::{ModelAnswer, Plan};
use compactd::pipeline::hermes::{parse_request, plan_hermes, HermesAnswer};
use compactd::pipeline::prune::plan_prune;
use compactd::pipeline::{
    prepare_response, BodyFormat, PrepareOptions, PruneOptions, SessionInput,
};
use compactd::summarize::Prompts;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use serde_json::value::RawValue;

const STRING_PIECES: [&str; 16] = [
    "plain words ",
    "\\/",
    "\\u00e9",
    "\\u00E9",
    "\\ud800",
    "\\udfff",
    "\\ud83d\\ude00",
    "\\uD83D\\uDE00",
    "é",
    "😀",
    "\\n",
    "\\\"",
    "\\\\",
    "\\b\\f\\r\\t",
    "\\u0041",
    "/",
];

const NUMBERS: [&str; 12] = [
    "1e5",
    "1E+05",
    "-0",
    "0.10",
    "1e999",
    "-1.5E-7",
    "123456789012345678901234567890",
    "0",
    "2.50",
    "1E5",
    "-0.0e0",
    "9007199254740993",
];

/// Draws pieces of JSON text from a seed: the structure is proptest's, the spelling this.
struct Pen(fastrand::Rng);

impl Pen {
    fn string(&mut self) -> String {
        let n = self.0.usize(0..6);
        self.string_of(n)
    }

    /// A string of `n` pieces.
    fn string_of(&mut self, n: usize) -> String {
        let body: String = (0..n)
            .map(|_| STRING_PIECES[self.0.usize(..STRING_PIECES.len())])
            .collect();
        format!("\"{body}\"")
    }

    fn number(&mut self) -> &'static str {
        NUMBERS[self.0.usize(..NUMBERS.len())]
    }

    /// `:` or `,` with or without spaces around it.
    fn sep(&mut self, c: char) -> String {
        match self.0.u8(0..4) {
            0 => format!(" {c} "),
            1 => format!("{c} "),
            _ => c.to_string(),
        }
    }

    fn value(&mut self, depth: u32) -> String {
        match self.0.u8(0..if depth > 1 { 4 } else { 6 }) {
            0 => self.number().to_string(),
            1 => self.string(),
            2 => ["true", "false", "null"][self.0.usize(..3)].to_string(),
            3 => self.number().to_string(),
            4 => {
                let items: Vec<String> = (0..self.0.usize(0..3))
                    .map(|_| self.value(depth + 1))
                    .collect();
                format!("[{}]", items.join(&self.sep(',')))
            }
            _ => {
                let fields = self.unknown_fields(depth + 1);
                format!("{{{}}}", fields.join(&self.sep(',')))
            }
        }
    }

    /// `"x-…": value` pairs no reader knows.
    fn unknown_fields(&mut self, depth: u32) -> Vec<String> {
        (0..self.0.usize(0..3))
            .map(|i| {
                let colon = self.sep(':');
                format!("\"x-{i}{}\"{colon}{}", self.0.u8(..), self.value(depth))
            })
            .collect()
    }

    /// Known fields, with unknown ones shuffled in between them.
    fn object(&mut self, known: Vec<String>) -> String {
        let mut fields = known;
        for f in self.unknown_fields(1) {
            let at = self.0.usize(..=fields.len());
            fields.insert(at, f);
        }
        format!("{{{}}}", fields.join(&self.sep(',')))
    }

    fn pair(&mut self, key: &str, value: impl Into<String>) -> String {
        format!("\"{key}\"{}{}", self.sep(':'), value.into())
    }

    fn text_block(&mut self) -> String {
        let text = self.string();
        let known = vec![self.pair("type", "\"text\""), self.pair("text", text)];
        self.object(known)
    }

    fn content(&mut self, blocks: Vec<String>) -> String {
        if blocks.is_empty() {
            return self.string();
        }
        format!("[{}]", blocks.join(&self.sep(',')))
    }

    /// A pi message of `role` (`u`ser, `a`ssistant, `t`ool result).
    fn pi_message(&mut self, role: char, i: usize) -> String {
        let mut known = Vec::new();
        match role {
            'u' => {
                known.push(self.pair("role", "\"user\""));
                let blocks = (0..self.0.usize(0..3)).map(|_| self.text_block()).collect();
                let content = self.content(blocks);
                known.push(self.pair("content", content));
            }
            'a' => {
                known.push(self.pair("role", "\"assistant\""));
                let mut blocks: Vec<String> =
                    (0..self.0.usize(1..3)).map(|_| self.text_block()).collect();
                if self.0.bool() {
                    let args = format!("{{\"command\":{},\"n\":{}}}", self.string(), self.number());
                    let call = vec![
                        self.pair("type", "\"toolCall\""),
                        self.pair("id", format!("\"c{i}\"")),
                        self.pair("name", "\"bash\""),
                        self.pair("arguments", args),
                    ];
                    blocks.push(self.object(call));
                }
                known.push(self.pair("content", format!("[{}]", blocks.join(","))));
                known.push(self.pair("stopReason", "\"stop\""));
            }
            _ => {
                known.push(self.pair("role", "\"toolResult\""));
                known.push(self.pair("toolCallId", format!("\"c{i}\"")));
                known.push(self.pair("toolName", "\"bash\""));
                // Long enough (50 tokens) for pruning to take it.
                let pieces = self.0.usize(40..160);
                let text = self.string_of(pieces);
                let known_block = vec![self.pair("type", "\"text\""), self.pair("text", text)];
                let block = self.object(known_block);
                known.push(self.pair("content", format!("[{block}]")));
                known.push(self.pair("isError", "false"));
            }
        }
        self.object(known)
    }
}

/// The shape of a session: per entry, a message role or `x` (an unknown entry type).
fn shapes() -> impl Strategy<Value = (Vec<char>, u64, u64)> {
    (
        prop::collection::vec(prop::sample::select(vec!['u', 'a', 't', 'x']), 1..24),
        any::<u64>(),
        1u64..400,
    )
}

/// A JSONL session and, per entry id, the message text as written (message entries).
fn pi_session(roles: &[char], seed: u64) -> (String, HashMap<String, String>) {
    let mut pen = Pen(fastrand::Rng::with_seed(seed));
    let header = vec![
        pen.pair("type", "\"session\""),
        pen.pair("version", "3"),
        pen.pair("id", "\"s\""),
    ];
    let mut lines = vec![pen.object(header)];
    let mut messages = HashMap::new();
    for (i, &role) in roles.iter().enumerate() {
        let parent = match i {
            0 => "null".to_string(),
            _ => format!("\"e{}\"", i - 1),
        };
        let mut known = vec![
            pen.pair("id", format!("\"e{i}\"")),
            pen.pair("parentId", parent),
            pen.pair("timestamp", "\"2026-01-01T00:00:00.000Z\""),
        ];
        if role == 'x' {
            known.push(pen.pair("type", "\"x-note\""));
            let v = pen.value(1);
            known.push(pen.pair("data", v));
        } else {
            known.push(pen.pair("type", "\"message\""));
            let m = pen.pi_message(role, i);
            messages.insert(format!("e{i}"), m.clone());
            known.push(pen.pair("message", m));
        }
        lines.push(pen.object(known));
    }
    (lines.join("\n") + "\n", messages)
}

fn raw_fields(json: &[u8]) -> HashMap<String, &RawValue> {
    serde_json::from_slice(json).expect("the answer is a JSON object")
}

fn raw_list(v: Option<&&RawValue>) -> Vec<String> {
    v.map(|v| {
        serde_json::from_str::<Vec<&RawValue>>(v.get())
            .unwrap()
            .iter()
            .map(|m| m.get().to_string())
            .collect()
    })
    .unwrap_or_default()
}

/// Cases that echoed at least one message (pi) / compacted and kept one as sent (hermes):
/// the properties must not hold only vacuously.
static PI_ECHOED: AtomicUsize = AtomicUsize::new(0);
static HERMES_KEPT: AtomicUsize = AtomicUsize::new(0);
static PRUNED: AtomicUsize = AtomicUsize::new(0);

fn check_pi(roles: &[char], seed: u64, keep: u64) -> Result<(), TestCaseError> {
    let (text, messages) = pi_session(roles, seed);
    let options = PrepareOptions {
        keep_recent_tokens: Some(keep),
        ..PrepareOptions::default()
    };
    let input = SessionInput::parse(text.as_bytes(), BodyFormat::Jsonl, options)
        .map_err(|e| TestCaseError::fail(format!("refused: {e}\n{text}")))?;
    let prompts = Prompts::builtin();
    let answer = prepare_response(&input, &prompts, Default::default(), None)
        .map_err(|e| TestCaseError::fail(format!("{e}")))?
        .to_json();
    let fields = raw_fields(&answer);
    let ids: Vec<String> = fields
        .get("summarizedEntryIds")
        .map(|v| serde_json::from_str(v.get()).unwrap())
        .unwrap_or_default();
    let want: Vec<&String> = ids.iter().filter_map(|id| messages.get(id)).collect();
    let mut got = raw_list(fields.get("messagesToSummarize"));
    got.extend(raw_list(fields.get("turnPrefixMessages")));
    prop_assert_eq!(got.iter().collect::<Vec<_>>(), want, "session:\n{}", text);
    if !got.is_empty() {
        PI_ECHOED.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// An object's fields, each as its JSON text.
fn raw_object(json: &str) -> BTreeMap<String, Box<RawValue>> {
    serde_json::from_str(json).expect("an object")
}

fn check_prune(roles: &[char], seed: u64, protect: u64) -> Result<(), TestCaseError> {
    let (text, _) = pi_session(roles, seed);
    let options = PruneOptions {
        protect_tokens: Some(protect / 20),
        minimum_savings: Some(0),
        protected_tools: Some(Vec::new()),
        ..PruneOptions::default()
    };
    let input = SessionInput::parse(text.as_bytes(), BodyFormat::Jsonl, options)
        .map_err(|e| TestCaseError::fail(format!("refused: {e}\n{text}")))?;
    let answer = plan_prune(&input)
        .map_err(|e| TestCaseError::fail(format!("{e}")))?
        .response(1)
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for (entry, &index) in answer.entries.iter().zip(&answer.entry_indexes) {
        let mut got = raw_object(entry.get());
        let mut sent = raw_object(lines[index]);
        let mut got_message = raw_object(got.remove("message").unwrap().get());
        let mut sent_message = raw_object(sent.remove("message").unwrap().get());
        for field in ["content", "prunedAt"] {
            got_message.remove(field);
            sent_message.remove(field);
        }
        let text_of = |m: &BTreeMap<String, Box<RawValue>>| -> Vec<(String, String)> {
            m.iter()
                .map(|(k, v)| (k.clone(), v.get().to_string()))
                .collect()
        };
        prop_assert_eq!(text_of(&got), text_of(&sent), "session:\n{}", text);
        prop_assert_eq!(
            text_of(&got_message),
            text_of(&sent_message),
            "session:\n{}",
            text
        );
    }
    if !answer.entries.is_empty() {
        PRUNED.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// A hermes request of `roles` and the messages as written.
fn hermes_request(roles: &[char], seed: u64, context: u64) -> (String, Vec<String>) {
    let mut pen = Pen(fastrand::Rng::with_seed(seed));
    let mut messages = Vec::new();
    for (i, &role) in roles.iter().enumerate() {
        let mut known = Vec::new();
        let (r, content) = match role {
            'u' => ("user", pen.string()),
            'a' => ("assistant", pen.string()),
            't' => ("tool", pen.string()),
            _ => ("system", pen.string()),
        };
        known.push(pen.pair("role", format!("\"{r}\"")));
        known.push(pen.pair("content", content));
        if role == 't' {
            known.push(pen.pair("tool_call_id", format!("\"c{i}\"")));
        }
        messages.push(pen.object(known));
    }
    let body = format!(
        "{{\"messages\":[{}],\"contextLength\":{context},\"today\":null}}",
        messages.join(",")
    );
    (body, messages)
}

/// A value for comparing messages: serde_json's, lone surrogates read as U+FFFD (H11).
fn value_of(raw: &str) -> serde_json::Value {
    serde_json::from_str(&compactd::json::string::replace_lone_surrogates(raw)).unwrap()
}

fn check_hermes(roles: &[char], seed: u64, context: u64) -> Result<(), TestCaseError> {
    let (body, messages) = hermes_request(roles, seed, context * 20);
    let req = parse_request(body.as_bytes())
        .map_err(|e| TestCaseError::fail(format!("refused: {e}\n{body}")))?;
    let prompts = Prompts::builtin();
    let planned = plan_hermes(req, &prompts.hermes, &Default::default());
    let outcome = match planned.plan {
        Plan::Done(o) => *o,
        Plan::Summarize(p) => p.finish(ModelAnswer::Text {
            text: "## Goal\nthe summary".into(),
            model: "m".into(),
        }),
    };
    let answer = HermesAnswer {
        outcome,
        raw_messages: planned.raw_messages,
        usage: None,
        model: None,
        moa: None,
    }
    .to_bytes();
    let fields = raw_fields(&answer);
    let got = raw_list(fields.get("messages"));
    let sources: Vec<Option<usize>> = match fields.get("sources") {
        Some(s) => serde_json::from_str(s.get()).unwrap(),
        None => (0..got.len()).map(Some).collect(),
    };
    prop_assert_eq!(got.len(), sources.len());
    let compressed = answer.starts_with(b"{\"compressed\":true");
    if compressed && got.iter().any(|m| messages.contains(m)) {
        HERMES_KEPT.fetch_add(1, Ordering::Relaxed);
    }
    for (m, s) in got.iter().zip(&sources) {
        let Some(sent) = s.map(|i| &messages[i]) else {
            continue;
        };
        if m != sent {
            // Re-written only when compaction changed it.
            prop_assert_ne!(
                value_of(m),
                value_of(sent),
                "a message re-spelled:\n{}",
                body
            );
        }
    }
    Ok(())
}

/// Cases per property (about a second in all).
const CASES: u32 = 256;

fn runner() -> TestRunner {
    let mut config = Config {
        failure_persistence: None,
        cases: CASES,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(25);
    }
    TestRunner::new(config)
}

#[test]
fn pi_messages_go_out_as_they_came_in() {
    runner()
        .run(&shapes(), |(roles, seed, keep)| {
            check_pi(&roles, seed, keep)
        })
        .unwrap();
    let echoed = PI_ECHOED.load(Ordering::Relaxed);
    eprintln!("pi: {echoed} of {CASES} cases echoed messages");
    assert!(echoed >= 50, "only {echoed} cases echoed a message");
}

#[test]
fn pruned_entries_keep_every_other_field_as_it_came_in() {
    runner()
        .run(&shapes(), |(roles, seed, protect)| {
            check_prune(&roles, seed, protect)
        })
        .unwrap();
    let pruned = PRUNED.load(Ordering::Relaxed);
    eprintln!("prune: {pruned} of {CASES} cases pruned entries");
    assert!(pruned >= 50, "only {pruned} cases pruned an entry");
}

#[test]
fn hermes_messages_not_compacted_go_out_as_they_came_in() {
    runner()
        .run(&shapes(), |(roles, seed, context)| {
            check_hermes(&roles, seed, context)
        })
        .unwrap();
    let kept = HERMES_KEPT.load(Ordering::Relaxed);
    eprintln!("hermes: {kept} of {CASES} cases compacted and kept messages as sent");
    assert!(
        kept >= 50,
        "only {kept} compacted cases kept a message as sent"
    );
}
