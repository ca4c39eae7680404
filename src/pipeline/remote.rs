//! A prompt that arrives already rendered: the remoteEndpoint body (`/v1/summarize`, and
//! `/v1/compact` when it carries one) and the chat-completions facade. One builder turns
//! it into the summarizer's request, and one call answers it, folded when it does not fit
//! the model's window (`fold`).
//!
//! The two callers differ in three ways, all decided here ([`Facade`]): what an empty
//! system prompt means, whether a missing output budget is at least one token, and what
//! an unknown model name means. The remoteEndpoint answer carries a short summary too
//! ([`run_remote_endpoint`]); the facade's does not.

use crate::summarize::extractive;
use crate::summarize::progress::{Operation, PartName, Silent};
use crate::summarize::templates::{four_fifths, split_prompt, SHORT_MAX_TOKENS};
use crate::summarize::{
    Mode, Prepared, ProgressEvent, ProgressSink, Prompts, RequestKind, Strategy, Summarize,
    SummarizeError, SummarizerKind, Summary, SummaryRequest,
};

use super::checked::without_secrets;
use super::fold::{default_output_budget, summarize_fitting};

/// Who sent a rendered prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Facade {
    /// The remoteEndpoint contract of pi-style agents: an empty system prompt is
    /// compactd's, and an unknown model is an error (422).
    RemoteEndpoint,
    /// The OpenAI chat-completions facade: the system prompt is the client's, even empty
    /// (its prompt was written for a model that sees nothing else), and an unknown model
    /// name is one of the client's own configuration, so the default answers.
    ChatCompletions,
}

/// A rendered prompt as the client sent it.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    pub system_prompt: String,
    pub prompt: String,
    /// The output budget (`None`: the configured one, at most a quarter of the window).
    pub max_tokens: Option<u64>,
    /// A configured model name (`None`: the default).
    pub model: Option<String>,
    pub strategy: Option<Strategy>,
}

/// A rendered prompt decided: the summarizer's request, and who asked.
#[derive(Debug, Clone)]
pub struct RemotePlan {
    pub request: SummaryRequest,
    facade: Facade,
}

/// The summarizer's request for `rendered` (`reserve_tokens`: the configured reserve, of
/// which four fifths is the default output budget).
pub fn plan_remote(
    rendered: Rendered,
    facade: Facade,
    summarizer: &dyn Summarize,
    prompts: &Prompts,
    reserve_tokens: u64,
) -> RemotePlan {
    let default_budget = default_output_budget(
        summarizer,
        rendered.model.as_deref(),
        rendered.strategy,
        four_fifths(reserve_tokens),
    );
    RemotePlan {
        request: request(rendered, facade, &prompts.system, default_budget),
        facade,
    }
}

/// The request, with `system` for an empty system prompt of the remoteEndpoint, and
/// `default_budget` when the client sets none.
pub(super) fn request(
    rendered: Rendered,
    facade: Facade,
    system: &str,
    default_budget: u64,
) -> SummaryRequest {
    let Rendered {
        system_prompt,
        prompt,
        max_tokens,
        model,
        strategy,
    } = rendered;
    let (system_prompt, max_tokens) = match facade {
        Facade::RemoteEndpoint => (
            if system_prompt.trim().is_empty() {
                system.to_string()
            } else {
                system_prompt
            },
            max_tokens.map_or(default_budget, |n| n.max(1)),
        ),
        Facade::ChatCompletions => (system_prompt, max_tokens.unwrap_or(default_budget).max(1)),
    };
    SummaryRequest {
        kind: RequestKind::detect(&prompt),
        system_prompt,
        prompt,
        max_tokens,
        strategy,
        model,
        ledger: None,
    }
}

