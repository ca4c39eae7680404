//! The extractive summarizer on a real pi session, through the prepare pipeline that
//! builds its requests.

#[path = "support/fixtures.rs"]
mod fixtures;

use compactd::compaction::Settings;
use compactd::pipeline::{
    prepare_response, BodyFormat, PrepareOptions, PrepareResponse, SessionInput,
};
use compactd::session::text::utf16_len;
use compactd::summarize::extractive::summarize;
use compactd::summarize::{Prompts, RequestKind};

/// The headings of `prompts/initial.md` (history and branch summaries).
const CHECKPOINT_HEADINGS: [&str; 8] = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress\n### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
];

/// The headings of `prompts/turn-prefix.md`.
const TURN_PREFIX_HEADINGS: [&str; 3] = [
    "## Original Request",
    "## Early Progress",
    "## Context for Suffix",
];

#[test]
fn summarizes_a_real_session() {
    let body = fixtures::read(fixtures::BEFORE_COMPACTION);
    let input = SessionInput::parse(
        body.as_bytes(),
        BodyFormat::Jsonl,
        PrepareOptions::default(),
    )
    .unwrap();
    let prepared =
        prepare_response(&input, &Prompts::builtin(), Settings::default(), None).unwrap();
    let PrepareResponse::Compactable(c) = prepared else {
        panic!("not compactable")
    };
    for r in &c.requests {
        assert_eq!(RequestKind::detect(&r.prompt), r.kind);
        let s = summarize(r);
        let budget = r.max_tokens as usize * 4;
        assert!(utf16_len(&s.text) <= budget);
        assert!(utf16_len(&s.text) < utf16_len(&r.prompt));
        let expected: &[&str] = match r.kind {
            RequestKind::TurnPrefix => &TURN_PREFIX_HEADINGS,
            _ => &CHECKPOINT_HEADINGS,
        };
        for h in expected {
            assert!(s.text.contains(h), "{h} missing");
        }
        assert!(s
            .text
            .contains("/Users/badlogic/workspaces/pi-mono/packages/coding-agent/"));
        assert_eq!(s, summarize(r));
        if std::env::var_os("EXTRACTIVE_PRINT").is_some() {
            println!(
                "===== {:?} ({} units, budget {budget})\n{}",
                r.kind,
                utf16_len(&s.text),
                s.text
            );
        }
    }
    let history = summarize(&c.requests[0]).text;
    // The previous summary's items survive the merge.
    assert!(history.contains("**Context Checkpoint: Coding Agent Refactoring**"));
    assert!(history.contains("E2E tests only"));
    assert!(history.contains("- can leave it"), "the first request");
}
