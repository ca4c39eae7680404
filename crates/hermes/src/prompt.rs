//! The summarizer request (contract §10): the budget, the memory, temporal and focus
//! blocks, the auto focus, and the prompt built around the serialized turns.
//!
//! Design decisions:
//! * Data and wording are apart: [`PromptInput`] holds the data hermes computes (turns
//!   text, previous summary, budget, date, memory context, focus) and [`build`] places it
//!   into any [`HermesTexts`]. Built with hermes's own texts (written in our slot format),
//!   the result is hermes's prompt byte for byte; that is how the structure was checked,
//!   and how the conformance harness can swap the wording on either side.
//! * The separators around a text are here, not in the texts (see `texts`): `"\n"` on
//!   both sides of the temporal rule, `"\n\n"` before the memory and focus blocks.
//! * The memory context is always redacted (hermes forces it, whatever the redaction
//!   setting), the auto focus only when `opts.redact` is on.

use super::message;
use super::py;
use super::summaries;
use super::texts::{fill, HermesTexts};
use super::tokens;
use super::Switches;
use serde_json::Value;

/// The least budget a summary is given (`_MIN_SUMMARY_TOKENS`).
const MIN_SUMMARY_TOKENS: u64 = 2000;
/// The share of the turns' rough size given to the summary (`_SUMMARY_RATIO`).
const SUMMARY_RATIO: f64 = 0.20;
/// Memory context above `MEMORY_MAX` keeps a head and a tail (context_engine.py 33–36).
const MEMORY_MAX: usize = 6000;
const MEMORY_HEAD: usize = 4000;
const MEMORY_TAIL: usize = 1500;
const MEMORY_CUT: &str = "\n...[memory provider context truncated]...\n";
/// The auto focus: at most 3 turns of at most 260 code points, 700 in all (299–301).
const FOCUS_TURNS: usize = 3;
const FOCUS_TURN_MAX: usize = 260;
const FOCUS_MAX: usize = 700;

/// `_compute_summary_budget` (1815): `max(2000, min(int(R(turns) × 0.20), max))`. Only
/// prompt guidance: the request carries no `max_tokens`.
pub(crate) fn summary_budget(turns: &[Value], max_summary_tokens: u64) -> u64 {
    // int() of a float product, as in Python (the same IEEE double).
    let share = (tokens::rough(turns) as f64 * SUMMARY_RATIO) as u64;
    MIN_SUMMARY_TOKENS.max(share.min(max_summary_tokens))
}

/// `sanitize_memory_context` (context_engine.py 40): stripped, redacted in forced mode
/// with URL credentials, and cut to a head and a tail when over 6000 code points.
pub(crate) fn sanitize_memory(memory_context: &str) -> String {
    let clean = super::redact::redact_memory(py::strip(memory_context));
    if py::len(&clean) <= MEMORY_MAX {
        return clean;
    }
    format!(
        "{}{MEMORY_CUT}{}",
        py::head(&clean, MEMORY_HEAD),
        py::last(&clean, MEMORY_TAIL)
    )
}

/// The `{json}` slot: the sanitized memory as a JSON string literal, with `&`, `<`, `>`
/// escaped so the text cannot close the block it sits in.
pub(crate) fn memory_json(sanitized: &str) -> String {
    py::dumps(&py::PyValue::Str(sanitized.to_string()), false)
        .replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
}

/// M: `"\n\n"` + the memory text, or `""` when the sanitized memory context is empty.
pub(crate) fn memory_block(texts: &HermesTexts, memory_context: &str) -> String {
    let sanitized = sanitize_memory(memory_context);
    if sanitized.is_empty() {
        return String::new();
    }
    let json = memory_json(&sanitized);
    format!("\n\n{}", fill(&texts.memory, &[("json", &json)]))
}

/// T: the temporal rule between two newlines, or `""` without a date.
pub(crate) fn temporal_block(texts: &HermesTexts, today: Option<&str>) -> String {
    match today {
        Some(date) if !date.is_empty() => {
            format!("\n{}\n", fill(&texts.temporal, &[("date", date)]))
        }
        _ => String::new(),
    }
}

/// S: the template with its budget and temporal rule.
pub(crate) fn template_block(texts: &HermesTexts, budget: u64, today: Option<&str>) -> String {
    let temporal = temporal_block(texts, today);
    fill(
        &texts.template,
        &[("budget", &budget.to_string()), ("temporal", &temporal)],
    )
}

