//! Open errors: a failing tool call is pinned until a later run of the same tool and
//! command succeeds.
//!
//! Decisions:
//! * The item's text is composed, not verbatim: `` `tool` `command` failed: <line> ``,
//!   where the line is the first line of the output naming an error, else its last line
//!   (skipping known noise such as an IDE debugger announcing itself), at most
//!   [`ERROR_LINE_CHARS`] characters; its values are that line's values (at most
//!   [`ERROR_VALUES`]: error codes, paths), so a summary that names the error keeps it.
//! * "The same command" is the command without what does not change what it runs
//!   (`cd DIR &&`, `2>&1`, a trailing pipe; see `subject::command_key`), so a rerun from
//!   another directory or without `| head` resolves the error. A rerun with different
//!   arguments does not: that is a different command.
//! * Not failures: a run the user aborted, and a search (`grep`, `rg`, `test`, `diff`, …)
//!   that exited with 1 and said nothing (no match is an answer, not an error).

use super::draft::Draft;
use super::kind::{Kind, Speaker};
use super::model::PinnedItem;
use super::secrets::redact;
use super::subject::{command_key, error_subject};
use super::values::values;
use super::words::{clip, collapse_ws};

const ERROR_LINE_CHARS: usize = 240;
const ERROR_VALUES: usize = 4;

/// Applies one tool result: a failure pins (or replaces) the open error of its command,
/// a success resolves it.
pub(super) fn tool_result(
    ledger: &mut Draft,
    is_error: bool,
    tool: &str,
    call: Option<&str>,
    output: &str,
    entry_id: Option<&str>,
) {
    let subject = error_subject(tool, call);
    let call_text = call
        .map(|c| format!(" `{}`", clip(&collapse_ws(&redact(c)), 120)))
        .unwrap_or_default();
    if !is_error {
        let said = format!("`{tool}`{call_text} succeeded later");
        ledger.resolve_errors(&subject, &said, entry_id);
        return;
    }
    let redacted = redact(output);
    if !is_failure(call, &redacted) {
        return;
    }
    let line = error_line(&redacted);
    let text = format!("`{tool}`{call_text} failed: {line}");
    let mut vals = values(&line);
    vals.truncate(ERROR_VALUES);
    ledger.push(PinnedItem::new(
        Kind::Error,
        Speaker::Tool,
        text,
        vals,
        Some(subject),
        entry_id,
    ));
}

/// Whether an error result is a failure worth pinning: not a run the user aborted, not
/// a search that found nothing (`grep` exits with 1 on no match).
fn is_failure(call: Option<&str>, output: &str) -> bool {
    let out = output.trim().to_lowercase();
    let aborted = |l: &str| {
        matches!(
            l,
            "command aborted" | "aborted" | "interrupted" | "cancelled" | "canceled"
        )
    };
    if out.lines().any(|l| aborted(l.trim())) {
        return false;
    }
    let program = call
        .map(command_key)
        .and_then(|c| c.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    let searcher = matches!(
        program.as_str(),
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "test" | "[" | "diff" | "cmp"
    );
    let said_nothing = out
        .lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l == "(no output)" || l.contains("exited with code 1"));
    !(searcher && said_nothing)
}

/// Lines a tool's output carries that say nothing about the failure (an IDE's Node
/// debugger announcing itself, an empty-output marker).
const NOISE_LINES: &[&str] = &[
    "debugger attached",
    "waiting for the debugger",
    "js-debug",
    "(no output)",
];

/// The line of an error output that says what went wrong: the first line naming an
/// error, else the last line (failures are reported at the end).
fn error_line(output: &str) -> String {
    let lines = || {
        output.lines().map(str::trim).filter(|l| {
            let f = l.to_lowercase();
            !l.is_empty() && !NOISE_LINES.iter().any(|n| f.contains(n))
        })
    };
    let telling = lines().find(|l| {
        let f = l.to_lowercase();
        [
            "error",
            "failed",
            "panicked",
            "exception",
            "fatal",
            "denied",
            "not found",
        ]
        .iter()
        .any(|w| f.contains(w))
    });
    let line = telling
        .or_else(|| lines().next_back())
        .unwrap_or("(no output)");
    clip(&collapse_ws(line), ERROR_LINE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ledger::Ledger;

    /// Bash results in order: (is_error, command, output).
    fn run(results: &[(bool, &str, &str)]) -> Ledger {
        let mut l = Draft::default();
        for (n, (is_error, call, output)) in results.iter().enumerate() {
            let id = format!("t{n}");
            tool_result(&mut l, *is_error, "bash", Some(call), output, Some(&id));
        }
        l.finish()
    }

    fn active(l: &Ledger) -> Vec<(Kind, &str)> {
        l.active().map(|i| (i.kind, i.text.as_str())).collect()
    }

    #[test]
    fn an_error_with_no_later_success_stays_open() {
        let l = run(&[
            (
                true,
                "cargo test",
                "running 3 tests\nerror[E0308]: mismatched types in src/a.rs",
            ),
            (false, "ls", "a b"),
        ]);
        assert_eq!(
            active(&l),
            [(
                Kind::Error,
                "`bash` `cargo test` failed: error[E0308]: mismatched types in src/a.rs"
            )]
        );
        assert_eq!(l.items()[0].values, ["src/a.rs"]);
    }

    #[test]
    fn aborted_runs_and_searches_that_found_nothing_are_not_errors() {
        let l = run(&[
            (true, "sleep 5", "Command aborted"),
            (true, "grep -n foo src/a.rs", "Command exited with code 1"),
            (true, "cd /x && rg foo | head", ""),
            (
                true,
                "grep -n x a.rs",
                "(no output)\n\nCommand exited with code 1",
            ),
        ]);
        assert_eq!(l.active().count(), 0);
    }

    #[test]
    fn a_rerun_from_another_directory_resolves_the_error() {
        let l = run(&[
            (
                true,
                "cd /repo && npm run check 2>&1 | head -40",
                "error TS2739",
            ),
            (false, "npm run check", "ok"),
        ]);
        assert_eq!(l.active().count(), 0);
    }

    #[test]
    fn the_error_line_names_the_error_or_is_the_last_line() {
        assert_eq!(
            error_line("Debugger attached.\nbuilding\nexit status 2"),
            "exit status 2"
        );
        assert_eq!(
            error_line("a\nTypeError: x is undefined\nb"),
            "TypeError: x is undefined"
        );
    }
}
