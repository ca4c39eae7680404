use super::*;
use crate::summarize::extractive::summarize;
use crate::summarize::extractive::tests::{history, padding};
use compactd_core::session::text::utf16_len;

#[test]
fn chit_chat_is_not_a_goal() {
    let conv = "[User]: Port the parser in src/parse.ts to a streaming API.{pad}\n\n[Assistant]: Done, the parser streams now.\n\n[User]: wow, it works\n\n[User]: are we all commited?\n\n[User]: jesus, everything works, you are a monster\n\n[User]: thanks!\n\n[User]: Now add a benchmark for the streaming parser in bench/parse.ts.";
    let conv = conv.replace("{pad}", &padding());
    let t = summarize(&history(&conv, None, 13107)).text;
    let goal = t.split("\n\n## ").next().unwrap();
    assert!(goal.contains("- Port the parser in src/parse.ts"), "{goal}");
    assert!(
        goal.contains("- Latest request: Now add a benchmark for the streaming parser"),
        "{goal}"
    );
    for chat in ["wow", "commited", "monster", "thanks"] {
        assert!(!goal.contains(chat), "{chat}: {goal}");
    }
}

#[test]
fn short_replies_and_slash_commands_are_not_requests() {
    for reply in ["can leave it", "yes do it", "/mode", "/theme dark", "ok"] {
        assert!(is_reply(reply), "{reply}");
    }
    for task in [
        "move src/utils/config.ts to src/",
        "rename the helper please, it reads badly",
        "/compact now and then summarize the session for me",
    ] {
        assert!(!is_reply(task), "{task}");
    }
}

#[test]
fn a_commit_message_is_read_from_the_command() {
    assert_eq!(
        commit_message("cd /repo && git add -A && git commit -m \"Move config.ts to src/\""),
        Some("Move config.ts to src/".to_string())
    );
    assert_eq!(
        commit_message("git commit -am 'Fix the flaky test'"),
        Some("Fix the flaky test".to_string())
    );
    assert_eq!(commit_message("git commit"), None);
    assert_eq!(commit_message("git status"), None);
}

#[test]
fn notes_say_what_changed_not_that_the_assistant_agrees() {
    assert!(is_note(
        "Now let me update the `executeBash` method to queue instead of append."
    ));
    assert!(is_note(
        "The issue is that `__dirname` is now `utils/`, so the root moved."
    ));
    for noise in [
        "You're absolutely right.",
        "Now I understand the full picture.",
        "Now let me create the updated file:",
        "Let me do the refactoring:",
        "Perfect!",
    ] {
        assert!(!is_note(noise), "{noise}");
    }
}

#[test]
fn a_done_request_says_what_came_of_it_and_gives_that_up_first() {
    let conv = "[User]: Port the parser in src/parse.ts to a streaming API.{pad}\n\n[Assistant]: Reading it first.\n\n[Assistant]: Done: the parser streams now and all 41 tests pass.\n\n[User]: Rename the helper in src/lex.ts, it reads badly.\n\n[Assistant]: Renamed `lexOne` to `nextToken` everywhere.\n\n[User]: Add a changelog entry for the streaming parser.\n\n[User]: Now add a benchmark for the streaming parser in bench/parse.ts.";
    let conv = conv.replace("{pad}", &padding());
    let t = summarize(&history(&conv, None, 13107)).text;
    let done = t
        .split("### Done\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    // The assistant's last word on each request, after it and before the next one.
    assert!(
        done.contains(
            "- [x] Rename the helper in src/lex.ts, it reads badly. → Renamed `lexOne` to `nextToken` everywhere."
        ),
        "{done}"
    );
    // A request nothing was said about is listed as asked.
    assert!(
        done.contains("- [x] Add a changelog entry for the streaming parser.\n")
            || done.ends_with("- [x] Add a changelog entry for the streaming parser."),
        "{done}"
    );
    // Tight: the outcomes go before any request does.
    let full = utf16_len(&t);
    let outcome = utf16_len(" → Renamed `lexOne` to `nextToken` everywhere.");
    let tight = summarize(&history(&conv, None, ((full - outcome) / 4) as u64)).text;
    assert!(
        tight.contains("- [x] Rename the helper in src/lex.ts, it reads badly.\n"),
        "{tight}"
    );
    assert!(!tight.contains("badly. → Renamed"), "{tight}");
    assert!(tight.contains("Add a changelog entry"), "{tight}");
}

#[test]
fn under_an_earlier_goal_the_goal_stays_the_objective_in_force() {
    let previous = "## Goal\n- Port the parser to a streaming API.\n- Keep the old parser as a fallback.\n- Write the migration notes.\n- Latest request: Add a --stream flag to the CLI.\n\n## Progress\n### Done\n- [x] Lexer ported.";
    let conv = "[User]: Rename the helper in src/lex.ts, it reads badly.{pad}\n\n[Assistant]: Renamed it to `nextToken`.\n\n[User]: Now add a benchmark for the streaming parser in bench/parse.ts.";
    let conv = conv.replace("{pad}", &padding());
    let t = summarize(&history(&conv, Some(previous), 13107)).text;
    let goal = t.split("\n\n## ").next().unwrap();
    assert_eq!(
        goal,
        "## Goal\n- Port the parser to a streaming API.\n- Keep the old parser as a fallback.\n- Latest request: Now add a benchmark for the streaming parser in bench/parse.ts.",
        "{t}"
    );
    let done = t
        .split("### Done\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    // The earlier latest request and this span's first are progress now.
    assert!(
        done.contains("- [x] Add a --stream flag to the CLI."),
        "{done}"
    );
    assert!(
        done.contains("- [x] Rename the helper in src/lex.ts, it reads badly. → Renamed it"),
        "{done}"
    );
    assert!(
        t.contains("- Earlier goal: Write the migration notes."),
        "{t}"
    );
}
