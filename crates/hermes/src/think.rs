//! Think-strip: reasoning blocks and stray tool-call markup removed from an assistant
//! text (`strip_think_blocks`, hermes agent/agent_runtime_helpers.py 724–849; contract §9).
//!
//! The passes run in hermes's order, each a Python `re.sub` with IGNORECASE and DOTALL.
//! Design decisions, so that the result is Python's to the character and no pass can fail:
//! * Every pattern is written without look-around, so `fancy_regex` hands it whole to the
//!   `regex` crate (linear time; a backtracking limit could otherwise turn a long answer
//!   into an error). hermes's `\b` after a tag name (a word character) becomes
//!   "`>` next, or a non-word character and then anything but `>`"; the look-behind in
//!   front of `<function` becomes a captured boundary character put back by the
//!   replacement (a match ends with `>`, which is never a boundary, so no match loses its
//!   boundary to the one before); `(?:(?!</function>).)*</function>` is `.*?</function>`.
//! * Case-insensitivity is spelled out per letter with Python's equivalents (`i` also
//!   matches `İ` and `ı`, `k` the Kelvin sign, `s` the long s) instead of `(?i)`, whose
//!   Unicode folding differs from Python's and would also widen the word class.

use super::py;
use fancy_regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// The reasoning tags, in hermes's order of pass 1.
const REASONING: [&str; 5] = [
    "think",
    "thinking",
    "reasoning",
    "REASONING_SCRATCHPAD",
    "thought",
];

/// The tool-call tags of pass 1b.
const TOOL_TAGS: [&str; 5] = [
    "tool_call",
    "tool_calls",
    "tool_result",
    "function_call",
    "function_calls",
];

/// A tag name matched as Python's IGNORECASE does: each letter as a class of the
/// characters Python treats as equal to it.
fn ci(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        match c.to_ascii_lowercase() {
            'i' => out.push_str("[iIİı]"),
            'k' => out.push_str("[kK\u{212A}]"),
            's' => out.push_str("[sSſ]"),
            l if l.is_ascii_alphabetic() => {
                out.push('[');
                out.push(l);
                out.push(l.to_ascii_uppercase());
                out.push(']');
            }
            other => out.push(other),
        }
    }
    out
}

/// `name\b[^>]*>` after `<`, for a name ending in a word character.
fn open_tag(name: &str) -> String {
    format!(r"<{}(?:[^>\w][^>]*)?>", ci(name))
}

fn alternatives(names: &[&str]) -> String {
    names.iter().map(|n| ci(n)).collect::<Vec<_>>().join("|")
}

/// The passes, in order: the pattern and what replaces a match.
static PASSES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let mut passes = Vec::new();
    // 1. Closed reasoning pairs, shortest match.
    for t in REASONING {
        let p = format!(r"(?s)<{}>.*?</{}>", ci(t), ci(t));
        passes.push((py::re::compile(&p), ""));
    }
    // 1b. Closed tool-call blocks, attributes allowed on the opening tag.
    for t in TOOL_TAGS {
        let p = format!(r"(?s){}.*?</{}>", open_tag(t), ci(t));
        passes.push((py::re::compile(&p), ""));
    }
    // 1c. `<function … name=…>…</function>` at the start or after `\n \r . ! ? :`,
    // with `\b` on both sides of the gap between `function` and `name`.
    let p = format!(
        r"(?s)(^|[\n\r.!?:])[ \t]*<{f}[^>\w](?:[^>]*[^>\w])?{n}\s*=[^>]*>.*?</{f}>",
        f = ci("function"),
        n = ci("name"),
    );
    passes.push((py::re::compile(&p), "$1"));
    // 2. An unterminated reasoning tag at a block start, to the end of the text (`.*$`
    // with DOTALL always runs to the very end).
    let p = format!(
        r"(?s)(?:^|\n)[ \t]*<(?:{})(?:[^>\w][^>]*)?>.*\Z",
        alternatives(&REASONING)
    );
    passes.push((py::re::compile(&p), ""));
    // 3. Stray reasoning tags.
    let p = format!(r"</?(?:{})>\s*", alternatives(&REASONING));
    passes.push((py::re::compile(&p), ""));
    // 3b. Stray tool-call closers.
    let mut closers = TOOL_TAGS.to_vec();
    closers.push("function");
    let p = format!(r"</(?:{})>\s*", alternatives(&closers));
    passes.push((py::re::compile(&p), ""));
    passes
});

