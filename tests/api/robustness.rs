//! Hostile bodies: whatever arrives, the answer is a 200 or a 4xx, never a panic, a
//! hang or a 5xx.

use compactd::compaction::Settings;
use compactd::pipeline::{self, BodyFormat, SessionInput, SessionOptions};
use compactd::summarize::Prompts;

use crate::helpers::{fixture, small_session, spawn_app};

/// A tiny deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "\\u",
    "\\ud800",
    "null",
    "true",
    "-0",
    "1e999",
    "\"type\"",
    "\"message\"",
    "\"compaction\"",
    "\"id\"",
    "\"parentId\"",
    "\"role\"",
    "\"assistant\"",
    "\"toolCall\"",
    "\"arguments\"",
    "\"content\"",
    "\n",
    "😀",
    "\u{0}",
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len());
        match rng.below(4) {
            0 => b[at] = rng.next() as u8,
            1 => {
                let tok = TOKENS[rng.below(TOKENS.len())].as_bytes();
                b.splice(at..at, tok.iter().copied());
            }
            2 => {
                let end = (at + rng.below(64)).min(b.len());
                b.drain(at..end);
            }
            _ => {
                let end = (at + rng.below(256)).min(b.len());
                let chunk = b[at..end].to_vec();
                b.splice(at..at, chunk);
            }
        }
    }
    b
}

#[test]
fn mutated_sessions_never_panic() {
    let prompts = Prompts::builtin();
    let bases = [
        small_session().into_bytes(),
        fixture("large-session.jsonl").into_bytes()[..200_000].to_vec(),
    ];
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let mut outcomes = [0usize; 2];
    for i in 0..600 {
        let base = &bases[i % bases.len()];
        let body = mutate(&mut rng, base);
        for format in [BodyFormat::Jsonl, BodyFormat::Json] {
            let result =
                SessionInput::parse(&body, format, SessionOptions::default()).and_then(|input| {
                    pipeline::prepare(
                        &input,
                        &prompts,
                        Settings {
                            keep_recent_tokens: 500,
                            reserve_tokens: 1000,
                        },
                        Some(2000),
                    )
                    .map(|a| serde_json::to_vec(&a).unwrap().len())
                });
            outcomes[result.is_ok() as usize] += 1;
        }
    }
    // Both outcomes must occur, or the mutations test nothing.
    assert!(outcomes[0] > 50 && outcomes[1] > 50, "{outcomes:?}");
}

#[tokio::test]
async fn hostile_bodies_over_http_get_4xx_not_5xx() {
    let app = spawn_app().await;
    let base = small_session().into_bytes();
    let mut rng = Rng(42);
    for _ in 0..60 {
        let body = mutate(&mut rng, &base);
        for ct in ["application/x-ndjson", "application/json"] {
            let res = app.post("/v1/prepare", ct, body.clone()).await;
            let s = res.status().as_u16();
            assert!(s == 200 || (400..500).contains(&s), "status {s}");
        }
    }
    // Deep nesting must not overflow the stack.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let res = app
        .post("/v1/prepare", "application/json", deep.clone())
        .await;
    assert!((400..500).contains(&res.status().as_u16()));
    // Deeply nested unknown fields pass through untouched.
    let res = app
        .post_jsonl(
            "/v1/prepare",
            format!("{{\"type\":\"x\",\"id\":\"a\",\"deep\":{deep}}}"),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    // Tool arguments nested deeper than the value parser reads are rejected, not misread.
    let args = format!("{}{}", "[".repeat(500), "]".repeat(500));
    let entry = format!(
        r#"{{"type":"message","id":"a","message":{{"role":"assistant","content":[{{"type":"toolCall","name":"x","arguments":{args}}}]}}}}"#
    );
    let res = app.post_jsonl("/v1/prepare", entry).await;
    assert_eq!(res.status().as_u16(), 422);
}
