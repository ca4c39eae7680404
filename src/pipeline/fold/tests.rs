use super::*;
use crate::pipeline::chunks::truncate_units;
use crate::summarize::RequestKind;

fn request(prompt: &str, max_tokens: u64) -> SummaryRequest {
    SummaryRequest {
        kind: RequestKind::History,
        system_prompt: "S".into(),
        prompt: prompt.into(),
        max_tokens,
        strategy: None,
        model: None,
        ledger: None,
    }
}

fn pi_prompt(turns: usize, size: usize) -> String {
    let body: Vec<String> = (0..turns)
        .map(|i| {
            let role = if i % 2 == 0 { "User" } else { "Assistant" };
            format!("[{role}]: T{i:02} {}", "x".repeat(size))
        })
        .collect();
    format!(
        "<conversation>\n{}\n</conversation>\n\n<previous-summary>\nP\n</previous-summary>\n\nUpdate it.",
        body.join("\n\n")
    )
}

#[test]
fn turns_start_at_labelled_lines_after_blank_lines() {
    let p = pi_prompt(3, 4);
    let starts = turn_starts(&p);
    assert_eq!(starts.len(), 3);
    assert!(p[starts[0]..].starts_with("[User]: T00"));
    assert!(p[starts[2]..].starts_with("[User]: T02"));
    let hermes = "Intro [USER]: not at a line start\n\nPREVIOUS:\nold\n\nTURNS:\n[USER]: a\n[ASSISTANT]: same paragraph\n\n[TOOL RESULT call_1-x.y:z]: b\n\n[3 is no label]: c\n\nEnd";
    let starts = turn_starts(hermes);
    let at: Vec<&str> = starts.iter().map(|&i| &hermes[i..i + 6]).collect();
    assert_eq!(at, ["[USER]", "[TOOL "]);
    assert!(is_capitals(&hermes[starts[0]..]));
    assert!(!is_capitals("[Tool result]: x"));
    assert!(is_label("[Assistant thinking]:\nx"));
    assert!(!is_label("[1]: x") && !is_label("[a—b]: x") && !is_label("[x] y"));
}

#[test]
fn a_prompt_that_fits_or_has_one_turn_is_not_folded() {
    let p = pi_prompt(10, 100);
    assert_eq!(plan_fold(&request(&p, 100), 100_000), None);
    let one = format!(
        "<conversation>\n[User]: {}\n</conversation>\n\nGo.",
        "y".repeat(9000)
    );
    assert_eq!(plan_fold(&request(&one, 100), 1000), None);
    let none = "z".repeat(9000);
    assert_eq!(plan_fold(&request(&none, 100), 1000), None);
}

#[test]
fn the_newest_turns_that_fit_are_kept_with_the_instructions() {
    let p = pi_prompt(40, 396); // 40 turns of about 100 tokens
    let req = request(&p, 500);
    let plan = plan_fold(&req, 2000).unwrap();
    assert_eq!(plan.head, "<conversation>\n");
    assert_eq!(plan.carry_budget, 500);
    assert!(plan.kept.ends_with("</previous-summary>\n\nUpdate it."));
    let kept = turn_starts(plan.kept).len();
    assert_eq!(plan.older.len() + kept, 40);
    assert!(plan.older[0].starts_with("[User]: T00") && !plan.older[0].ends_with('\n'));
    // Every turn is either folded or kept, in order, and the final call fits.
    let last = plan.final_prompt(&"s".repeat(2000));
    assert!(last.starts_with("<conversation>\n[Earlier conversation, summarized]: sss"));
    assert!(tokens_of(&last) + 1 + 500 <= 2000, "{}", tokens_of(&last));
    assert!(kept >= 5, "{kept}");
    let restored = format!("{}{}\n\n{}", plan.head, plan.older.join("\n\n"), plan.kept);
    assert_eq!(restored, p);
}

#[test]
fn a_last_turn_larger_than_the_window_is_not_folded() {
    let p = format!("{}\n\n[User]: {}", pi_prompt(4, 10), "w".repeat(20_000));
    assert_eq!(plan_fold(&request(&p, 100), 2000), None);
}

#[test]
fn chunks_take_whole_turns_and_cut_a_giant_one() {
    let turns = ["aaaa", "bbbb", "cccc"];
    assert_eq!(next_chunk(&turns, 10), (2, "aaaa\n\nbbbb".to_string()));
    let big = "q".repeat(5000);
    let (take, chunk) = next_chunk(&[big.as_str(), "r"], 1000);
    assert_eq!(take, 1);
    assert!(utf16_len(&chunk) <= 1000 && chunk.ends_with("context window]"));
}

#[test]
fn truncation_keeps_whole_characters() {
    let t = truncate_units(&"😀".repeat(500), 100);
    assert!(utf16_len(&t) <= 100);
    assert!(t.ends_with("window]"));
}