/// The focus block: `"\n\n"` + the focus text, or `""` for an empty focus.
pub(crate) fn focus_block(texts: &HermesTexts, focus: Option<&str>) -> String {
    match focus {
        Some(f) if !f.is_empty() => format!("\n\n{}", fill(&texts.focus, &[("focus", f)])),
        _ => String::new(),
    }
}

/// `_derive_auto_focus_topic` (2678): the newest (up to 3) user messages that are not
/// handoff summaries, each as its text view stripped, redacted and with whitespace runs
/// collapsed, oldest first, as `Recent user focus:\n- …`. `None` when there is none.
/// `messages` is the whole (pruned) list, tail included.
pub(crate) fn auto_focus(
    messages: &[Value],
    texts: &HermesTexts,
    opts: &Switches,
) -> Option<String> {
    let mut picked = Vec::new();
    for msg in messages.iter().rev() {
        if message::role(msg) != Some("user") {
            continue;
        }
        let content = message::content(msg);
        if summaries::is_handoff_summary(content, &texts.prefix) {
            continue;
        }
        let view = message::text_view(content);
        let stripped = py::strip(&view);
        let text = if opts.redact {
            super::redact::redact_sensitive_text(stripped)
        } else {
            stripped.to_string()
        };
        if text.is_empty() {
            continue;
        }
        picked.push(cut(&py::collapse_spaces(&text), FOCUS_TURN_MAX));
        if picked.len() >= FOCUS_TURNS {
            break;
        }
    }
    if picked.is_empty() {
        return None;
    }
    picked.reverse();
    let lines: Vec<String> = picked.iter().map(|t| format!("- {t}")).collect();
    Some(cut(
        &format!("Recent user focus:\n{}", lines.join("\n")),
        FOCUS_MAX,
    ))
}

/// Over `max` code points: the first `max − 1`, right-stripped, and `…`.
fn cut(text: &str, max: usize) -> String {
    if py::len(text) > max {
        format!("{}…", py::rstrip(py::head(text, max - 1)))
    } else {
        text.to_string()
    }
}

/// The focus of a request: the focus topic when it is non-empty, else the auto focus
/// (hermes: `focus_topic or self._derive_auto_focus_topic(messages)`).
pub(crate) fn choose_focus(
    focus_topic: Option<&str>,
    messages: &[Value],
    texts: &HermesTexts,
    opts: &Switches,
) -> Option<String> {
    match focus_topic {
        Some(f) if !f.is_empty() => Some(f.to_string()),
        _ => auto_focus(messages, texts, opts),
    }
}

/// The data of one summarizer prompt, as hermes computes it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PromptInput<'a> {
    /// C: the serialized turns (`serialize::serialize`).
    pub serialized: &'a str,
    /// P: the previous summary body; `None` or empty gives the first-compaction prompt.
    pub previous_summary: Option<&'a str>,
    /// The summary budget ([`summary_budget`]).
    pub budget: u64,
    /// The date of the temporal rule, `YYYY-MM-DD`; `None` or empty omits the rule.
    pub today: Option<&'a str>,
    /// The raw `memoryContext` (sanitized here).
    pub memory_context: &'a str,
    /// The focus ([`choose_focus`]); `None` or empty gives no focus block.
    pub focus: Option<&'a str>,
}

