//! The sections' tests: what each section says, and the budget.

use crate::summarize::extractive::budget::{MAX_TOKENS, MIN_TOKENS};
use crate::summarize::extractive::summarize;
use crate::summarize::extractive::tests::{history, padding};
use compactd_core::session::text::utf16_len;

const PREVIOUS: &str = "## Goal\n- Reorganize the sources\n\n## Progress\n### Done\n- [x] Planned the layout\n\n### In Progress\n- [ ] Moving files to src/core/\n\n### Blocked\n- npm run check fails after the move\n\n## Next Steps\n1. Update the imports\n2. Run npm run check";

#[test]
fn finished_work_leaves_in_progress_and_next_steps() {
    let conv = "[User]: finish the move and commit it please\n\n[Assistant tool calls]: edit(path=\"src/core/a.ts\", oldText=\"x\", newText=\"y\")\n\n[Tool result]: Successfully replaced text in src/core/a.ts.\n\n[Assistant tool calls]: bash(command=\"git add -A && git commit -m \\\"Move files to src/core\\\"\")\n\n[Tool result]: [main 1a2b3c4] Move files to src/core\n\n[Assistant]: The move is committed.";
    let t = summarize(&history(conv, Some(PREVIOUS), 13107)).text;
    assert!(
        t.contains("- [x] Committed: \"Move files to src/core\""),
        "{t}"
    );
    assert!(
        t.contains("- [x] Planned the layout"),
        "done stays done: {t}"
    );
    for stale in [
        "Moving files to src/core/",
        "Update the imports",
        "fails after the move",
    ] {
        assert!(!t.contains(stale), "{stale}: {t}");
    }
}

#[test]
fn unfinished_work_keeps_in_progress_and_next_steps() {
    let conv = "[User]: continue with the move\n\n[Assistant tool calls]: edit(path=\"src/core/a.ts\", oldText=\"x\", newText=\"y\")\n\n[Tool result]: Successfully replaced text in src/core/a.ts.";
    let t = summarize(&history(conv, Some(PREVIOUS), 13107)).text;
    for kept in [
        "- [ ] Moving files to src/core/",
        "Update the imports",
        "fails after the move",
    ] {
        assert!(t.contains(kept), "{kept}: {t}");
    }
}

#[test]
fn progress_is_by_file_with_what_changed_and_commands_are_few() {
    let mut conv = String::from("[User]: Make the cache in src/cache.rs thread safe.");
    for i in 0..30 {
        conv.push_str(&format!("\n\n[Assistant tool calls]: bash(command=\"grep -n lock{i} src/cache.rs\")\n\n[Tool result]: 12: let lock{i} = 1;"));
    }
    conv.push_str("\n\n[Assistant]: Wrap the map in a `Mutex` so readers never see a torn write.\n\n[Assistant tool calls]: edit(path=\"./src/cache.rs\", oldText=\"a\", newText=\"b\")\n\n[Tool result]: Successfully replaced text.");
    for _ in 0..3 {
        conv.push_str("\n\n[Assistant tool calls]: bash(command=\"cargo test 2>&1 | tail -5\")\n\n[Tool result]: test result: ok");
    }
    let t = summarize(&history(&conv, None, 13107)).text;
    assert!(
        t.contains("- [x] Edited `./src/cache.rs`: Wrap the map in a `Mutex` so readers never see a torn write."),
        "{t}"
    );
    assert!(!t.contains("grep -n"), "{t}");
    assert!(t.contains("- Commands: `cargo test`"), "{t}");
    // The file is listed once, however it was spelled.
    assert!(!t.contains("Also mentioned"), "{t}");
}

#[test]
fn paths_are_normalized_and_listed_once() {
    let conv = "[User]: Look at ./src/core/agent.ts and src/core/agent.ts and agent.ts, also the diff:\n\ndiff --git a/src/ui/view.ts b/src/ui/view.ts\n--- a/src/ui/view.ts\n+++ b/src/ui/view.ts\n\nimport { x } from \"../../utils/config.js\";\n\nand docs/notes.md please.";
    let t = summarize(&history(&format!("{conv}{}", padding()), None, 13107)).text;
    let files = t
        .lines()
        .find(|l| l.starts_with("- Also mentioned:"))
        .unwrap();
    assert_eq!(
        files,
        "- Also mentioned: `src/core/agent.ts`, `docs/notes.md`"
    );
}

#[test]
fn the_summary_fits_a_fifth_of_the_span_within_bounds() {
    let mut conv = String::new();
    for i in 0..400 {
        conv.push_str(&format!("[User]: Please change function number {i} in src/mod{i}.rs so it returns a Result instead of panicking on bad input.\n\n[Assistant tool calls]: edit(path=\"src/mod{i}.rs\", oldText=\"a\", newText=\"b\")\n\n[Tool result]: Successfully replaced text.\n\n"));
    }
    let span = utf16_len(&conv);
    assert!(span / 4 / 5 > MAX_TOKENS, "a span over the cap");
    let t = summarize(&history(&conv, None, 16384)).text;
    assert!(utf16_len(&t) <= MAX_TOKENS * 4, "{}", utf16_len(&t));
    assert!(utf16_len(&t) > MIN_TOKENS * 4, "the budget is used");
    // A smaller span: a fifth of it, over the floor.
    let small: String = conv.chars().take(40_000).collect();
    let t = summarize(&history(&small, None, 16384)).text;
    assert!(utf16_len(&t) <= 40_000 / 5, "{}", utf16_len(&t));
    // The request's budget is the ceiling.
    let t = summarize(&history(&conv, None, 500)).text;
    assert!(utf16_len(&t) <= 2_000, "{}", utf16_len(&t));
}
