//! Diagnostics: whether a command or tool failed, and the exact line that says why
//! (errors, failed tests, non-zero exit codes), told apart from content that only mentions
//! errors (files printed, grep hits).

use super::paths::{is_path_byte, path_token};
use super::text::collapse_ws;

/// A non-zero exit code named in a (short) line.
fn exit_code_in(lower: &str) -> Option<i64> {
    if lower.len() > 200 {
        return None;
    }
    for pat in ["exit code", "exited with code", "exit status"] {
        if let Some(p) = lower.find(pat) {
            let rest = lower[p + pat.len()..].trim_start_matches([':', ' ']);
            let digits: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// `src/a.ts:12:` or `./a.ts:import …`: a grep hit, not an error message.
fn is_grep_hit(t: &str) -> bool {
    let head = t.split(':').next().unwrap_or("");
    head.len() < t.len() && head.bytes().all(is_path_byte) && path_token(head).is_some()
}

fn is_strong_error(lower: &str) -> bool {
    let first = lower.split_whitespace().next().unwrap_or("");
    lower.starts_with("error")
        || lower.contains(": error")
        || lower.starts_with("npm err!")
        || lower.starts_with("fatal:")
        || lower.starts_with("fatal error")
        || lower.starts_with("fail ")
        || lower.starts_with("uncaught ")
        || lower.contains("panicked at")
        || first.ends_with("error:")
        || first.ends_with("exception:")
        || lower.contains("command not found")
        || lower.contains("no such file or directory")
        || lower.contains("permission denied")
        || lower.contains("segmentation fault")
}

fn is_weak_error(lower: &str) -> bool {
    (lower.contains("failed") && !lower.contains(" 0 failed") && !lower.contains("failed: 0"))
        || lower.contains("traceback (most recent call last)")
        || lower.contains("exception")
        || counts_errors(lower)
}

/// `3 errors`, `1 error`.
fn counts_errors(lower: &str) -> bool {
    lower.match_indices(" error").any(|(i, _)| {
        let before = lower[..i].trim_end_matches(|c: char| c.is_ascii_digit());
        let digits = &lower[before.len()..i];
        !digits.is_empty() && digits.bytes().any(|d| d != b'0')
    })
}

/// The exact error line of a failed command's output, if it failed.
pub(super) fn command_error(command: &str, output: &str, exit_code: Option<i64>) -> Option<String> {
    let lead = main_command(command);
    let viewer = is_viewer(&lead);
    let searcher = matches!(lead.first().map(String::as_str), Some("grep" | "rg" | "ag"));
    let (mut strong, mut weak, mut exit) = (None, None, None);
    let mut code = exit_code;
    for line in output.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let lower = t.to_lowercase();
        if let Some(c) = exit_code_in(&lower) {
            if c != 0 && exit.is_none() {
                exit = Some(t);
                code = Some(c);
            }
            continue;
        }
        if viewer || is_grep_hit(t) {
            continue;
        }
        if strong.is_none() && is_strong_error(&lower) {
            strong = Some(t);
        } else if weak.is_none() && is_weak_error(&lower) {
            weak = Some(t);
        }
    }
    if searcher && code == Some(1) && strong.is_none() {
        return None; // no match is not a failure
    }
    if let Some(line) = strong.or(weak).or(exit) {
        return Some(line.to_string());
    }
    code.filter(|&c| c != 0).map(|c| format!("exit code {c}"))
}

/// The words of the command that does the work (after `cd … &&`).
pub(super) fn main_command(command: &str) -> Vec<String> {
    main_segment(command)
        .split_whitespace()
        .take(2)
        .map(str::to_string)
        .collect()
}

/// The first `&&` segment of a script that is not a comment or a `cd`.
fn main_segment(command: &str) -> &str {
    command
        .lines()
        .flat_map(|l| l.split("&&"))
        .map(str::trim)
        .find(|s| !s.is_empty() && !s.starts_with('#') && *s != "cd" && !s.starts_with("cd "))
        .unwrap_or_else(|| command.trim())
}

/// What "the same command" is when a later success resolves a failure: for a one-line
/// command, the command that does the work without `cd … &&`, `2>&1` and the pipes that
/// filter its output (`npm run check 2>&1 | head` = `npm run check`); a script as written.
pub(super) fn command_key(command: &str) -> String {
    if command.trim().contains('\n') {
        return collapse_ws(command);
    }
    let segment = main_segment(command);
    let head = segment.split('|').next().unwrap_or(segment);
    collapse_ws(&head.replace("2>&1", ""))
}

/// Commands that print files or listings, whose output is content, not diagnostics.
pub(super) fn is_viewer(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    match first.as_str() {
        "sed" => !words.get(1).is_some_and(|w| w.starts_with("-i")),
        "cat" | "head" | "tail" | "less" | "more" | "grep" | "rg" | "ag" | "find" | "ls"
        | "tree" | "wc" | "echo" | "nl" | "awk" => true,
        "git" => matches!(
            words.get(1).map(String::as_str),
            Some("diff" | "show" | "log" | "status" | "grep" | "blame")
        ),
        _ => false,
    }
}

/// The error line of a non-shell tool result: only its first line counts, since the rest
/// is content (a file, a listing).
pub(super) fn tool_error(output: &str) -> Option<String> {
    let first = output.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lower = first.to_lowercase();
    [
        "error",
        "enoent",
        "eacces",
        "eisdir",
        "enotdir",
        "could not",
        "cannot ",
        "failed",
        "no such file",
        "file not found",
        "permission denied",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
    .then(|| first.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::extractive::summarize;
    use crate::summarize::extractive::tests::history;

    #[test]
    fn the_same_command_ignores_cd_and_output_filters() {
        assert_eq!(
            command_key("cd /repo && npm run check 2>&1 | grep -E \"error\" | head -10"),
            "npm run check"
        );
        assert_eq!(command_key("npm run check"), "npm run check");
        assert_eq!(
            command_key("cd /repo\n# fix\nsed -i '' x a.ts"),
            "cd /repo # fix sed -i '' x a.ts"
        );
        let conv = "[User]: Make the checks pass in src/lib.ts please, all of them.\n\n[Assistant tool calls]: bash(command=\"cd /repo && npm run check 2>&1 | head -5\")\n\n[Tool result]: src/lib.ts(3,1): error TS2304: Cannot find name 'x'.\n\n[Assistant tool calls]: edit(path=\"src/lib.ts\", oldText=\"x\", newText=\"y\")\n\n[Tool result]: Successfully replaced text in src/lib.ts.\n\n[Assistant tool calls]: bash(command=\"npm run check\")\n\n[Tool result]: All checks passed, nothing to report here at all.\n\n[Assistant]: The checks pass now and everything is clean again.";
        let t = summarize(&history(conv, None, 13107)).text;
        assert!(!t.contains("### Blocked\n-"), "{t}");
        // Resolved: not the last error, only an error met on the way.
        assert!(!t.contains("Open error"), "{t}");
        assert!(
            t.contains("- Error met: `cd /repo && npm run check 2>&1 | head -5` failed: `src/lib.ts(3,1): error TS2304: Cannot find name 'x'.` (passed since)"),
            "{t}"
        );
    }
}
