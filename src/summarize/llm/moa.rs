//! Mixture-of-Agents: the `[moa]` proposers draft the same request concurrently, the
//! aggregator reads every draft that came back and writes the one summary.
//!
//! Design decisions:
//! * **In the engine, below every route.** `/v1/compact`, `/v1/summarize`,
//!   `/v1/branch-summary`, the hermes routes and any caller of [`Summarize`] reach MoA
//!   through the same [`Engine`] call; the strategy travels in
//!   [`SummaryRequest::strategy`], so the trait and its callers keep their signatures.
//! * **One deadline.** Proposers and aggregator share the call's deadline; each proposer
//!   and the aggregator gets the engine's retries (`Engine::run` with one candidate).
//!   The proposer futures are polled together (`join_all`, nothing spawned), so
//!   dropping the call still drops every in-flight request.
//! * **Degrading.** Failed proposers are left out and the rest aggregated; when the
//!   aggregator fails (or the deadline passes before it answers) the best draft answers
//!   ([`best_draft`]); when no proposer drafts, the engine's usual fallback applies.
//! * **Usage** is the sum over the drafts used and the aggregator (a failed call's tokens
//!   are not reported by its upstream). `Summary.model` reads `moa(a,b→c)` and
//!   `Summary.moa` lists the models by name.
//! * **Cache.** Only an aggregated answer is cached (a best draft is a degraded answer,
//!   like a fallback), under a key that holds the strategy, the proposers and the
//!   aggregator.
//! * **The aggregator's prompt** is our own: the request's instructions (the text after
//!   its `<conversation>` block; a prompt without one, like hermes's, is given whole),
//!   then the drafts, then the ask for one summary in the same format keeping the union
//!   of what matters. The system prompt and the output budget are the request's. A task
//!   that would overflow the aggregator's window with the drafts keeps its beginning and
//!   end and leaves out the middle (the conversation, which the drafts summarize).
//!
//! [`Summarize`]: crate::summarize::Summarize
//! [`Engine`]: super::Engine

use futures_util::future::join_all;
use tokio::time::Instant;

use super::cache::SummaryCache;
use super::candidates::Candidate;
use super::engine::{Engine, Exhausted, Moa, Progress};
use crate::config::Strategy;
use crate::summarize::templates::split_prompt;
use crate::summarize::{MoaReport, ProgressSink, SummarizerKind, Summary, SummaryRequest, Usage};
use crate::telemetry::metric;

const INTRO: &str = "Several models were each given the same summarization task and each \
wrote a draft on its own. The task's instructions are in <task>; the drafts follow in \
<draft> blocks.";

const ASK: &str = "Write the one summary the task asks for, in exactly the format, sections \
and order its instructions require. Keep the union of what matters across the drafts: every \
goal, constraint, decision, file path, identifier, command, error, open question and next \
step that any draft records, each stated once. Where drafts disagree, keep the more specific \
statement. Answer with the summary only; do not mention the drafts or the models.";

/// The aggregator's request: the task's instructions, then every draft. `window` is the
/// aggregator's context window: a task that would overflow it with the drafts (a prompt
/// without a `<conversation>` block, such as hermes's, carries its conversation) keeps its
/// beginning and end, where instructions are written, and leaves out the middle, which the
/// drafts summarize.
pub(super) fn aggregate_request(
    req: &SummaryRequest,
    drafts: &[&str],
    window: u64,
) -> SummaryRequest {
    let parts = split_prompt(&req.prompt);
    let task: std::borrow::Cow<'_, str> = match (
        parts.has_conversation && !parts.instructions.is_empty(),
        parts.standing,
    ) {
        // The instructions speak of the numbered statements: they come along.
        (true, Some(list)) => format!(
            "<standing-statements>\n{list}\n</standing-statements>\n\n{}",
            parts.instructions
        )
        .into(),
        (true, None) => parts.instructions.into(),
        (false, _) => req.prompt.as_str().into(),
    };
    let units = |s: &str| s.encode_utf16().count() as u64;
    let fixed = units(INTRO)
        + units(ASK)
        + units(&req.system_prompt)
        + drafts.iter().map(|d| units(d) + 32).sum::<u64>()
        + 256;
    let room = window
        .saturating_sub(req.max_tokens)
        .saturating_mul(4)
        .saturating_sub(fixed);
    let task = middle_left_out(&task, room as usize);
    let mut prompt = format!("{INTRO}\n\n<task>\n{task}\n</task>\n\n");
    for (i, d) in drafts.iter().enumerate() {
        prompt.push_str(&format!(
            "<draft n=\"{}\">\n{}\n</draft>\n\n",
            i + 1,
            d.trim()
        ));
    }
    prompt.push_str(ASK);
    SummaryRequest {
        kind: req.kind,
        system_prompt: req.system_prompt.clone(),
        prompt,
        max_tokens: req.max_tokens,
        strategy: Some(Strategy::Moa),
        model: req.model.clone(),
        ledger: None,
    }
}

