//! The examples, end to end: extraction, supersession, the round trip through
//! `details.pinned`, verification and re-insertion together.

use serde_json::json;

use super::*;

fn user<'a>(id: &'a str, text: &'a str) -> Source<'a> {
    Source {
        entry_id: Some(id),
        role: SourceRole::User,
        text,
    }
}

fn assistant<'a>(id: &'a str, text: &'a str) -> Source<'a> {
    Source {
        entry_id: Some(id),
        role: SourceRole::Assistant,
        text,
    }
}

const NO_FILES: &[&str] = &[];

/// A conversation with one planted item of every kind.
fn planted() -> Vec<Source<'static>> {
    vec![
        user("u1", "Build an invoice exporter for the billing service."),
        assistant("a1", "Sure. I'll start by reading the existing code."),
        user("u2", "Budget cap is $500 total. Never exceed it."),
        user("u3", "Never push to main."),
        user("u4", "I prefer tabs over spaces."),
        user(
            "u4b",
            "GOAL STATE: steps 1-3 of 5 are done; next is the CSV header.",
        ),
        user(
            "u5",
            "The staging API is https://staging.acme.io/v2 and the project is acme-billing.",
        ),
        user(
            "u6",
            "The key lives in STRIPE_API_KEY=sk_live_51HxYzAbCdEfGhIjKlMn.",
        ),
        assistant(
            "a2",
            "We decided to use CSV instead of XLSX for the export.",
        ),
        Source {
            entry_id: Some("t1"),
            role: SourceRole::ToolResult {
                is_error: true,
                tool_name: "bash",
                call: Some("npm test"),
            },
            text: "FAIL src/export.test.ts\nError: expected 3 rows, got 2",
        },
        user("u7", "wow, it works"),
        user("u8", "are we all commited?"),
    ]
}

#[test]
fn use_port_9090_after_use_port_8080_pins_9090_only() {
    let l = extract(
        &[user("e1", "use port 8080"), user("e2", "use port 9090")],
        NO_FILES,
    );
    let c = check_summary("The server should use port 8080.", &l, 500);
    assert_eq!(c.retention.pinned, 1);
    assert_eq!(c.retention.present, 0);
    assert!(c.summary.ends_with("### Preferences\n- use port 9090\n"));
}

#[test]
fn budget_cap_keeps_its_value_with_the_rule() {
    let l = extract(
        &[user("e1", "Budget cap is $500 total. Never exceed it.")],
        NO_FILES,
    );
    // A summary that kept the rule but lost the number.
    let c = check_summary("- Never exceed the budget cap.", &l, 500);
    assert_eq!(c.retention.reinserted, 1);
    assert!(c
        .summary
        .contains("- Budget cap is $500 total. Never exceed it.\n"));
}

#[test]
fn never_mind_withdraws_the_previous_instruction_for_good() {
    let l = extract(
        &[user("e1", "use port 8080"), user("e2", "never mind")],
        NO_FILES,
    );
    let c = check_summary("Nothing relevant.", &l, 500);
    assert_eq!(c.retention.pinned, 0);
    assert_eq!(c.summary, "Nothing relevant.");
    assert_eq!(l.items()[0].status, Status::Superseded);
}

#[test]
fn chit_chat_is_not_an_objective() {
    let l = extract(&planted(), NO_FILES);
    let objectives: Vec<&str> = l
        .active()
        .filter(|i| i.kind == Kind::Objective)
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(
        objectives,
        ["Build an invoice exporter for the billing service."]
    );
}

#[test]
fn a_credential_value_is_redacted_but_its_name_kept() {
    let l = extract(&planted(), NO_FILES);
    let json = serde_json::to_string(&l).unwrap();
    assert!(!json.contains("sk_live"));
    let fact = l
        .active()
        .find(|i| i.text.contains("STRIPE_API_KEY"))
        .unwrap();
    assert_eq!(fact.kind, Kind::Fact);
    assert_eq!(fact.text, "The key lives in STRIPE_API_KEY=[REDACTED].");
    assert_eq!(fact.values, ["STRIPE_API_KEY"]);
}

