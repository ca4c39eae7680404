//! Hostile bodies: whatever arrives, the answer is a 200 or a 4xx, never a panic, a
//! hang or a 5xx. (Parsing and every pipeline under mutation, without HTTP: the fuzz
//! test, `tests/fuzz/`.)

#[path = "../fuzz/mutate.rs"]
#[allow(dead_code)] // shared with the fuzz test, which uses all of it
mod mutate;

use mutate::{mutate_bytes, Rng};

use crate::helpers::{small_session, spawn_app};

#[tokio::test]
async fn hostile_bodies_over_http_get_4xx_not_5xx() {
    let app = spawn_app().await;
    let base = small_session().into_bytes();
    let mut rng = Rng::with_seed(42);
    for _ in 0..60 {
        let mut body = base.clone();
        mutate_bytes(&mut rng, &mut body);
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