/// `text` whole when it has at most `room` UTF-16 units; else its first and last
/// `room / 2` units (whole characters) around a note saying how much was left out (at
/// least 2,000 units are kept, so the instructions survive even a window the drafts fill).
fn middle_left_out(text: &str, room: usize) -> std::borrow::Cow<'_, str> {
    let total = text.encode_utf16().count();
    let keep = room.max(2_000) / 2;
    if total <= room || total <= 2 * keep {
        return text.into();
    }
    let mut units = 0;
    let head_end = text
        .char_indices()
        .find(|(_, c)| {
            units += c.len_utf16();
            units > keep
        })
        .map_or(text.len(), |(i, _)| i);
    let mut units = 0;
    let tail_start = text
        .char_indices()
        .rev()
        .find(|(_, c)| {
            units += c.len_utf16();
            units > keep
        })
        .map_or(0, |(i, c)| i + c.len_utf8());
    let left_out = text[head_end..tail_start].chars().count();
    format!(
        "{}\n\n[… {left_out} characters of the conversation left out here: the drafts summarize it …]\n\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
    .into()
}

/// The draft that answers when the aggregator fails: the longest draft (in characters)
/// within the output budget (`4 × max_tokens` characters, compactd's four characters a
/// token; `max_tokens` 0 is no budget); when every draft is over it, the shortest. Ties
/// go to the earlier proposer in `[moa] proposers`.
pub fn best_draft(drafts: &[&str], max_tokens: u64) -> usize {
    let len = |d: &str| d.chars().count() as u64;
    let within = |d: &str| max_tokens == 0 || len(d) <= max_tokens.saturating_mul(4);
    let mut best: Option<usize> = None;
    for (i, d) in drafts.iter().enumerate() {
        if within(d) && best.is_none_or(|b| len(d) > len(drafts[b])) {
            best = Some(i);
        }
    }
    best.unwrap_or_else(|| {
        let mut shortest = 0;
        for (i, d) in drafts.iter().enumerate() {
            if len(d) < len(drafts[shortest]) {
                shortest = i;
            }
        }
        shortest
    })
}

/// `moa(a,b→c)`; `moa(a,b)` when no aggregator answered.
fn label(proposers: &[String], aggregator: Option<&str>) -> String {
    match aggregator {
        Some(a) => format!("moa({}→{a})", proposers.join(",")),
        None => format!("moa({})", proposers.join(",")),
    }
}

impl Engine {
    /// One Mixture-of-Agents call: from the cache, or drafts then aggregation (see the
    /// module documentation). `Err` only when no proposer drafted.
    pub(super) async fn answer_moa(
        &self,
        moa: &Moa,
        req: &SummaryRequest,
        sink: &dyn ProgressSink,
    ) -> Result<Summary, Exhausted> {
        let proposers: Vec<&Candidate> = moa.proposers.iter().map(|&i| self.candidate(i)).collect();
        let aggregator = self.candidate(moa.aggregator);
        let mut keyed = proposers.clone();
        keyed.push(aggregator);
        let key = SummaryCache::key(Strategy::Moa, &keyed, req);
        self.shared(key, sink, || {
            self.moa_uncached(&proposers, aggregator, req, sink, key)
        })
        .await
    }

