//! A fake model summarizer that paraphrases and drops things, as models do.
//!
//! It reads the request's previous summary and conversation, keeps the prose (user and
//! assistant lines, previous-summary lines; tool calls and tool output are only
//! mentioned by count), and for each sentence, drawn from a generator seeded with the
//! run's seed and the request's text (so a request always gets the same answer):
//!
//! * loses it entirely with probability [`DROP`];
//! * otherwise rewrites its numbers' formatting with probability [`REFORMAT`]
//!   (`4,817` → `4817`, `4817` → `4,817`, `$4,817` → `4817 dollars`);
//! * and rephrases some words with probability [`REPHRASE`] ("Never" → "Do not", ...).
//!
//! The answer stays within the request's output budget (`max_tokens`, four characters
//! a token): over it, sentences are dropped at random until it fits, as a model
//! compresses everything rather than cutting the end off. It never answers with the
//! request verbatim and it knows nothing of the ledger.

use std::hash::{Hash, Hasher};

use compactd::summarize::{answer_plainly, Answering, Mode, ProgressSink, Strategy};
use compactd::summarize::{Summarize, SummarizerKind, Summary, SummaryRequest, Usage};

/// Probability that a sentence is lost entirely.
pub const DROP: f64 = 0.3;
/// Probability that a kept sentence's numbers are reformatted.
pub const REFORMAT: f64 = 0.25;
/// Probability that a kept sentence is rephrased.
pub const REPHRASE: f64 = 0.3;

pub struct FakeModel {
    pub seed: u64,
}

/// The text between `<tag>` and `</tag>`, if any.
fn block<'a>(prompt: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = prompt.find(&open)? + open.len();
    let end = start + prompt[start..].find(&close)?;
    Some(&prompt[start..end])
}

/// Splits prose into sentences (". " / "! " / "? " ends one).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            let s = cur.trim();
            if !s.is_empty() {
                out.push(s.to_string());
            }
            cur.clear();
        }
    }
    let s = cur.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
    out
}

/// Rewrites the formatting of every number of four digits or more in `s`.
fn reformat_numbers(s: &str) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let dollar = b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        let start = if dollar { i + 1 } else { i };
        if b[start].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let mut j = start;
            while j < b.len()
                && (b[j].is_ascii_digit()
                    || (b[j] == b',' && b.get(j + 1).is_some_and(u8::is_ascii_digit)))
            {
                j += 1;
            }
            let raw = &s[start..j];
            let digits: String = raw.chars().filter(char::is_ascii_digit).collect();
            let word_end = j >= b.len() || !b[j].is_ascii_alphanumeric();
            if digits.len() >= 4 && word_end {
                let new = if raw.contains(',') {
                    digits.clone()
                } else {
                    let (hi, lo) = digits.split_at(digits.len() - 3);
                    format!("{hi},{lo}")
                };
                if dollar {
                    out.push_str(&format!("{digits} dollars"));
                } else {
                    out.push_str(&new);
                }
                i = j;
                continue;
            }
            out.push_str(&s[i..j.max(i + 1)]);
            i = j.max(i + 1);
            continue;
        }
        let ch = s[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn rephrase(s: &str) -> String {
    const SWAPS: [(&str, &str); 8] = [
        ("Never ", "Do not ever "),
        ("never ", "under no circumstances "),
        ("Always ", "Make sure to "),
        ("I prefer ", "The user likes "),
        ("Let's go with ", "The team picked "),
        ("must ", "should "),
        ("Please ", ""),
        ("instead", "rather"),
    ];
    let mut out = s.to_string();
    for (a, b) in SWAPS {
        out = out.replacen(a, b, 1);
    }
    out
}

impl FakeModel {
    pub fn answer(&self, req: &SummaryRequest) -> String {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        req.prompt.hash(&mut h);
        let mut rng = fastrand::Rng::with_seed(self.seed ^ h.finish());

        let mut prose: Vec<String> = Vec::new();
        if let Some(prev) = block(&req.prompt, "previous-summary") {
            for line in prev.lines() {
                let line = line.trim().trim_start_matches(['-', '*', '#', ' ']);
                prose.extend(sentences(line));
            }
        }
        let conversation = block(&req.prompt, "conversation").unwrap_or(&req.prompt);
        let mut tools = 0usize;
        for part in conversation.split("\n\n[") {
            let part = part.trim().trim_start_matches('[');
            if let Some(text) = part
                .strip_prefix("User]: ")
                .or_else(|| part.strip_prefix("Assistant]: "))
            {
                prose.extend(sentences(text));
            } else if part.starts_with("Tool result]") || part.starts_with("Assistant tool calls]")
            {
                tools += 1;
            }
        }

        let mut kept: Vec<String> = Vec::new();
        for s in prose {
            if rng.f64() < DROP {
                continue;
            }
            let mut s = s;
            if rng.f64() < REFORMAT {
                s = reformat_numbers(&s);
            }
            if rng.f64() < REPHRASE {
                s = rephrase(&s);
            }
            if !kept.contains(&s) {
                kept.push(s);
            }
        }
        let render = |kept: &[String]| {
            let mut out = String::from("## Summary\n");
            for s in kept {
                out.push_str("- ");
                out.push_str(s);
                out.push('\n');
            }
            out.push_str(&format!("\n(The agent made {tools} tool calls.)\n"));
            out
        };
        let budget = (req.max_tokens as usize).saturating_mul(4);
        let mut out = render(&kept);
        while out.chars().count() > budget && !kept.is_empty() {
            kept.remove(rng.usize(..kept.len()));
            out = render(&kept);
        }
        out
    }
}

impl Summarize for FakeModel {
    fn summarize<'a>(
        &'a self,
        req: &'a SummaryRequest,
        mode: Mode,
        sink: &'a dyn ProgressSink,
    ) -> Answering<'a> {
        let text = self.answer(req);
        let output = text.len().div_ceil(4) as u64;
        answer_plainly(
            req,
            mode,
            sink,
            std::future::ready(Ok(Summary {
                text,
                usage: Usage {
                    output,
                    total_tokens: output,
                    ..Usage::default()
                },
                model: "fake/paraphraser".into(),
                summarizer: SummarizerKind::Llm,
                retries: 0,
                cached: false,
                moa: None,
                warnings: Vec::new(),
            })),
        )
    }

    fn context_window(&self, _model: Option<&str>, _strategy: Option<Strategy>) -> Option<u64> {
        None
    }

    fn describe(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_reformatted() {
        assert_eq!(reformat_numbers("cap $4,817 now"), "cap 4817 dollars now");
        assert_eq!(reformat_numbers("port 9431."), "port 9,431.");
        assert_eq!(reformat_numbers("v3.14.271 and 12"), "v3.14.271 and 12");
    }
}
