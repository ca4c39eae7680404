use super::*;
use crate::summarize::extractive::summarize;
use crate::summarize::extractive::tests::{history, padding};

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