#[test]
fn every_planted_kind_is_extracted() {
    let l = extract(&planted(), &["src/export.ts"]);
    let kinds: Vec<Kind> = l.active().map(|i| i.kind).collect();
    // Pinned entries come from the request (`Ledger::pin_entry`), never from the text.
    for k in Kind::ALL.into_iter().filter(|k| *k != Kind::Entry) {
        assert!(kinds.contains(&k), "{k:?} missing from {kinds:?}");
    }
    assert_eq!(l.active().count(), 10);
}

#[test]
fn a_summary_that_drops_everything_gets_every_item_reinserted() {
    let l = extract(&planted(), &["src/export.ts"]);
    let c = check_summary("The user and the assistant talked.", &l, 2000);
    assert_eq!(c.retention.pinned, 10);
    assert_eq!(c.retention.present, 0);
    assert_eq!(c.retention.reinserted, 10);
    assert!(c.retention.left_out.is_empty());
    let again = SummaryText::new(&c.summary);
    assert!(l.active().all(|i| again.carries(i)), "{}", c.summary);
}

#[test]
fn over_budget_labelled_items_then_rules_and_constraints_come_first() {
    let l = extract(&planted(), &["src/export.ts"]);
    let c = check_summary("Nothing.", &l, 90);
    let kept: Vec<Kind> = c
        .reinserted_ids
        .iter()
        .map(|id| l.get(id).unwrap().kind)
        .collect();
    // The goal state is labelled (GOAL STATE:); then rules and constraints.
    for k in [Kind::Goal, Kind::Rule, Kind::Constraint] {
        assert!(kept.contains(&k), "{k:?} not in {kept:?}");
    }
    assert!(!c.retention.left_out.is_empty());
    assert!(estimate_tokens(&c.summary["Nothing.".len()..]) <= 90);
    assert_eq!(c.retention.reinserted + c.retention.left_out.len(), 10);
}

/// Five rounds as an agent compacts: each round's ledger goes into `details.pinned`, the
/// next round reads it back, adds the kept conversation and a summarizer that drops
/// everything answers. Every item survives every round.
#[test]
fn items_survive_five_rounds_through_details_pinned() {
    let mut details = json!({"readFiles": [], "modifiedFiles": []});
    let mut summary = String::new();
    for round in 0..5 {
        let previous = Ledger::from_details(&details);
        let sources = if round == 0 {
            planted()
        } else {
            vec![user("x", "ok continue")]
        };
        let ledger = update(previous, &sources, &["src/export.ts"]);
        let c = check_summary(
            &format!("Round {round}: summary that keeps nothing."),
            &ledger,
            2000,
        );
        assert_eq!(c.retention.pinned, 10, "round {round}");
        assert_eq!(c.retention.reinserted, 10, "round {round}");
        details = json!({"readFiles": [], "modifiedFiles": ["src/export.ts"], "pinned": ledger.to_value()});
        summary = c.summary;
    }
    assert!(summary.contains("Budget cap is $500 total. Never exceed it."));
    assert!(summary.contains("https://staging.acme.io/v2"));
    assert_eq!(summary.matches(PINNED_HEADING).count(), 1);
}

#[test]
fn a_summary_carrying_the_previous_section_needs_no_new_items() {
    let l = extract(&planted(), &["src/export.ts"]);
    let first = check_summary("Talk.", &l, 2000);
    let second = check_summary(&first.summary, &l, 2000);
    // The old section is ours: it is replaced, not counted as the summary's own.
    assert_eq!(second.summary, first.summary);
    assert_eq!(second.retention.present, 0);
}

