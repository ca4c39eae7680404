//! The extractive summarizer on a real pi session, through the prepare pipeline that
//! builds its requests.

#[path = "support/fixtures.rs"]
mod fixtures;

use compactd::compaction::ledger::{extract, is_present, Kind, Source, SourceRole};
use compactd::compaction::Settings;
use compactd::config::Checking;
use compactd::pipeline::compact::{plan_compaction, run_compaction, CompactionResult};
use compactd::pipeline::prepare::PreparedRequest;
use compactd::pipeline::{
    prepare_response, BodyFormat, CompactOptions, PrepareOptions, PrepareResponse, SessionInput,
};
use compactd::session::text::utf16_len;
use compactd::summarize::extractive::{
    summarize, Extractive, CHECKPOINT_HEADINGS, TURN_PREFIX_HEADINGS,
};
use compactd::summarize::{Prompts, RequestKind, SummaryRequest};

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
    let requests: Vec<SummaryRequest> = c
        .requests
        .iter()
        .flatten()
        .map(PreparedRequest::to_request)
        .collect();
    for r in &requests {
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
    let history = summarize(&requests[0]).text;
    // The previous summary's items survive the merge.
    assert!(history.contains("**Context Checkpoint: Coding Agent Refactoring**"));
    assert!(history.contains("E2E tests only"));
    // The previous summary's goal leads; a short reply ("can leave it") is no goal.
    assert!(
        history.starts_with("## Goal\n- Refactor `coding-agent`"),
        "{history}"
    );
    // A short reply is quoted among the instructions, never as the goal.
    assert!(
        !history.starts_with("## Goal\n- can leave it"),
        "a reply is not the goal"
    );
}

/// `compactd compact FILE` with default settings, in process.
/// Also the serialized conversation summarized (history, then the turn prefix).
fn compact(file: &str) -> (CompactionResult, Vec<String>) {
    let body = fixtures::read(file);
    let prompts = Prompts::builtin();
    let input = SessionInput::parse(
        body.as_bytes(),
        BodyFormat::Jsonl,
        CompactOptions::default(),
    )
    .unwrap();
    let plan = plan_compaction(&input, &prompts, Settings::default(), Checking::default()).unwrap();
    let mut conversations = vec![plan.history_parts.join("\n\n")];
    conversations.extend(plan.turn_prefix.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let result = runtime
        .block_on(run_compaction(
            plan,
            &prompts,
            &Extractive,
            time::OffsetDateTime::UNIX_EPOCH,
            &compactd::summarize::Silent,
        ))
        .unwrap();
    (result, conversations)
}

/// The `[User]: ` parts of a serialized conversation.
fn user_parts(conversation: &str) -> Vec<&str> {
    conversation
        .split("\n\n[")
        .filter_map(|p| p.strip_prefix("[").unwrap_or(p).strip_prefix("User]: "))
        .collect()
}

#[test]
fn the_real_session_summary_is_short_and_keeps_what_matters() {
    let (result, conversations) = compact(fixtures::BEFORE_COMPACTION);
    let summary = &result.summary;
    // Was 37,092 characters, two thirds of it noise.
    assert!(
        summary.chars().count() <= 12_000,
        "{} characters",
        summary.chars().count()
    );
    // Every modified file.
    for file in &result.details.files.modified_files {
        assert!(summary.contains(&format!("`{file}`")), "{file} missing");
    }
    // The last user request before the cut: the split turn's own request.
    assert!(result.is_split_turn);
    let turn = conversations.last().expect("a split turn");
    let last_request = user_parts(turn).pop().expect("the turn's request");
    let words: Vec<&str> = last_request.split_whitespace().collect();
    assert!(summary.contains(&words.join(" ")), "{last_request}");
    // Every user constraint: the previous summary's, and the ones the ledger pins.
    for c in [
        "**E2E tests only** - no unit tests",
        "Keep old code working alongside new code",
        "`npm run check` must pass (formatting, linting, types)",
    ] {
        assert!(summary.contains(c), "{c} missing");
    }
    let users: Vec<&str> = conversations.iter().flat_map(|c| user_parts(c)).collect();
    let sources: Vec<Source<'_>> = users
        .iter()
        .map(|text| Source {
            entry_id: None,
            role: SourceRole::User,
            text,
        })
        .collect();
    let ledger = extract(&sources, &[] as &[&str]);
    for item in ledger.active().filter(|i| {
        matches!(
            i.kind,
            Kind::Rule | Kind::Constraint | Kind::Preference | Kind::Fact
        )
    }) {
        assert!(is_present(item, summary), "{:?} missing", item.text);
    }
    // No noise: chit-chat, import specifiers, diff paths, command logs, stale state.
    for noise in [
        "wow, it works",
        // The bare question; "are we all commited? if yes, do it, if not commit first" is
        // an instruction and is quoted.
        "- are we all commited?\n",
        "`../../utils/config.js`",
        "`a/packages/",
        "`b/packages/",
        "Ran `grep",
        "Agreed Structure",
    ] {
        assert!(!summary.contains(noise), "{noise:?} in the summary");
    }
    // Progress by file and commit.
    assert!(summary.contains("- [x] Committed: \"Move config.ts from utils/ to src/\""));
    if std::env::var_os("EXTRACTIVE_PRINT").is_some() {
        println!("{summary}");
    }
}

#[test]
fn the_large_session_summary_is_short_and_lists_every_modified_file() {
    let (result, _) = compact(fixtures::LARGE_SESSION);
    // Was 28,120 characters.
    assert!(
        result.summary.chars().count() <= 12_000,
        "{} characters",
        result.summary.chars().count()
    );
    for file in &result.details.files.modified_files {
        assert!(result.summary.contains(file.as_str()), "{file} missing");
    }
    assert!(
        !result.summary.contains("- /mode"),
        "a slash command is no goal"
    );
}

/// On both real sessions the default summary quotes every user instruction of
/// the summarized span (chit-chat aside; a message that is only pasted output is kept by
/// its error line), names the errors met, and stays within 12 kB.
#[test]
fn the_real_summaries_keep_every_instruction_and_error() {
    for file in fixtures::ALL {
        let (result, conversations) = compact(file);
        let summary = &result.summary;
        assert!(summary.len() <= 12_000, "{file}: {} bytes", summary.len());
        // The goal is the objective in force, not a log of requests.
        let goal = summary.split("\n\n## ").next().unwrap();
        let goals = goal.lines().filter(|l| l.starts_with("- ")).count();
        assert!((1..=3).contains(&goals), "{file}: {goal}");
        let flat: String = summary.split_whitespace().collect::<Vec<_>>().join(" ");
        for user in conversations.iter().flat_map(|c| user_parts(c)) {
            let words: Vec<&str> = user.split_whitespace().collect();
            let quoted = words.join(" ");
            let head: String = quoted.chars().take(40).collect();
            if flat.contains(&head) || !compactd::compaction::ledger::is_real_request(user) {
                continue;
            }
            // Only pasted output: its error is named instead.
            assert!(
                flat.contains("Error met: a run the user pasted failed"),
                "{file}: {head:?} missing"
            );
        }
        assert!(
            flat.to_lowercase().contains("no such file or directory"),
            "{file}: the errors met"
        );
        assert!(flat.contains("Error met: "), "{file}");
    }
}
