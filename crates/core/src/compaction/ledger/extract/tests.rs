//! Extraction's tests: one rule of the module docs per test.

use super::*;

fn u<'a>(id: &'a str, text: &'a str) -> Source<'a> {
    Source {
        entry_id: Some(id),
        role: SourceRole::User,
        text,
    }
}

fn active(l: &Ledger) -> Vec<(Kind, &str)> {
    l.active().map(|i| (i.kind, i.text.as_str())).collect()
}

const NO_FILES: &[&str] = &[];

#[test]
fn a_rule_referring_back_is_pinned_with_the_sentence_holding_its_value() {
    let l = extract(
        &[u("e1", "Budget cap is $500 total. Never exceed it.")],
        NO_FILES,
    );
    let items = active(&l);
    assert_eq!(
        items,
        [(
            Kind::Constraint,
            "Budget cap is $500 total. Never exceed it."
        )]
    );
    assert_eq!(l.items()[0].values, ["$500"]);
}

#[test]
fn a_valueless_rule_takes_the_next_sentence_holding_its_value() {
    let l = extract(
        &[u("e1", "Never go over the budget. It is $500.")],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [(Kind::Constraint, "Never go over the budget. It is $500.")]
    );
}

#[test]
fn rules_are_pinned_and_the_rest_of_the_message_is_the_objective() {
    let l = extract(
        &[u("e1", "Add rate limiting to the API. Never push to main.")],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [
            (Kind::Rule, "Never push to main."),
            (Kind::Objective, "Add rate limiting to the API.")
        ]
    );
}

#[test]
fn a_message_of_only_rules_leaves_the_objective_alone() {
    let l = extract(
        &[
            u("e1", "Add a logout button to the navbar."),
            u("e2", "Always run the tests first."),
        ],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [
            (Kind::Objective, "Add a logout button to the navbar."),
            (Kind::Rule, "Always run the tests first.")
        ]
    );
}

#[test]
fn chit_chat_does_not_replace_the_objective() {
    let l = extract(
        &[
            u("e1", "Add a logout button to the navbar."),
            u("e2", "wow, it works"),
            u("e3", "are we all commited?"),
        ],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [(Kind::Objective, "Add a logout button to the navbar.")]
    );
}

#[test]
fn the_latest_real_request_is_the_objective() {
    let l = extract(
        &[
            u("e1", "Add a login page."),
            u("e2", "Now add a logout button too."),
        ],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [(Kind::Objective, "Now add a logout button too.")]
    );
    assert_eq!(l.len(), 2);
}

#[test]
fn use_port_9090_after_use_port_8080_supersedes_it() {
    let l = extract(
        &[u("e1", "use port 8080"), u("e2", "use port 9090")],
        NO_FILES,
    );
    assert_eq!(active(&l), [(Kind::Preference, "use port 9090")]);
    assert_eq!(
        l.items()[0]
            .superseded_by
            .as_ref()
            .unwrap()
            .entry_id
            .as_deref(),
        Some("e2")
    );
}

#[test]
fn never_mind_cancels_the_previous_instruction() {
    let l = extract(
        &[
            u("e1", "Never push to main."),
            u("e2", "use port 8080"),
            u("e3", "never mind"),
        ],
        NO_FILES,
    );
    assert_eq!(active(&l), [(Kind::Rule, "Never push to main.")]);
    let cancelled = &l.items()[1];
    assert_eq!(cancelled.text, "use port 8080");
    assert_eq!(cancelled.superseded_by.as_ref().unwrap().text, "never mind");
}

#[test]
fn a_cancellation_inside_a_message_withdraws_only_the_sentence_before_it() {
    let l = extract(
        &[u(
            "e1",
            "Never push to main. Use port 8080. Scratch that, use port 9090.",
        )],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [
            (Kind::Rule, "Never push to main."),
            (Kind::Preference, "use port 9090.")
        ]
    );
}

