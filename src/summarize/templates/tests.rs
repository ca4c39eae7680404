use super::*;

/// A serialized conversation with requests, a constraint, tool calls, a decision and a
/// failed command; the extractive summarizer's tests use it too.
pub(crate) const CONVERSATION: &str = "[User]: Add a --verbose flag to the CLI in src/cli.rs. You must keep the public API unchanged. Don't touch Cargo.toml.\n\n\
[Assistant thinking]: Look at src/cli.rs first.\n\n\
[Assistant tool calls]: read(path=\"src/cli.rs\")\n\n\
[Tool result]: use clap::Parser;\n\npub struct Cli {}\nimpl Cli { pub fn option_0(&self) -> bool { self.flags & 1 != 0 } }\nimpl Cli { pub fn option_1(&self) -> bool { self.flags & 2 != 0 } }\nimpl Cli { pub fn option_2(&self) -> bool { self.flags & 4 != 0 } }\nimpl Cli { pub fn option_3(&self) -> bool { self.flags & 8 != 0 } }\nimpl Cli { pub fn option_4(&self) -> bool { self.flags & 16 != 0 } }\nimpl Cli { pub fn option_5(&self) -> bool { self.flags & 32 != 0 } }\nimpl Cli { pub fn option_6(&self) -> bool { self.flags & 64 != 0 } }\nimpl Cli { pub fn option_7(&self) -> bool { self.flags & 128 != 0 } }\nimpl Cli { pub fn option_8(&self) -> bool { self.flags & 256 != 0 } }\nimpl Cli { pub fn option_9(&self) -> bool { self.flags & 512 != 0 } }\nimpl Cli { pub fn option_10(&self) -> bool { self.flags & 1024 != 0 } }\nimpl Cli { pub fn option_11(&self) -> bool { self.flags & 2048 != 0 } }\nimpl Cli { pub fn option_12(&self) -> bool { self.flags & 4096 != 0 } }\nimpl Cli { pub fn option_13(&self) -> bool { self.flags & 8192 != 0 } }\nimpl Cli { pub fn option_14(&self) -> bool { self.flags & 16384 != 0 } }\nimpl Cli { pub fn option_15(&self) -> bool { self.flags & 32768 != 0 } }\nimpl Cli { pub fn option_16(&self) -> bool { self.flags & 1 != 0 } }\nimpl Cli { pub fn option_17(&self) -> bool { self.flags & 2 != 0 } }\nimpl Cli { pub fn option_18(&self) -> bool { self.flags & 4 != 0 } }\nimpl Cli { pub fn option_19(&self) -> bool { self.flags & 8 != 0 } }\nimpl Cli { pub fn option_20(&self) -> bool { self.flags & 16 != 0 } }\nimpl Cli { pub fn option_21(&self) -> bool { self.flags & 32 != 0 } }\nimpl Cli { pub fn option_22(&self) -> bool { self.flags & 64 != 0 } }\nimpl Cli { pub fn option_23(&self) -> bool { self.flags & 128 != 0 } }\nimpl Cli { pub fn option_24(&self) -> bool { self.flags & 256 != 0 } }\nimpl Cli { pub fn option_25(&self) -> bool { self.flags & 512 != 0 } }\nimpl Cli { pub fn option_26(&self) -> bool { self.flags & 1024 != 0 } }\nimpl Cli { pub fn option_27(&self) -> bool { self.flags & 2048 != 0 } }\nimpl Cli { pub fn option_28(&self) -> bool { self.flags & 4096 != 0 } }\nimpl Cli { pub fn option_29(&self) -> bool { self.flags & 8192 != 0 } }\nimpl Cli { pub fn option_30(&self) -> bool { self.flags & 16384 != 0 } }\nimpl Cli { pub fn option_31(&self) -> bool { self.flags & 32768 != 0 } }\nimpl Cli { pub fn option_32(&self) -> bool { self.flags & 1 != 0 } }\nimpl Cli { pub fn option_33(&self) -> bool { self.flags & 2 != 0 } }\nimpl Cli { pub fn option_34(&self) -> bool { self.flags & 4 != 0 } }\nimpl Cli { pub fn option_35(&self) -> bool { self.flags & 8 != 0 } }\nimpl Cli { pub fn option_36(&self) -> bool { self.flags & 16 != 0 } }\nimpl Cli { pub fn option_37(&self) -> bool { self.flags & 32 != 0 } }\nimpl Cli { pub fn option_38(&self) -> bool { self.flags & 64 != 0 } }\nimpl Cli { pub fn option_39(&self) -> bool { self.flags & 128 != 0 } }\n\n\
[Assistant]: I decided to use a clap flag instead of an env var because it is discoverable.\n\n\
[Assistant tool calls]: edit(path=\"src/cli.rs\", oldText=\"pub struct Cli {}\", newText=\"pub struct Cli { verbose: bool }\"); write(path=\"tests/verbose.rs\", content=\"#[test]\\nfn t() {}\")\n\n\
[Tool result]: Successfully replaced text in src/cli.rs.\n\n\
[Tool result]: Successfully wrote 20 bytes to tests/verbose.rs\n\n\
[Assistant tool calls]: bash(command=\"cargo build\")\n\n\
[Tool result]: Finished dev profile\n\n\
[User]: also print the config path from config/default.toml when verbose\n\n\
[Assistant tool calls]: bash(command=\"cargo test\")\n\n\
[Tool result]: error[E0425]: cannot find value `verbose` in this scope\n --> src/cli.rs:12:5\n\nCommand exited with code 101\n\n\
[Assistant]: The test build fails; I will fix the missing binding in src/cli.rs next.";

