//! The families of resolution, each in several phrasings of our own: retractions that share
//! no word with what they take back, updates of a value or an owner in other words,
//! exclusive slots set anew, look-alikes kept apart, and plain second instructions that
//! withdraw nothing.

use super::*;

/// The ledger of these user messages, one entry each (`u1`, `u2`, …).
pub(super) fn ledger(said: &[&str]) -> Ledger {
    let ids: Vec<String> = (1..=said.len()).map(|i| format!("u{i}")).collect();
    let sources: Vec<Source> = said
        .iter()
        .zip(&ids)
        .map(|(t, id)| Source {
            entry_id: Some(id),
            role: SourceRole::User,
            text: t,
        })
        .collect();
    extract(&sources, &[] as &[&str])
}

/// Whether the statement whose text contains `needle` is withdrawn (replaced or taken back).
fn withdrawn(l: &Ledger, needle: &str) -> bool {
    let item = l
        .items()
        .iter()
        .find(|i| i.text.contains(needle))
        .unwrap_or_else(|| panic!("no item holds {needle:?}: {:#?}", l.items()));
    l.withdrawn().any(|w| w.id == item.id)
}

/// The ledger of `said` holds the statement `old` withdrawn (the last message replaced it).
fn assert_replaces(said: &[&str], old: &str) {
    let l = ledger(said);
    let new = said.last().expect("a message");
    assert!(
        withdrawn(&l, old),
        "{new:?} left {old:?} in force: {:#?}",
        l.items()
    );
}

/// Whether some statement in force holds `needle`.
fn in_force(l: &Ledger, needle: &str) -> bool {
    l.active().any(|i| i.text.contains(needle))
}

#[test]
fn a_retraction_with_no_shared_word_withdraws_the_last_request() {
    for (plan, retraction) in [
        (
            "Let's port the ingest service to Go.",
            "Forget what I said, we keep Python.",
        ),
        (
            "Add a dark mode toggle to settings.",
            "Disregard my previous instruction; the settings page stays as it is.",
        ),
        (
            "Rewrite the parser with nom.",
            "Change of plan: we'll profile the tokenizer first.",
        ),
        (
            "Set up nightly backups for the wiki.",
            "Instead, let's document the restore drill.",
        ),
        (
            "Split the monolith into three crates.",
            "Actually, let's ship the release candidate first.",
        ),
        (
            "Migrate the queue to Kafka.",
            "Scrap that, the queue is fine.",
        ),
    ] {
        let l = ledger(&["Never push to main.", plan, retraction]);
        assert!(
            withdrawn(&l, plan),
            "{retraction:?} leaves {plan:?} in force"
        );
        assert!(
            in_force(&l, "Never push to main."),
            "a rule is no request: {retraction:?}"
        );
        let view = InForce::of(&l);
        assert_eq!(
            view.resolve(plan),
            None,
            "{plan:?} still stated after {retraction:?}"
        );
    }
}

#[test]
fn on_second_thought_replaces_the_plan_and_makes_the_new_one_current() {
    let l = ledger(&[
        "Please add CSV export to the reports page.",
        "On second thought, leave the reports page alone and fix the login timeout.",
    ]);
    assert!(withdrawn(&l, "CSV export"));
    assert!(in_force(&l, "fix the login timeout"));
}

#[test]
fn a_plain_second_instruction_withdraws_nothing() {
    for (first, second) in [
        (
            "Add metrics to the worker.",
            "Also add logging to the worker.",
        ),
        (
            "Write unit tests for the lexer.",
            "Then write tests for the parser too.",
        ),
        (
            "Use spaces for indentation.",
            "Keep lines under 100 characters.",
        ),
        (
            "Fix the flaky upload test.",
            "Next, bump the version to 0.4.0.",
        ),
    ] {
        let l = ledger(&[first, second]);
        assert!(
            l.withdrawn().next().is_none(),
            "{second:?} withdrew something: {:#?}",
            l.items()
        );
        assert_eq!(InForce::of(&l).resolve(first).as_deref(), Some(first));
    }
}

#[test]
fn a_limit_changed_in_other_words() {
    for (old, new) in [
        (
            "Keep the API at most 100 requests a minute.",
            "Raise the ceiling to 250 rps.",
        ),
        (
            "HARD CONSTRAINT: monthly cloud spend stays below $2,000.",
            "Update: cloud spend may now reach three thousand dollars.",
        ),
        (
            "The release ships on 2027-03-14.",
            "Release moved to April 2.",
        ),
        (
            "The demo is on Friday.",
            "Heads up, the demo got postponed to Tuesday the 9th.",
        ),
    ] {
        assert_replaces(&[old, "Never force-push.", new], old);
        let said = new.trim_end_matches('.').split(':').next_back().unwrap();
        let l = ledger(&[old, "Never force-push.", new]);
        assert!(in_force(&l, said.trim()), "{new:?}");
    }
}

#[test]
fn an_owner_changed_in_other_words() {
    for (old, new) in [
        (
            "Priya runs the on-call rotation.",
            "On-call is Tomas's now.",
        ),
        (
            "FACT: The release approver this week is Dana Whitfield.",
            "Release approvals now go to Kofi Mensah.",
        ),
        (
            "Marta owns the billing service.",
            "The billing service is owned by Jun Park now.",
        ),
    ] {
        assert_replaces(&[old, new], old);
    }
}

#[test]
fn a_time_zone_or_unit_system_set_anew_replaces_without_a_cue() {
    for (old, new) in [
        (
            "Always report times in UTC.",
            "Show all timestamps in Eastern time.",
        ),
        (
            "Use imperial units in the docs.",
            "Please write the docs in metric.",
        ),
        (
            "Keep your answers terse.",
            "Give me detailed answers from here.",
        ),
    ] {
        assert_replaces(&[old, new], old);
    }
}

#[test]
fn look_alikes_stay_apart() {
    let l = ledger(&[
        "FACT: The primary region is eu-north-1.",
        "FACT: The backup region is us-west-2.",
        "FACT: Ana Silva is the design reviewer this week.",
        "FACT: Ben Okafor is the release approver this week.",
        "HARD CONSTRAINT: Project spend is capped at $500.",
        "HARD CONSTRAINT: Conference spend is capped at $300.",
        "Update: the backup region moved to us-east-1.",
        "Design reviews now go to Cleo Park.",
        "New cap for conference spend: four hundred dollars.",
    ]);
    assert!(withdrawn(&l, "us-west-2"));
    assert!(
        in_force(&l, "eu-north-1"),
        "the primary region is another entity"
    );
    assert!(withdrawn(&l, "Ana Silva"));
    assert!(in_force(&l, "Ben Okafor"), "the approver is another role");
    assert!(withdrawn(&l, "Conference spend is capped"));
    assert!(in_force(&l, "Project spend is capped at $500."));
}

#[test]
fn an_update_that_only_a_common_word_ties_to_two_statements_keeps_both() {
    // "code" is a broad slot: without a word in common it names no referent.
    let l = ledger(&[
        "FACT: The project codename is ORCA-17.",
        "SAFETY RULE: The door code is 4471-b and must never be shared.",
        "The code rotated: never share 9932-c.",
    ]);
    assert!(in_force(&l, "ORCA-17"), "{:#?}", l.items());
    assert!(
        withdrawn(&l, "4471-b"),
        "the door code shares a word: {:#?}",
        l.items()
    );
}
