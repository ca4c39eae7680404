//! The summarizer as a whole: the summary format, budgets, determinism.

use super::*;
use crate::summarize::templates::tests::CONVERSATION;
use crate::summarize::{PromptOptions, Prompts};

/// A request for `prompt` as given, with no system prompt.
pub(super) fn request(kind: RequestKind, prompt: String, max_tokens: u64) -> SummaryRequest {
    SummaryRequest {
        kind,
        system_prompt: String::new(),
        prompt,
        max_tokens,
        strategy: None,
        model: None,
        ledger: None,
    }
}

/// The built-in history request for `conversation`, with its output budget replaced.
pub(super) fn history(
    conversation: &str,
    previous: Option<&str>,
    max_tokens: u64,
) -> SummaryRequest {
    let mut r = Prompts::builtin().history_request(
        conversation,
        previous,
        16384,
        &PromptOptions::default(),
    );
    r.max_tokens = max_tokens;
    r
}

/// A read of a long file: room for the summary format in a short conversation (a
/// summary is never longer than what it condenses).
pub(super) fn padding() -> String {
    format!(
        "\n\n[Assistant tool calls]: read(path=\"LICENSE.txt\")\n\n[Tool result]: {}",
        "Permission is hereby granted, free of charge. ".repeat(80)
    )
}

/// The markdown heading lines of a summary.
pub(super) fn headings(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with('#')).collect()
}

#[test]
fn keeps_paths_first_request_and_last_error() {
    let s = summarize(&history(CONVERSATION, None, 13107));
    let t = &s.text;
    assert_eq!(
        headings(t),
        [
            "## Goal",
            "## Constraints & Preferences",
            "## Progress",
            "### Done",
            "### In Progress",
            "### Blocked",
            "## Key Decisions",
            "## Next Steps",
            "## Critical Context"
        ]
    );
    assert!(t.contains("- Add a --verbose flag to the CLI in src/cli.rs. You must keep the public API unchanged. Don't touch Cargo.toml."));
    assert!(t.contains(
        "- Latest request: also print the config path from config/default.toml when verbose"
    ));
    assert!(t.contains("- You must keep the public API unchanged."));
    assert!(t.contains("- Don't touch Cargo.toml."));
    assert!(t.contains("- [x] Edited `src/cli.rs`"));
    assert!(t.contains("- [x] Wrote `tests/verbose.rs`"));
    // Commands are not progress: a few representative ones in the critical context.
    assert!(!t.contains("Ran `"), "{t}");
    assert!(t.contains("- Commands: `cargo test`, `cargo build`"), "{t}");
    assert!(t.contains(
            "### Blocked\n- `cargo test` failed: `` error[E0425]: cannot find value `verbose` in this scope ``"
        ));
    assert!(t.contains("I decided to use a clap flag instead of an env var"));
    assert!(t.contains("1. Fix the blocker: `cargo test` fails with"));
    assert!(t.contains("2. Continue: The test build fails"));
    for p in [
        "src/cli.rs",
        "tests/verbose.rs",
        "config/default.toml",
        "Cargo.toml",
    ] {
        assert!(t.contains(&format!("`{p}`")), "{p} missing:\n{t}");
    }
    assert_eq!(s.model, "extractive");
    assert_eq!(s.summarizer, SummarizerKind::Extractive);
    assert_eq!((s.retries, s.cached), (0, false));
    assert_eq!(s.usage.output, utf16_len(t).div_ceil(4) as u64);
    assert_eq!(
        s.usage.input,
        (utf16_len(&Prompts::builtin().system) + utf16_len(&history(CONVERSATION, None, 1).prompt))
            .div_ceil(4) as u64
    );
    assert_eq!(s.usage.total_tokens, s.usage.input + s.usage.output);
    assert_eq!((s.usage.cache_read, s.usage.cache_write), (0, 0));
}

#[test]
fn a_later_success_of_the_same_command_resolves_the_error() {
    let conv = format!(
            "{CONVERSATION}\n\n[Assistant tool calls]: bash(command=\"cargo test\")\n\n[Tool result]: test result: ok. 3 passed; 0 failed\n\n[Assistant]: All tests pass now."
        );
    let t = summarize(&history(&conv, None, 13107)).text;
    assert!(t.contains("### Blocked\n(none)"), "{t}");
    // A resolved error is history: not the blocker, not open, but met once.
    assert!(
        !t.contains("Last error") && !t.contains("Open error"),
        "{t}"
    );
    assert!(
        t.contains("- Error met: `cargo test` failed: `` error[E0425]: cannot find value `verbose` in this scope `` (passed since)"),
        "{t}"
    );
    assert!(t.contains("## Next Steps\n1. The assistant ended its turn"));
    // The turn ended: the last reply is not work in progress.
    assert!(t.contains("### In Progress\n(none)"), "{t}");
    assert!(t.contains("- Last reply: All tests pass now."), "{t}");
}