#[test]
fn stop_and_undo_cancel_too() {
    for word in ["stop", "Undo.", "forget that", "scratch that"] {
        let l = extract(&[u("e1", "use port 8080"), u("e2", word)], NO_FILES);
        assert_eq!(l.active().count(), 0, "{word}");
    }
}

#[test]
fn a_credential_value_is_redacted_but_its_name_kept() {
    let l = extract(
        &[u(
            "e1",
            "The Stripe key is STRIPE_API_KEY=sk_live_51HxYzAbCdEfGhIj.",
        )],
        NO_FILES,
    );
    let item = &l.items()[0];
    assert_eq!(item.kind, Kind::Fact);
    assert_eq!(item.text, "The Stripe key is STRIPE_API_KEY=[REDACTED].");
    assert!(item.values.contains(&"STRIPE_API_KEY".to_string()));
    assert!(!l.to_value().to_string().contains("sk_live"));
}

#[test]
fn the_assistant_pins_decisions_but_never_rules_or_proposals() {
    let l = extract(
        &[
            Source {
                entry_id: Some("a1"),
                role: SourceRole::Assistant,
                text: "You must never use unsafe. We could use Redis instead of memcached.",
            },
            Source {
                entry_id: Some("a2"),
                role: SourceRole::Assistant,
                text: "We decided to keep the v1 API. Done.",
            },
        ],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [(Kind::Decision, "We decided to keep the v1 API.")]
    );
    assert_eq!(l.items()[0].origin, Speaker::Assistant);
}

#[test]
fn user_decisions_are_pinned() {
    let l = extract(
        &[u("e1", "Let's go with Postgres instead of SQLite.")],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [(Kind::Decision, "Let's go with Postgres instead of SQLite.")]
    );
    assert_eq!(l.items()[0].values, ["Postgres", "SQLite"]);
}

#[test]
fn modified_files_are_pinned_once_with_their_path_as_value() {
    let l = extract(&[], &["src/a.rs", "src/a.rs", " ", "README.md"]);
    assert_eq!(
        active(&l),
        [(Kind::File, "src/a.rs"), (Kind::File, "README.md")]
    );
    assert_eq!(l.items()[0].values, ["src/a.rs"]);
}

fn tool<'a>(id: &'a str, is_error: bool, call: &'a str, text: &'a str) -> Source<'a> {
    Source {
        entry_id: Some(id),
        role: SourceRole::ToolResult {
            is_error,
            tool_name: "bash",
            call: Some(call),
        },
        text,
    }
}

#[test]
fn an_error_resolved_in_the_same_round_is_not_pinned() {
    let l = extract(
        &[
            tool("t1", true, "cargo test", "error: boom"),
            tool("t2", false, "cargo  test", "ok"),
        ],
        NO_FILES,
    );
    assert!(l.is_empty());
}

#[test]
fn an_error_from_an_earlier_round_is_resolved_by_a_later_success() {
    let first = extract(&[tool("t1", true, "cargo test", "error: boom")], NO_FILES);
    let second = update(first, &[tool("t9", false, "cargo test", "ok")], NO_FILES);
    assert_eq!(second.len(), 1);
    assert!(!second.items()[0].is_active());
}

#[test]
fn cancellation_reaches_into_the_previous_round() {
    let first = extract(
        &[u("e1", "Always use tabs."), u("e2", "use port 8080")],
        NO_FILES,
    );
    let second = update(first, &[u("e3", "never mind")], NO_FILES);
    assert_eq!(active(&second), [(Kind::Rule, "Always use tabs.")]);
}

#[test]
fn superseded_items_are_bounded() {
    let requests: Vec<String> = (0..MAX_SUPERSEDED + 10)
        .map(|n| format!("Add feature number {n} to the app."))
        .collect();
    let sources: Vec<Source<'_>> = requests.iter().map(|r| u("e", r)).collect();
    let l = extract(&sources, NO_FILES);
    assert_eq!(l.len(), MAX_SUPERSEDED + 1);
    assert_eq!(l.active().count(), 1);
    assert!(l.items()[0].text.contains("number 9 "));
}