#[test]
fn supersession_reaches_across_rounds_through_details_pinned() {
    let first = extract(&[user("e1", "use port 8080")], NO_FILES);
    let details = json!({"pinned": first.to_value()});
    let second = update(
        Ledger::from_details(&details),
        &[user("e2", "use port 9090")],
        NO_FILES,
    );
    let active: Vec<&str> = second.active().map(|i| i.text.as_str()).collect();
    assert_eq!(active, ["use port 9090"]);
    assert_eq!(second.len(), 2);
}

#[test]
fn merge_keeps_previous_items_first_and_dedupes_with_all_source_ids() {
    let a = extract(
        &[
            user("e1", "Never push to main."),
            user("e2", "use port 8080"),
        ],
        NO_FILES,
    );
    let b = extract(&[user("e9", "Never push to main.")], NO_FILES);
    let m = a.merge(b);
    assert_eq!(m.len(), 2);
    let rule = m.active().find(|i| i.kind == Kind::Rule).unwrap();
    assert_eq!(rule.source_ids, ["e1", "e9"]);
}

/// Twenty standing instructions of the kinds the issue measured (safety rules, hard
/// constraints, facts with values, preferences, decisions, the goal), each in its own
/// message: every one is pinned, with the kind and the values a summary must keep.
#[test]
fn twenty_planted_instructions_are_pinned_with_their_values() {
    let planted: &[(&str, Kind, &[&str])] = &[
        (
            "Never run `git push --force` on this repo.",
            Kind::Rule,
            &["git push --force"],
        ),
        (
            "Do not delete anything under /var/lib/postgres.",
            Kind::Rule,
            &["/var/lib/postgres"],
        ),
        (
            "Always ask before running database migrations.",
            Kind::Rule,
            &[],
        ),
        (
            "You must not commit secrets to the repository.",
            Kind::Rule,
            &[],
        ),
        (
            "The monthly cloud budget is $1,200; do not exceed it.",
            Kind::Constraint,
            &["$1,200"],
        ),
        (
            "Keep every response under 300 words.",
            Kind::Constraint,
            &["300 words"],
        ),
        (
            "The API rate limit is 50 requests per second.",
            Kind::Constraint,
            &["50 requests"],
        ),
        ("Deadline: Friday 17:00 UTC.", Kind::Constraint, &["17:00"]),
        (
            "Only modify files in packages/billing/.",
            Kind::Constraint,
            &["packages/billing/"],
        ),
        (
            "The production database host is db-prod-7.internal:5432.",
            Kind::Fact,
            &["db-prod-7.internal:5432"],
        ),
        (
            "Our staging URL is https://staging.example.org/app.",
            Kind::Fact,
            &["https://staging.example.org/app"],
        ),
        ("The project ID is proj-88213.", Kind::Fact, &["proj-88213"]),
        (
            "The deploy token is stored in DEPLOY_TOKEN.",
            Kind::Fact,
            &["DEPLOY_TOKEN"],
        ),
        (
            "The customer is Globex Corporation.",
            Kind::Fact,
            &["Globex Corporation"],
        ),
        ("We use Node 20.11.1 in CI.", Kind::Preference, &["20.11.1"]),
        ("I prefer small, focused commits.", Kind::Preference, &[]),
        ("Please use pnpm, not npm.", Kind::Preference, &[]),
        (
            "I'd rather you write tests with vitest.",
            Kind::Preference,
            &[],
        ),
        (
            "Let's go with PostgreSQL 16 instead of MySQL.",
            Kind::Decision,
            &["PostgreSQL", "16", "MySQL"],
        ),
        (
            "Migrate the billing service to the new payments API by the end of the sprint.",
            Kind::Objective,
            &[],
        ),
    ];
    let ids: Vec<String> = (0..planted.len()).map(|n| format!("u{n}")).collect();
    let sources: Vec<Source<'_>> = planted
        .iter()
        .zip(&ids)
        .map(|((text, _, _), id)| user(id, text))
        .collect();
    let l = extract(&sources, NO_FILES);
    assert_eq!(l.active().count(), planted.len());
    for ((text, kind, values), id) in planted.iter().zip(&ids) {
        let item = l
            .active()
            .find(|i| i.source_ids == [id.clone()])
            .unwrap_or_else(|| panic!("not pinned: {text}"));
        assert_eq!((item.kind, item.text.as_str()), (*kind, *text));
        for v in *values {
            assert!(
                item.values.iter().any(|x| x == v),
                "{text}: {v} not in {:?}",
                item.values
            );
        }
    }
    // A summary that drops all of them gets all twenty back, within 1,000 tokens.
    let c = check_summary("Work continued.", &l, 1000);
    assert_eq!(c.retention.reinserted, 20);
}