#[test]
fn respects_the_budget_and_never_grows_the_input() {
    for max_tokens in [0, 1, 5, 12, 30, 60, 100, 150, 200, 400] {
        for kind in [
            RequestKind::History,
            RequestKind::Branch,
            RequestKind::TurnPrefix,
            RequestKind::Short,
        ] {
            let mut r = history(CONVERSATION, None, max_tokens);
            r.kind = kind;
            let t = summarize(&r).text;
            assert!(
                utf16_len(&t) <= max_tokens as usize * 4,
                "{kind:?} {max_tokens}: {t}"
            );
            // The pinned rule first, then the request: the budget goes to what matters first.
            if max_tokens >= 12 {
                assert!(
                    t.contains("Don't touch Cargo.toml") || t.contains("Add a"),
                    "{kind:?} {max_tokens}: {t}"
                );
            }
        }
    }
    // Room for the format: the first request and the error survive the trimming.
    let t = summarize(&history(CONVERSATION, None, 200)).text;
    assert!(t.starts_with("## Goal\n- Add a --verbose flag"), "{t}");
    assert!(t.contains("cannot find value"), "{t}");
    assert!(utf16_len(&t) <= 800);

    // A tiny conversation: never longer than what it condenses.
    for conv in ["[User]: hi", "[User]: fix src/a.rs please", "x"] {
        for kind in [
            RequestKind::History,
            RequestKind::TurnPrefix,
            RequestKind::Short,
        ] {
            let mut r = history(conv, None, 13107);
            r.kind = kind;
            let t = summarize(&r).text;
            assert!(utf16_len(&t) <= utf16_len(conv), "{conv:?} {kind:?}: {t:?}");
            assert!(!t.is_empty());
        }
    }
    let t = summarize(&history("[User]: fix src/a.rs please", None, 13107)).text;
    assert_eq!(t, "fix src/a.rs please");
    // Astral characters count as two units.
    let conv = "[User]: 😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀 refactor everything";
    let t = summarize(&history(conv, None, 5)).text;
    assert!(utf16_len(&t) <= 20, "{t}");
}

#[test]
fn any_prefix_of_a_prompt_is_handled_within_budget() {
    let prompt = history(CONVERSATION, Some("## Goal\n- old"), 1).prompt;
    let cuts: Vec<usize> = prompt.char_indices().map(|(i, _)| i).step_by(13).collect();
    for (n, &cut) in cuts.iter().enumerate() {
        let kind = [
            RequestKind::History,
            RequestKind::TurnPrefix,
            RequestKind::Short,
        ][n % 3];
        let max_tokens = [3, 40, 400, 5000][n % 4];
        let s = summarize(&request(kind, prompt[..cut].to_string(), max_tokens));
        assert!(utf16_len(&s.text) <= max_tokens as usize * 4);
        assert!(utf16_len(&s.text) <= utf16_len(&prompt[..cut]));
        RequestKind::detect(&prompt[..cut]);
    }
}

#[test]
fn is_deterministic() {
    let prev = "## Goal\n- old goal\n\n## Critical Context\n- a.rs";
    for kind in [
        RequestKind::History,
        RequestKind::Branch,
        RequestKind::TurnPrefix,
        RequestKind::Short,
    ] {
        let mut r = history(CONVERSATION, Some(prev), 300);
        r.kind = kind;
        let a = summarize(&r);
        let b = summarize(&r.clone());
        assert_eq!(a, b);
    }
}

#[test]
fn a_prompt_without_a_conversation_block_is_the_conversation() {
    // A serialized conversation with no tags around it.
    let prompt = format!("Please refactor src/lib.rs so parsing lives in src/parse.rs. Always keep the tests green.\n\n{CONVERSATION}");
    let t = summarize(&request(RequestKind::History, prompt.clone(), 1000)).text;
    assert!(
        t.starts_with("## Goal\n- Please refactor src/lib.rs"),
        "{t}"
    );
    assert!(t.contains("- Add a --verbose flag"));
    assert!(t.contains("- Always keep the tests green."));
    assert!(t.contains("cannot find value `verbose`"));
    assert_eq!(RequestKind::detect(&prompt), RequestKind::History);
    // Plain text: too short for the format, so the request itself.
    let plain = "Please refactor src/lib.rs so parsing lives in src/parse.rs.\n\nSummarize.";
    let t = summarize(&request(RequestKind::History, plain.into(), 1000)).text;
    assert_eq!(
        t,
        "Please refactor src/lib.rs so parsing lives in src/parse.rs. Summarize."
    );
}

#[test]
fn label_lines_go_before_any_labelled_statement_does() {
    let statements = [
        "Never disclose the vault code to anyone.",
        "Never run the deploy tool without approval.",
        "Budget cap is $500 total.",
        "Only Python 3.11 in the sandbox.",
    ];
    let conversation = format!(
        "[User]: SAFETY RULE: {}\nSAFETY RULE: {}\nHARD CONSTRAINT: {}\nHARD CONSTRAINT: {}{}",
        statements[0],
        statements[1],
        statements[2],
        statements[3],
        padding()
    );
    let mut all_without_labels = false;
    for max_tokens in 20..400 {
        let t = summarize(&history(&conversation, None, max_tokens)).text;
        let kept = statements.iter().filter(|s| t.contains(*s)).count();
        let labels = t.contains("SAFETY RULE:") || t.contains("HARD CONSTRAINT:");
        assert!(
            !labels || kept == statements.len(),
            "a label line beside a dropped statement at {max_tokens}: {t}"
        );
        all_without_labels |= kept == statements.len() && !labels;
    }
    assert!(
        all_without_labels,
        "some budget holds every statement only without its label lines"
    );
}