/// The text with reasoning blocks and tool-call markup removed, as hermes's
/// `strip_think_blocks` leaves a string.
pub(crate) fn strip_think_blocks(text: &str) -> String {
    let mut out = text.to_string();
    for (re, rep) in PASSES.iter() {
        // Plain `regex` patterns (see the module docs): no run-time error can occur, and
        // should one ever, the pass leaves the text as it is.
        if let Ok(Cow::Owned(changed)) = re.try_replacen(&out, 0, *rep) {
            out = changed;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each pair: input, then hermes 0.19.0's `strip_think_blocks` output (run in Python).
    fn check(cases: &[(&str, &str)]) {
        for (input, want) in cases {
            assert_eq!(strip_think_blocks(input), *want, "input {input:?}");
        }
    }

    #[test]
    fn closed_reasoning_pairs_go_case_insensitively_shortest_first() {
        check(&[
            ("a<think>x</think>b", "ab"),
            (
                "<THINK>one</Think>two<thinking>\nthree\n</THINKING> four",
                "two four",
            ),
            (
                "keep <reasoning>r</reasoning><REASONING_SCRATCHPAD>s</reasoning_scratchpad><thought>t</thought>end",
                "keep end",
            ),
            ("<think>a</think>b</think>c", "bc"),
            ("<think></think>", ""),
            ("", ""),
        ]);
    }

    #[test]
    fn python_case_equivalents_count() {
        // Python's IGNORECASE: `i` matches İ and ı, `k` the Kelvin sign, `s` the long s.
        check(&[
            ("<th\u{130}nk>x</th\u{131}nk>y", "y"),
            (
                "<thin\u{212A}>x</think>y<rea\u{17F}oning>z</reasoning>",
                "y",
            ),
        ]);
    }

    #[test]
    fn tool_call_blocks_need_a_word_boundary_after_the_name() {
        check(&[
            (
                "x<tool_call>{\"a\":1}</tool_call>y<tool_calls id=\"1\">z</tool_calls>w",
                "xyw",
            ),
            (
                "<tool_callx>keep</tool_callx>",
                "<tool_callx>keep</tool_callx>",
            ),
            ("<tool_result-x>drop</tool_result>.", "."),
            (
                "<function_calls>a</function_calls><function_call>b</function_call>",
                "",
            ),
            // é is a word character (no boundary), U+0345 is not (Python's \w).
            ("<tool_call\u{e9}>keep</tool_call>", "<tool_call\u{e9}>keep"),
            ("<tool_call\u{345}>keep</tool_call>", ""),
        ]);
    }

    #[test]
    fn function_blocks_only_at_a_block_boundary_with_a_name_attribute() {
        check(&[
            (
                "Use <function name=\"f\">x</function> in prose",
                "Use <function name=\"f\">xin prose",
            ),
            ("Done. <function name=\"f\">x</function>after", "Done.after"),
            ("<function name=\"f\">x</function>", ""),
            (
                "line\n  <function foo name = 'g'>a</function></function>z",
                "line\nz",
            ),
            ("x:<function name=1>a</function>", "x:"),
            ("<functionname=1>a</function>", "<functionname=1>a"),
            ("<function aname=1>a</function>", "<function aname=1>a"),
            ("<function a-name=1>a</function>", ""),
            ("<function\u{a0}name=x>a</function>", ""),
            (
                ".\r<function name=x>a</function>\n<function name=y>b</function>",
                ".\r\n",
            ),
        ]);
    }

    #[test]
    fn unterminated_reasoning_runs_to_the_end_from_a_block_start() {
        check(&[
            ("start\n<think>unterminated\nmore", "start"),
            ("mid <think>open", "mid open"),
            ("<thinking foo>open to end", ""),
            ("<thinkingx>open", "<thinkingx>open"),
            ("a\n\t <REASONING_SCRATCHPAD>rest", "a"),
        ]);
    }

    #[test]
    fn stray_tags_go_with_the_whitespace_after_them() {
        check(&[
            ("stray </think>  \n next <thought>\n x", "stray next x"),
            ("</tool_call>\n a </FUNCTION>  b", "a b"),
        ]);
    }

    #[test]
    fn long_texts_do_not_hit_a_backtracking_limit() {
        let text = format!(
            "{}<think>{}",
            "<function name=x>".repeat(20_000),
            "y\n".repeat(200_000)
        );
        let out = strip_think_blocks(&text);
        assert_eq!(
            out,
            "<function name=x>".repeat(20_000) + "y\n".repeat(200_000).as_str()
        );
    }
}
