use super::*;
use crate::compaction::test_session::{parse, path, SessionText};

fn doc<'a>(id: &'a str, text: &'a str) -> Document<'a> {
    Document {
        entry_id: id,
        role: "user",
        tool_name: None,
        text: Cow::Borrowed(text),
    }
}

fn ids(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.entry_id.as_str()).collect()
}

#[test]
fn an_exact_identifier_finds_the_entries_that_hold_it() {
    let docs = [
        doc(
            "a",
            "Reading the lexer and the parser in src/lex.ts and src/parse.ts.",
        ),
        doc(
            "b",
            "The retry loop gives up after MAX_RETRIES=3 with error E0425.",
        ),
        doc("c", "We talked about retries in general, and errors."),
        doc("d", "Run cargo test again, it failed with E0425 once more."),
    ];
    assert_eq!(ids(&search(&docs, "E0425", 5)), ["d", "b"]);
    assert_eq!(ids(&search(&docs, "src/lex.ts", 5)), ["a"]);
    assert_eq!(ids(&search(&docs, "MAX_RETRIES", 5))[0], "b");
    // Rare words weigh more than common ones.
    assert_eq!(ids(&search(&docs, "the lexer", 5))[0], "a");
    assert!(search(&docs, "kubernetes", 5).is_empty());
    assert!(search(&docs, "   ", 5).is_empty());
}

#[test]
fn ranking_is_deterministic_and_bounded() {
    let docs: Vec<Document> = ["x1", "x2", "x3", "x4", "x5", "x6", "x7"]
        .iter()
        .map(|id| doc(id, "the same words in every entry about flags"))
        .collect();
    let hits = search(&docs, "flags", 3);
    // Equal scores: the newer entry first.
    assert_eq!(ids(&hits), ["x7", "x6", "x5"]);
    assert_eq!(search(&docs, "flags", 3), hits);
    assert_eq!(search(&docs, "flags", 1000).len(), 7);
    assert!(search(&docs, "flags", 0).is_empty());
}

#[test]
fn the_excerpt_is_the_matching_passage_cut_at_words() {
    let long = format!(
        "{} The deploy key lives in vault path secret/deploy/prod and rotates monthly. {}",
        "Opening words about nothing in particular. ".repeat(20),
        "Closing words about something else entirely. ".repeat(20)
    );
    let docs = [doc("a", &long)];
    let hit = &search(&docs, "vault path", 1)[0];
    assert!(hit.excerpt.starts_with('…'), "{}", hit.excerpt);
    assert!(hit.excerpt.ends_with('…'), "{}", hit.excerpt);
    assert!(hit
        .excerpt
        .contains("The deploy key lives in vault path secret/deploy/prod"));
    assert!(hit.excerpt.chars().count() <= EXCERPT_CHARS + 2);
    // Whole words at both ends.
    let inner = hit.excerpt.trim_matches('…');
    for w in [
        inner.split(' ').next().unwrap(),
        inner.split(' ').next_back().unwrap(),
    ] {
        assert!(
            long.contains(&format!(" {w} ")) || long.starts_with(w),
            "{w:?}"
        );
    }
    // A short text is quoted whole.
    let short = [doc("b", "Use port 9090 for the admin UI.")];
    assert_eq!(
        search(&short, "port", 1)[0].excerpt,
        "Use port 9090 for the admin UI."
    );
}

#[test]
fn secrets_never_leave_in_an_excerpt() {
    let docs = [doc(
        "a",
        "Set OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456 in the env file.",
    )];
    let hit = &search(&docs, "env file", 1)[0];
    assert!(
        !hit.excerpt.contains("sk-proj-abcdefghijklmnop"),
        "{}",
        hit.excerpt
    );
}

#[test]
fn every_kind_of_entry_is_searchable_with_its_role() {
    let jsonl = SessionText::new()
        .user("Please look at the flaky test in tests/api_retry.rs")
        .tool_call("read", serde_json::json!({"path": "tests/api_retry.rs"}))
        .tool_result("fn retries_until_ok() { assert_eq!(attempts, 3) }")
        .bash("cargo test api_retry", "test result: FAILED. 1 failed")
        .branch_summary("Tried a longer timeout on another branch.")
        .compaction("Earlier work: the retry loop.", "e0")
        .model_change()
        .jsonl();
    let session = parse(&jsonl);
    let p = path(&session);
    let docs = documents(&p);
    let roles: Vec<(&str, &str, Option<&str>)> = docs
        .iter()
        .map(|d| (d.entry_id, d.role, d.tool_name.as_deref()))
        .collect();
    assert_eq!(
        roles,
        [
            ("e0", "user", None),
            ("e1", "assistant", None),
            ("e2", "toolResult", Some("bash")),
            ("e3", "bashExecution", None),
            ("e4", "branchSummary", None),
            ("e5", "compactionSummary", None),
        ]
    );
    assert!(
        docs[1]
            .text
            .contains("read({\"path\":\"tests/api_retry.rs\"})"),
        "{}",
        docs[1].text
    );
    assert_eq!(
        docs[3].text,
        "$ cargo test api_retry\ntest result: FAILED. 1 failed"
    );
    // The entries that hold the path come first; those sharing a part of it after.
    let hits = search(&docs, "tests/api_retry.rs", 5);
    let mut top: Vec<&str> = ids(&hits)[..2].to_vec();
    top.sort_unstable();
    assert_eq!(top, ["e0", "e1"], "{hits:#?}");
    assert_eq!(
        search(&docs, "attempts", 5)[0].tool_name.as_deref(),
        Some("bash")
    );
}

#[test]
fn an_identifier_outweighs_entries_that_only_share_its_parts() {
    let many =
        "the model picker and the selector list, model after model, selector after selector. "
            .repeat(6);
    let docs = [
        doc("a", &many),
        doc("b", "Wired modelSelector into the footer."),
        doc("c", &many),
    ];
    assert_eq!(ids(&search(&docs, "modelSelector", 5))[0], "b");
    // Asked as two words, they are words again.
    assert_eq!(ids(&search(&docs, "model selector", 5))[2], "b");
    let (terms, kinds) = query_terms("modelSelector model");
    assert_eq!(terms, ["model", "selector", "modelselector"]);
    assert_eq!(
        kinds,
        [TermKind::Word, TermKind::Part, TermKind::Identifier]
    );
    // A long entry that holds the identifier comes before short ones sharing its parts.
    let long = format!(
        "{} result.session was undefined here.",
        "Plain prose line. ".repeat(200)
    );
    let docs = [
        doc("a", "The result of the session."),
        doc("b", &long),
        doc("c", "session result, result session"),
    ];
    assert_eq!(ids(&search(&docs, "result.session", 5))[0], "b");
}