#[test]
fn builtin_templates_load() {
    let p = Prompts::builtin();
    assert!(p.initial.contains("## Goal"));
    assert!(p.branch_preamble.ends_with("\n\n") && !p.branch_preamble.ends_with("\n\n\n"));
    assert!(p.wrappers.bash_command.vars().any(|v| v == "command"));
}

#[test]
fn four_fifths_is_floor_of_0_8_without_overflow() {
    for n in [0, 1, 4, 5, 9, 10, 16384, 1_000_003] {
        assert_eq!(four_fifths(n), n * 8 / 10, "{n}");
    }
    assert_eq!(
        four_fifths(u64::MAX),
        (u128::from(u64::MAX) * 8 / 10) as u64
    );
}

#[test]
fn history_prompt_layout() {
    let p = Prompts::builtin();
    let extra = vec!["repo uses pnpm".to_string()];
    let r = p.history_request(
        "[User]: hi",
        Some("old"),
        16384,
        &PromptOptions {
            custom_instructions: Some("tests"),
            prompt_override: None,
            additional_context: &extra,
            standing: None,
        },
    );
    assert_eq!(r.max_tokens, 13107);
    // floor(0.8 × r) for every r, without overflow.
    for (reserve, budget) in [
        (0, 0),
        (1, 0),
        (9, 7),
        (10, 8),
        (u64::MAX, 14757395258967641292_u64),
    ] {
        let r = p.history_request("", None, reserve, &PromptOptions::default());
        assert_eq!(r.max_tokens, budget, "{reserve}");
    }
    assert!(r.prompt.starts_with(
        "<conversation>\n[User]: hi\n</conversation>\n\n<previous-summary>\nold\n</previous-summary>\n\n<additional-context>\n- repo uses pnpm\n</additional-context>\n\n"
    ));
    assert!(r.prompt.ends_with("\n\nAdditional focus: tests"));
    assert!(r.prompt.contains(&p.update));
}

#[test]
fn standing_statements_go_between_the_context_and_the_instructions() {
    let p = Prompts::builtin();
    let extra = vec!["repo uses pnpm".to_string()];
    let list = "S1. Never push to main.\nS2. Keep replies short.";
    let opts = PromptOptions {
        custom_instructions: Some("tests"),
        additional_context: &extra,
        standing: Some(list),
        ..PromptOptions::default()
    };
    let r = p.history_request("[User]: hi", Some("old"), 100, &opts);
    assert!(r.prompt.contains(
        "</additional-context>\n\n<standing-statements>\nS1. Never push to main.\nS2. Keep replies short.\n</standing-statements>\n\n"
    ));
    // The instructions about the block come last, after the caller's focus.
    assert!(r
        .prompt
        .ends_with(&format!("Additional focus: tests\n\n{}", p.standing)));
    assert!(p.standing.contains("Replaced: S2, S5"));
    // Read back: the block is its own part, the kind is still a history summary.
    let parts = split_prompt(&r.prompt);
    assert_eq!(parts.conversation, "[User]: hi");
    assert_eq!(parts.previous, Some("old"));
    assert_eq!(parts.additional, ["repo uses pnpm"]);
    assert_eq!(parts.standing, Some(list));
    assert!(parts.instructions.starts_with(&p.update));
    assert_eq!(RequestKind::detect(&r.prompt), RequestKind::History);
    // A branch summary lists them the same way.
    let b = p.branch_request("[User]: hi", None, false, Some(list));
    assert_eq!(split_prompt(&b.prompt).standing, Some(list));
    assert!(b.prompt.ends_with(&p.standing));
    assert_eq!(RequestKind::detect(&b.prompt), RequestKind::Branch);
    // Nothing to list, nothing said about it.
    let none = p.branch_request("[User]: hi", None, false, Some(""));
    assert!(!none.prompt.contains("standing-statements"));
}