/// The prompt, exactly: V-first or V-update around the data, then the focus block.
pub fn build(texts: &HermesTexts, input: &PromptInput) -> String {
    let memory = memory_block(texts, input.memory_context);
    let template = template_block(texts, input.budget, input.today);
    let mut prompt = match input.previous_summary {
        Some(previous) if !previous.is_empty() => fill(
            &texts.update,
            &[
                ("preamble", &texts.preamble),
                ("previous", previous),
                ("turns", input.serialized),
                ("memory", &memory),
                ("template", &template),
            ],
        ),
        _ => fill(
            &texts.first,
            &[
                ("preamble", &texts.preamble),
                ("turns", input.serialized),
                ("memory", &memory),
                ("template", &template),
            ],
        ),
    };
    prompt.push_str(&focus_block(texts, input.focus));
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Switches = Switches {
        redact: false,
        no_head_role_user: false,
    };

    /// Short stand-ins with the slots of the real texts, so the tests show the structure.
    /// Expected prompts: a port of [`build`] that, filled with hermes 0.19.0's own texts,
    /// reproduces `_generate_summary`'s prompt byte for byte (checked for the first and
    /// update prompts, with and without date, memory and focus), filled with these.
    fn markers() -> HermesTexts {
        let mut t = HermesTexts::builtin();
        t.preamble = "<pre>".into();
        t.temporal = "<t {date}|{date}>".into();
        t.template = "<s {budget}>\n{temporal}\n</s>".into();
        t.first = "{preamble}<f>{turns}{memory}<f/>{template}".into();
        t.update = "{preamble}<u>{previous}<u/>{turns}{memory}<u//>{template}".into();
        t.focus = "<focus {focus}|{focus}>".into();
        t.memory = "<m>{json}</m>".into();
        t
    }

    const C: &str = "[USER]: fix the {budget} bug in a.py\n\n[ASSISTANT]: ok";

    #[test]
    fn first_prompt_with_date_and_no_memory_or_focus() {
        let input = PromptInput {
            serialized: C,
            budget: 2000,
            today: Some("2026-01-15"),
            ..Default::default()
        };
        assert_eq!(
            build(&markers(), &input),
            "<pre><f>[USER]: fix the {budget} bug in a.py\n\n[ASSISTANT]: ok<f/><s 2000>\n\n<t 2026-01-15|2026-01-15>\n\n</s>"
        );
    }

    #[test]
    fn update_prompt_with_memory_and_focus_and_no_date() {
        let input = PromptInput {
            serialized: C,
            previous_summary: Some("old {turns} body"),
            budget: 2000,
            today: None,
            memory_context: "  mem <x> & \"y\"\né\t",
            focus: Some("the {focus} topic"),
        };
        assert_eq!(
            build(&markers(), &input),
            "<pre><u>old {turns} body<u/>[USER]: fix the {budget} bug in a.py\n\n[ASSISTANT]: ok\n\n<m>\"mem \\u003cx\\u003e \\u0026 \\\"y\\\"\\né\"</m><u//><s 2000>\n\n</s>\n\n<focus the {focus} topic|the {focus} topic>"
        );
    }

    #[test]
    fn empty_previous_date_memory_and_focus_count_as_absent() {
        let input = PromptInput {
            serialized: C,
            previous_summary: Some(""),
            budget: 2000,
            today: Some(""),
            memory_context: "  \n ",
            focus: Some(""),
        };
        assert_eq!(
            build(&markers(), &input),
            "<pre><f>[USER]: fix the {budget} bug in a.py\n\n[ASSISTANT]: ok<f/><s 2000>\n\n</s>"
        );
    }

    #[test]
    fn builtin_prompt_keeps_the_data_in_hermes_order() {
        let input = PromptInput {
            serialized: "TURNS",
            previous_summary: Some("PREV"),
            budget: 4321,
            today: Some("2026-03-04"),
            memory_context: "MEM",
            focus: Some("QfocQ"),
        };
        let p = build(&HermesTexts::builtin(), &input);
        let at = |s: &str| p.find(s).unwrap_or_else(|| panic!("{s} missing"));
        assert!(at("PREV") < at("\nTURNS\n\n") && at("TURNS") < at("\"MEM\""));
        assert!(at("\"MEM\"") < at("4321") && at("4321") < at("2026-03-04"));
        assert_eq!(p.matches("2026-03-04").count(), 2);
        assert_eq!(p.matches("QfocQ").count(), 2);
        assert!(p.find("QfocQ").unwrap() > at("2026-03-04"));
    }

    #[test]
    fn memory_is_stripped_and_cut_to_head_and_tail() {
        // hermes: 5,543 code points, the marker after the first 4,000.
        let raw = format!(
            " {}<&>{}{}\n",
            "a".repeat(3000),
            "b".repeat(3000),
            "é".repeat(10)
        );
        let s = sanitize_memory(&raw);
        assert_eq!(py::len(&s), 5543);
        assert!(s.starts_with(&format!("{}<&>", "a".repeat(3000))));
        assert!(s.contains(&format!("bbbbb{MEMORY_CUT}bbbbb")));
        assert!(s.ends_with(&format!("{}{}", "b".repeat(1490), "é".repeat(10))));
        assert_eq!(
            memory_json("a<b>&\n\"é"),
            "\"a\\u003cb\\u003e\\u0026\\n\\\"é\""
        );
    }

    fn focus_of(messages: Value) -> Option<String> {
        auto_focus(
            messages.as_array().unwrap(),
            &HermesTexts::builtin(),
            &PLAIN,
        )
    }

    #[test]
    fn auto_focus_takes_the_newest_real_user_texts_oldest_first() {
        let m = json!([
            {"role": "user", "content": "  first\n\n ask  "}, {"role": "assistant", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "list"}, "part"]},
            {"content": "norole"}, {"role": "user", "content": "   "},
            {"role": "user", "content": "[CONTEXT SUMMARY]: old"},
            {"role": "user", "content": "last\u{3000}one"}
        ]);
        assert_eq!(
            focus_of(m).as_deref(),
            Some("Recent user focus:\n- first ask\n- list part\n- last one")
        );
        let m = json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                       {"role": "user", "content": "c"}, {"role": "user", "content": "d"}]);
        assert_eq!(
            focus_of(m).as_deref(),
            Some("Recent user focus:\n- b\n- c\n- d")
        );
        assert_eq!(
            focus_of(json!([{"role": "assistant", "content": "only"}])),
            None
        );
        let m = json!([{"role": "user", "content": format!("ab{}{}", " ".repeat(300), "c".repeat(10))}]);
        assert_eq!(
            focus_of(m).as_deref(),
            Some("Recent user focus:\n- ab cccccccccc")
        );
    }

    #[test]
    fn auto_focus_cuts_each_turn_and_the_whole() {
        let m = json!([{"role": "user", "content": "w ".repeat(200)}]);
        let want = format!("Recent user focus:\n- {}w…", "w ".repeat(129));
        assert_eq!(focus_of(m), Some(want));
        let m = json!([{"role": "user", "content": "x".repeat(300)},
                       {"role": "user", "content": "y".repeat(300)},
                       {"role": "user", "content": "z".repeat(300)}]);
        let want = format!(
            "Recent user focus:\n- {x}…\n- {y}…\n- {z}…",
            x = "x".repeat(259),
            y = "y".repeat(259),
            z = "z".repeat(152)
        );
        assert_eq!(focus_of(m), Some(want));
    }

    #[test]
    fn an_explicit_focus_wins_over_the_auto_focus() {
        let m = [json!({"role": "user", "content": "ask"})];
        let t = HermesTexts::builtin();
        assert_eq!(
            choose_focus(Some("topic"), &m, &t, &PLAIN).as_deref(),
            Some("topic")
        );
        assert_eq!(
            choose_focus(Some(""), &m, &t, &PLAIN).as_deref(),
            Some("Recent user focus:\n- ask")
        );
    }

    #[test]
    fn budget_is_a_fifth_of_the_rough_size_between_2000_and_the_cap() {
        // hermes: R = 25, 17,508 and 250,008 for these turns.
        let small = [
            json!({"role": "user", "content": "fix the {budget} bug in a.py"}),
            json!({"role": "assistant", "content": "ok"}),
        ];
        let mid = [json!({"role": "user", "content": "q".repeat(70_000)})];
        let big = [json!({"role": "tool", "content": "r".repeat(1_000_000)})];
        assert_eq!(summary_budget(&small, 10_000), 2000);
        assert_eq!(summary_budget(&mid, 10_000), 3501);
        assert_eq!(summary_budget(&mid, 3000), 3000);
        assert_eq!(summary_budget(&big, 10_000), 10_000);
    }

    #[test]
    fn memory_is_always_redacted_with_url_credentials_and_focus_when_asked() {
        // hermes forces the memory redaction even with redaction switched off.
        assert_eq!(
            sanitize_memory("see https://user:hunter2pass@example.com/x?token=abc123secret&q=1 "),
            "see https://user:***@example.com/x?token=***&q=1"
        );
        let m = [
            json!({"role": "user", "content": "use sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 please"}),
        ];
        let t = HermesTexts::builtin();
        assert_eq!(
            auto_focus(&m, &t, &Switches::default()).as_deref(),
            Some("Recent user focus:\n- use sk-pro...6789 please")
        );
        assert_eq!(
            auto_focus(&m, &t, &PLAIN).as_deref(),
            Some("Recent user focus:\n- use sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 please")
        );
    }
}