/// A fake model that paraphrases: it keeps the words of what it is given but lower-cases
/// everything and loses every digit, and drops the second half of the lines.
fn paraphrase(input: &str) -> String {
    let lines: Vec<&str> = input.lines().collect();
    lines[..lines.len() / 2]
        .iter()
        .map(|l| l.to_lowercase().replace(|c: char| c.is_ascii_digit(), ""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Five rounds with the paraphrasing model, each summarizing the previous summary plus
/// the round's conversation: after every round the checked summary carries every active
/// item, and the items whose values the model mangled are the ones restored.
#[test]
fn a_paraphrasing_model_loses_nothing_over_five_rounds() {
    let conversation: String = planted()
        .iter()
        .map(|s| format!("{}\n", s.text))
        .collect::<String>();
    let mut details = json!({});
    let mut summary = String::new();
    for round in 0..5 {
        let sources = if round == 0 { planted() } else { vec![] };
        let ledger = update(Ledger::from_details(&details), &sources, &["src/export.ts"]);
        let input = if round == 0 {
            conversation.clone()
        } else {
            summary.clone()
        };
        let c = check_summary(&paraphrase(&input), &ledger, 2000);
        let text = SummaryText::new(&c.summary);
        assert!(
            ledger.active().all(|i| text.carries(i)),
            "round {round}:\n{}",
            c.summary
        );
        assert!(c.retention.left_out.is_empty());
        let restored: Vec<Kind> = c
            .reinserted_ids
            .iter()
            .map(|id| ledger.get(id).unwrap().kind)
            .collect();
        assert!(
            restored.contains(&Kind::Constraint),
            "the $500 lost its digits: {restored:?}"
        );
        details = json!({"pinned": ledger.to_value()});
        summary = c.summary;
    }
}

/// Labelled statements keep their label's kind, stay whole and are never replaced by the
/// requests that follow them (a labelled statement used to be guessed into a kind, and
/// four of them became objectives that the next request replaced).
#[test]
fn labelled_statements_survive_later_requests() {
    let l = extract(
        &[
            user(
                "u1",
                "USER PREFERENCE: User prefers terse answers with no em-dashes.",
            ),
            user(
                "u2",
                "HARD CONSTRAINT: Budget cap is $500 total. Never exceed without explicit approval.",
            ),
            user(
                "u3",
                "safety rule - if a request could harm a third party, stop and escalate.",
            ),
            user("u4", "**Goal state:** steps 1-3 of 5 are done."),
            user("u5", "Add a smoke test for the health endpoint."),
            user("u6", "Now rename fetch_all to list_items."),
        ],
        NO_FILES,
    );
    let active: Vec<(Kind, &str)> = l.active().map(|i| (i.kind, i.text.as_str())).collect();
    assert_eq!(
        active,
        [
            (
                Kind::Preference,
                "USER PREFERENCE: User prefers terse answers with no em-dashes."
            ),
            (
                Kind::Constraint,
                "HARD CONSTRAINT: Budget cap is $500 total. Never exceed without explicit approval."
            ),
            (
                Kind::Rule,
                "safety rule - if a request could harm a third party, stop and escalate."
            ),
            (Kind::Goal, "**Goal state:** steps 1-3 of 5 are done."),
            (Kind::Objective, "Now rename fetch_all to list_items."),
        ]
    );
}

/// A new value for the same labelled key replaces the old one; a different key does not.
#[test]
fn a_labelled_statement_is_replaced_only_on_its_own_subject() {
    let l = extract(
        &[
            user("u1", "HARD CONSTRAINT: Budget cap is $201 total."),
            user("u2", "FACT: The production database is Postgres 15."),
            user("u3", "HARD CONSTRAINT: Budget cap is $956 total."),
        ],
        NO_FILES,
    );
    let active: Vec<&str> = l.active().map(|i| i.text.as_str()).collect();
    assert_eq!(
        active,
        [
            "FACT: The production database is Postgres 15.",
            "HARD CONSTRAINT: Budget cap is $956 total."
        ]
    );
}

// Updates (`updates`): a cue and shared words or a value of the same shape.

/// The active statements (objectives aside) after these user messages.
fn active_statements(messages: &[&str]) -> Vec<String> {
    super::resolution_tests::ledger(messages)
        .active()
        .filter(|i| i.kind != Kind::Objective)
        .map(|i| i.text.clone())
        .collect()
}

#[test]
fn an_update_replaces_what_it_is_about_though_worded_otherwise() {
    assert_eq!(
        active_statements(&[
            "HARD CONSTRAINT: Report all times in UTC.",
            "FACT: The production database is Postgres 16.",
            "From now on, report all times in Pacific time.",
        ]),
        [
            "FACT: The production database is Postgres 16.",
            "From now on, report all times in Pacific time."
        ]
    );
    assert_eq!(
        active_statements(&[
            "FACT: Launch deadline is 2027-03-19.",
            "Update: the launch date moved to 2027-08-21.",
        ]),
        ["Update: the launch date moved to 2027-08-21."]
    );
    assert_eq!(
        active_statements(&[
            "SAFETY RULE: Never disclose the vault code adwgk-18 to any user.",
            "SAFETY RULE: The vault code rotated. Never disclose the new vault code bolib-77; the old code is retired.",
        ]),
        ["SAFETY RULE: The vault code rotated. Never disclose the new vault code bolib-77; the old code is retired."]
    );
}

#[test]
fn without_a_cue_or_a_shared_word_both_stay() {
    let both = [
        "FACT: The production database is Postgres 16 running in eu-north-3.",
        "FACT: The staging database is MySQL 8 running in us-west-2.",
    ];
    assert_eq!(active_statements(&both), both);
    // A cue alone replaces nothing: "now" shares no word with the constraint.
    let kept = active_statements(&[
        "HARD CONSTRAINT: Only Python 3.11.",
        "Now use tabs for indentation.",
    ]);
    assert!(kept.contains(&"HARD CONSTRAINT: Only Python 3.11.".to_string()));
}

/// Phrasings of the public canary kit's corpus: standing rules without a label, and a
/// plan replaced by another, whose old version must not stay current.
#[test]
fn other_phrasings_of_rules_and_replaced_plans() {
    let active = |msgs: &[&str]| -> Vec<(Kind, String)> {
        let sources: Vec<Source<'_>> = msgs.iter().map(|t| user("x", t)).collect();
        extract(&sources, NO_FILES)
            .active()
            .map(|i| (i.kind, i.text.clone()))
            .collect()
    };
    for rule in [
        "From now on, don't run the migrations without a backup.",
        "For the rest of this session, answer in German.",
    ] {
        let got = active(&[rule, "Add the export button."]);
        assert!(got.contains(&(Kind::Rule, rule.to_string())), "{got:?}");
    }
    for (old, new) in [
        (
            "We'll use Postgres for the job queue.",
            "Change of plan: we'll use Redis for the job queue instead.",
        ),
        (
            "Let's go with REST for the public API.",
            "We decided to switch to GraphQL for the public API instead of REST.",
        ),
    ] {
        let got = active(&[old, new]);
        assert_eq!(got, [(Kind::Decision, new.to_string())], "{old}");
    }
}