#[test]
fn bad_wrappers_are_rejected() {
    assert!(parse_wrappers("bash_command = \"{nope}\"").is_err());
    assert!(parse_wrappers("surprise = \"x\"").is_err());
}

#[test]
fn detects_the_kind_from_the_instructions() {
    let p = Prompts::builtin();
    let opts = PromptOptions::default();
    let wrap = |ins: &str| format!("<conversation>\n{CONVERSATION}\n</conversation>\n\n{ins}");
    assert_eq!(
        RequestKind::detect(&p.history_request(CONVERSATION, None, 100, &opts).prompt),
        RequestKind::History
    );
    assert_eq!(
        RequestKind::detect(
            &p.history_request(CONVERSATION, Some("old"), 100, &opts)
                .prompt
        ),
        RequestKind::History
    );
    assert_eq!(
        RequestKind::detect(&p.turn_prefix_request(CONVERSATION, 100).prompt),
        RequestKind::TurnPrefix
    );
    assert_eq!(RequestKind::detect(&wrap(&p.branch)), RequestKind::Branch);
    assert_eq!(
        RequestKind::detect(&wrap(&p.short_summary)),
        RequestKind::Short
    );
    // oh-my-pi asks for its short summary as a pull request description.
    assert_eq!(
        RequestKind::detect(&wrap(
            "Describe the changes above as a pull request description, in two sentences."
        )),
        RequestKind::Short
    );
    // pi's wording.
    assert_eq!(
        RequestKind::detect(&wrap("This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.\n\n## Original Request\n## Early Progress\n## Context for Suffix")),
        RequestKind::TurnPrefix
    );
    assert_eq!(
        RequestKind::detect(&wrap("Create a structured summary of this conversation branch for context when returning later.\n\n## Goal")),
        RequestKind::Branch
    );
    assert_eq!(
        RequestKind::detect(&wrap("The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.\n\n## Goal")),
        RequestKind::History
    );
    assert_eq!(
        RequestKind::detect(&format!("<conversation>\n{CONVERSATION}\n</conversation>\n\n<previous-summary>\nold\n</previous-summary>\n\nThe messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.")),
        RequestKind::History
    );
    // Branch wording inside the conversation does not count.
    let conv = "[User]: Reference context: summary of a conversation branch the user left.\n\n<branch-summary>\n## Goal\n- x\n</branch-summary>";
    assert_eq!(
        RequestKind::detect(&p.history_request(conv, None, 100, &opts).prompt),
        RequestKind::History
    );
}

/// A directory of prompt replacements, removed when dropped.
struct PromptsDir(std::path::PathBuf);

impl PromptsDir {
    fn with(files: &[(&str, &str)]) -> PromptsDir {
        let dir = std::env::temp_dir().join(format!(
            "compactd-prompts-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        PromptsDir(dir)
    }
}

impl Drop for PromptsDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn hermes_replacements_are_taken_file_by_file() {
    let dir = PromptsDir::with(&[("hermes/focus.md", "F {focus}\n")]);
    let p = Prompts::load(Some(&dir.0)).unwrap();
    assert_eq!(p.hermes.focus, "F {focus}");
    assert_eq!(p.hermes.memory, Prompts::builtin().hermes.memory);
}

/// A replacement that would drop what its text carries is refused at start-up, not used.
#[test]
fn hermes_replacements_that_lose_a_slot_or_the_marker_are_refused() {
    let dir = PromptsDir::with(&[("hermes/memory.md", "no slot\n")]);
    let err = Prompts::load(Some(&dir.0)).unwrap_err().to_string();
    assert!(err.ends_with("memory.md lacks the slot {json}"), "{err}");
    let dir = PromptsDir::with(&[("hermes/prefix.md", "Earlier context:\n")]);
    let err = Prompts::load(Some(&dir.0)).unwrap_err().to_string();
    assert!(err.contains("prefix.md must begin with"), "{err}");
}

#[test]
fn a_prompt_is_sized_once_for_everything_it_holds() {
    let p = Prompts::builtin();
    let extra = vec!["repo uses pnpm".repeat(50); 20];
    let list = "S1. Never push to main.\n".repeat(400);
    let previous = "## Goal\n- an earlier summary\n".repeat(400);
    let opts = PromptOptions {
        custom_instructions: Some("keep every path"),
        additional_context: &extra,
        standing: Some(&list),
        ..PromptOptions::default()
    };
    let conversation = "[User]: hi\n\n".repeat(1000);
    let r = p.history_request(&conversation, Some(&previous), 100, &opts);
    // A grown buffer would be twice what it holds: a large history copied into it twice.
    assert!(
        r.prompt.capacity() < r.prompt.len() + 512,
        "{} for {}",
        r.prompt.capacity(),
        r.prompt.len()
    );
}