/// Answers a plan, reporting `prepared` and then the summarizer's events to `sink`; the
/// summary's text comes without secrets.
pub async fn run_remote(
    plan: &RemotePlan,
    summarizer: &dyn Summarize,
    prompts: &Prompts,
    sink: &dyn ProgressSink,
) -> Result<Summary, SummarizeError> {
    sink.emit(ProgressEvent::Prepared(Prepared {
        operation: Operation::Summarize,
        first_kept_entry_id: None,
        tokens_before: None,
        is_split_turn: None,
        messages: None,
        parts: vec![PartName::Summary],
        chunks: 1,
    }));
    let fitting =
        |request| summarize_fitting(summarizer, prompts, request, sink, PartName::Summary);
    let folded = match fitting(&plan.request).await {
        Err(SummarizeError::UnknownModel(_)) if plan.facade == Facade::ChatCompletions => {
            fitting(&SummaryRequest {
                model: None,
                ..plan.request.clone()
            })
            .await
        }
        other => other,
    }?;
    let summary = folded.summary;
    Ok(Summary {
        text: without_secrets(summary.text),
        ..summary
    })
}

/// Answers a remoteEndpoint plan with the summary and a short summary of a few sentences
/// (oh-my-pi's `shortSummary`): written by a model when a model wrote the summary (its
/// usage added to the summary's), else derived from the summary without a model.
pub async fn run_remote_endpoint(
    plan: &RemotePlan,
    summarizer: &dyn Summarize,
    prompts: &Prompts,
    sink: &dyn ProgressSink,
) -> Result<(Summary, String), SummarizeError> {
    let mut summary = run_remote(plan, summarizer, prompts, sink).await?;
    let short = if plan.request.kind == RequestKind::Short {
        // The client asked for a short summary already; summarizing it again would cost a
        // call and say less.
        summary.text.clone()
    } else if summary.summarizer == SummarizerKind::Llm {
        match model_short(plan, &summary.text, summarizer, prompts).await {
            Some(s) => {
                summary.usage.add(&s.usage);
                s.text
            }
            None => derived_short(plan, &summary.text, prompts).await?,
        }
    } else {
        derived_short(plan, &summary.text, prompts).await?
    };
    Ok((summary, without_secrets(short.trim().to_string())))
}

/// One bounded model call (a single model, no Mixture-of-Agents, no fallback) with the
/// short-summary prompt over the summary; `None` when no model answered it usefully.
async fn model_short(
    plan: &RemotePlan,
    summary: &str,
    summarizer: &dyn Summarize,
    prompts: &Prompts,
) -> Option<Summary> {
    let req = prompts
        .short_request(summary, plan.request.max_tokens)
        .for_model(plan.request.model.as_deref(), Some(Strategy::Single));
    // Not announced as a part: the answer's shape does not depend on it, and a failure
    // here only means the derived form.
    let s = summarizer
        .summarize(&req, Mode::ModelOnly, &Silent)
        .await
        .ok()?;
    (s.summarizer == SummarizerKind::Llm && !s.text.trim().is_empty()).then_some(s)
}

/// The short summary without a model: the extractive summarizer's one paragraph, led by
/// the summary's goal and the conversation's last request. On the blocking pool, as the
/// extractive summarizer always runs: it reads the whole conversation.
async fn derived_short(
    plan: &RemotePlan,
    summary: &str,
    prompts: &Prompts,
) -> Result<String, SummarizeError> {
    let prompt = plan.request.prompt.clone();
    let summary = summary.to_string();
    let instructions = prompts.short_summary.clone();
    let max_tokens = plan.request.max_tokens.min(SHORT_MAX_TOKENS);
    crate::cancel::offload(move || {
        let parts = split_prompt(&prompt);
        let conversation = if parts.has_conversation {
            parts.conversation
        } else {
            ""
        };
        let req = SummaryRequest {
            kind: RequestKind::Short,
            system_prompt: String::new(),
            // The summary as the previous one: its goal leads.
            prompt: format!(
                "<conversation>\n{conversation}\n</conversation>\n\n<previous-summary>\n{summary}\n</previous-summary>\n\n{instructions}"
            ),
            max_tokens,
            strategy: None,
            model: None,
            ledger: None,
        };
        extractive::summarize(&req).text
    })
    .await
    .map_err(|_| SummarizeError::Timeout)
}