#[test]
fn pasted_code_yields_no_rules() {
    let l = extract(
        &[u(
            "e1",
            "Why does this fail?\n```\n// you must not call this twice\nfn main() {}\n```",
        )],
        NO_FILES,
    );
    assert!(l.active().all(|i| i.kind != Kind::Rule));
}

#[test]
fn summaries_and_tool_successes_pin_nothing() {
    let l = extract(
        &[Source {
            entry_id: None,
            role: SourceRole::Summary,
            text: "Never push to main. Budget is $500.",
        }],
        NO_FILES,
    );
    assert!(l.is_empty());
}

#[test]
fn a_stated_goal_stays_beside_the_latest_request() {
    let l = extract(
        &[
            u("e1", "Goal: build a CSV exporter for the billing service."),
            u(
                "e2",
                "Read src/rows.ts and tell me what it does with nulls.",
            ),
            u("e3", "Check src/pool.ts for unused imports."),
        ],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [
            (
                Kind::Goal,
                "Goal: build a CSV exporter for the billing service."
            ),
            (Kind::Objective, "Check src/pool.ts for unused imports.")
        ]
    );
}

#[test]
fn a_new_goal_replaces_the_stated_goal() {
    let l = extract(
        &[
            u("e1", "Our goal: migrate the API to async."),
            u("e2", "New goal: add a rate limiter."),
        ],
        NO_FILES,
    );
    assert_eq!(
        active(&l),
        [(Kind::Objective, "New goal: add a rate limiter.")]
    );
}

#[test]
fn a_setting_that_should_be_a_value_is_a_fact_and_a_label_is_not_a_verb() {
    let l = extract(
        &[
            u("e1", "The cache TTL should be 3816 seconds."),
            u(
                "e2",
                "Update: the cache TTL should be 2963 seconds from now on.",
            ),
        ],
        NO_FILES,
    );
    // The first is a fact; "from now on" makes the second a standing rule, which
    // replaces the fact on the same subject.
    let active: Vec<(Kind, &str)> = l.active().map(|i| (i.kind, i.text.as_str())).collect();
    assert_eq!(
        active,
        [(
            Kind::Rule,
            "Update: the cache TTL should be 2963 seconds from now on."
        )]
    );
}

#[test]
fn targets_final_answers_and_liked_conventions_are_pinned() {
    let l = extract(
        &[
            u("e1", "We'll target Node 6.17.806 for the build, decided."),
            u("e2", "Final answer on the schema: the table is ab_events."),
            u(
                "e3",
                "Please name new branches feature/kelvo-x, I like it that way.",
            ),
        ],
        NO_FILES,
    );
    let kinds: Vec<Kind> = l
        .active()
        .filter(|i| i.kind != Kind::Objective)
        .map(|i| i.kind)
        .collect();
    assert_eq!(kinds, [Kind::Decision, Kind::Decision, Kind::Preference]);
}

#[test]
fn the_head_ledger_is_what_update_gives_over_the_head_alone() {
    let previous = extract(
        &[
            u("e0", "Never push to main."),
            tool("t0", true, "make", "error: old"),
        ],
        NO_FILES,
    );
    let sources = [
        u("e1", "Budget cap is $500 total. Never exceed it."),
        tool("t1", true, "cargo test", "error: boom"),
        u("e2", "Add a login page."),
        tool("t2", false, "make", "ok"),
        u("e3", "never mind"),
        tool("t3", false, "cargo test", "ok"),
        u("e4", "use port 9090"),
    ];
    let files = ["src/a.rs"];
    let all = update(previous.clone(), &sources, &files);
    for head in 0..=sources.len() + 1 {
        let (at_head, whole) = update_with_head(previous.clone(), &sources, head, &files);
        let alone = update(
            previous.clone(),
            &sources[..head.min(sources.len())],
            NO_FILES,
        );
        assert_eq!(at_head, alone, "head {head}");
        assert_eq!(whole, all, "head {head}");
    }
}