    /// Drafts then aggregation (what [`Engine::answer_moa`] does when nothing is cached or
    /// in flight).
    async fn moa_uncached(
        &self,
        proposers: &[&Candidate],
        aggregator: &Candidate,
        req: &SummaryRequest,
        sink: &dyn ProgressSink,
        key: super::cache::Key,
    ) -> Result<Summary, Exhausted> {
        let deadline = Instant::now() + self.deadline();
        let calls = proposers.iter().map(|&c| async move {
            let mut progress = Progress::new(sink);
            let one = [c];
            let drafted =
                tokio::time::timeout_at(deadline, self.run(&one, req, deadline, &mut progress))
                    .await;
            (c, drafted, progress)
        });
        let mut usage = Usage::default();
        let mut retries = 0;
        let mut failures = Vec::new();
        let mut failed = Vec::new();
        let mut drafts: Vec<(&Candidate, Summary)> = Vec::new();
        let mut deadline_passed = false;
        let mut out_of_reach = true;
        let mut overflow = false;
        for (c, drafted, progress) in join_all(calls).await {
            retries += progress.retries;
            overflow |= progress.overflow;
            match drafted {
                Ok(Some(s)) => {
                    usage.add(&s.usage);
                    drafts.push((c, s));
                    continue;
                }
                Ok(None) => out_of_reach &= progress.out_of_reach,
                Err(_) => {
                    deadline_passed = true;
                    failures.push(format!(
                        "{}/{}: no draft before the deadline",
                        c.name, c.model
                    ));
                }
            }
            failures.extend(progress.failures);
            failed.push(c.name.clone());
            metrics::counter!(metric::MOA_PROPOSER_FAILURES.name).increment(1);
            tracing::warn!(proposer = %c.name, model = %c.model, "MoA proposer gave no draft; left out");
        }
        if drafts.is_empty() {
            metrics::counter!(metric::MOA_SUMMARIES.name, "outcome" => "failed").increment(1);
            return Err(Exhausted {
                failures: failures.join("; "),
                retries,
                deadline_passed,
                out_of_reach,
                overflow,
            });
        }
        let used: Vec<String> = drafts.iter().map(|(c, _)| c.name.clone()).collect();
        // A draft written from a cut prompt taints the merge too.
        let mut warnings: Vec<String> = drafts
            .iter()
            .flat_map(|(_, s)| s.warnings.iter().cloned())
            .collect();
        let texts: Vec<&str> = drafts.iter().map(|(_, s)| s.text.as_str()).collect();
        let agg_req = aggregate_request(req, &texts, aggregator.window());
        let mut progress = Progress::new(sink);
        let one = [aggregator];
        let aggregated =
            tokio::time::timeout_at(deadline, self.run(&one, &agg_req, deadline, &mut progress))
                .await;
        retries += progress.retries;
        if let Ok(Some(s)) = aggregated {
            usage.add(&s.usage);
            warnings.extend(s.warnings);
            metrics::counter!(metric::MOA_SUMMARIES.name, "outcome" => "aggregated").increment(1);
            tracing::info!(
                proposers = %used.join(","), failed = %failed.join(","),
                aggregator = %aggregator.name, "MoA summary aggregated"
            );
            let summary = Summary {
                text: s.text,
                usage,
                model: label(&used, Some(&aggregator.name)),
                summarizer: SummarizerKind::Llm,
                retries,
                cached: false,
                moa: Some(MoaReport {
                    proposers: used,
                    failed,
                    aggregator: Some(aggregator.name.clone()),
                    draft: None,
                }),
                warnings,
            };
            self.cache_insert(key, summary.clone()).await;
            return Ok(summary);
        }
        let best = best_draft(&texts, req.max_tokens);
        let (chosen, draft) = drafts.swap_remove(best);
        metrics::counter!(metric::MOA_SUMMARIES.name, "outcome" => "best_draft").increment(1);
        tracing::warn!(
            aggregator = %aggregator.name,
            failures = %progress.failures.join("; "),
            draft = %chosen.name,
            "MoA aggregator failed; answering with the best draft"
        );
        Ok(Summary {
            text: draft.text,
            usage,
            model: label(&used, None),
            summarizer: SummarizerKind::Llm,
            retries,
            cached: false,
            moa: Some(MoaReport {
                proposers: used,
                failed,
                aggregator: None,
                draft: Some(chosen.name.clone()),
            }),
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::RequestKind;

    #[test]
    fn the_best_draft_is_the_longest_within_budget() {
        // Budget 2 tokens = 8 characters.
        assert_eq!(best_draft(&["abc", "abcdefg", "abcdefghijk"], 2), 1);
        // Ties go to the earlier proposer.
        assert_eq!(best_draft(&["abcd", "wxyz"], 2), 0);
        // All over budget: the shortest.
        assert_eq!(
            best_draft(&["x".repeat(20).as_str(), "x".repeat(12).as_str()], 2),
            1
        );
        // No budget: the longest.
        assert_eq!(best_draft(&["ab", "abcdefghijk", "a"], 0), 1);
    }

    #[test]
    fn the_aggregator_reads_the_instructions_and_every_draft() {
        let req = SummaryRequest {
            kind: RequestKind::History,
            system_prompt: "sys".into(),
            prompt: "<conversation>\nSECRET-CONVERSATION\n</conversation>\n\n## Goal format".into(),
            max_tokens: 100,
            strategy: None,
            model: None,
            ledger: None,
        };
        let agg = aggregate_request(&req, &["draft one", "draft two"], 64_000);
        assert!(agg.prompt.contains("<task>\n## Goal format\n</task>"));
        assert!(!agg.prompt.contains("SECRET-CONVERSATION"));
        assert!(agg.prompt.contains("<draft n=\"1\">\ndraft one\n</draft>"));
        assert!(agg.prompt.contains("<draft n=\"2\">\ndraft two\n</draft>"));
        assert_eq!((agg.system_prompt.as_str(), agg.max_tokens), ("sys", 100));
        let hermes = SummaryRequest {
            prompt: "TURNS: a b c".into(),
            ..req
        };
        assert!(aggregate_request(&hermes, &["d"], 64_000)
            .prompt
            .contains("<task>\nTURNS: a b c\n</task>"));
    }

    #[test]
    fn the_aggregator_sees_the_numbered_statements_the_task_speaks_of() {
        let req = SummaryRequest {
            kind: RequestKind::History,
            system_prompt: "sys".into(),
            prompt: "<conversation>\nC\n</conversation>\n\n<standing-statements>\nS1. Never push to main.\n</standing-statements>\n\n## Goal format\nReplaced: S2, S5".into(),
            max_tokens: 100,
            strategy: None,
            model: None,
            ledger: None,
        };
        let agg = aggregate_request(&req, &["draft\nReplaced: S1"], 64_000);
        assert!(agg.prompt.contains(
            "<task>\n<standing-statements>\nS1. Never push to main.\n</standing-statements>\n\n## Goal format\nReplaced: S2, S5\n</task>"
        ));
    }

    #[test]
    fn a_task_too_large_for_the_aggregator_keeps_its_beginning_and_end() {
        let turns = "[USER]: é ".repeat(10_000);
        let req = SummaryRequest {
            kind: crate::summarize::RequestKind::History,
            system_prompt: String::new(),
            prompt: format!("HEAD-INSTRUCTIONS\n{turns}\nTAIL-INSTRUCTIONS"),
            max_tokens: 1_000,
            strategy: None,
            model: None,
            ledger: None,
        };
        let drafts = ["d".repeat(8_000), "e".repeat(8_000)];
        let drafts: Vec<&str> = drafts.iter().map(String::as_str).collect();
        let agg = aggregate_request(&req, &drafts, 10_000);
        let tokens = agg.prompt.encode_utf16().count().div_ceil(4) as u64;
        assert!(tokens + agg.max_tokens <= 10_000, "{tokens}");
        assert!(agg.prompt.contains("<task>\nHEAD-INSTRUCTIONS\n[USER]"));
        assert!(agg.prompt.contains("TAIL-INSTRUCTIONS\n</task>"));
        assert!(agg
            .prompt
            .contains("characters of the conversation left out here"));
        assert!(agg.prompt.contains(drafts[0]) && agg.prompt.contains(drafts[1]));
        // A task that fits is given whole.
        let whole = aggregate_request(&req, &drafts, 100_000);
        assert!(whole.prompt.contains(&req.prompt));
    }
}
