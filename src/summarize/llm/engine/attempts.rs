//! The candidates of one call, in order: each attempt, its retries after a backoff (or
//! the upstream's `Retry-After`), and the next candidate when one is exhausted.

use super::*;
use crate::summarize::progress::WaitSource;
use crate::telemetry::metric;

impl Engine {
    /// Tries the candidates in order; `None` when every one failed.
    pub(in crate::summarize::llm) async fn run(
        &self,
        candidates: &[&Candidate],
        req: &SummaryRequest,
        deadline: Instant,
        progress: &mut Progress<'_>,
    ) -> Option<Summary> {
        for (i, c) in candidates.iter().enumerate() {
            match self.try_candidate(c, req, deadline, progress).await {
                Ok(answer) => {
                    let model = format!("{}/{}", c.name, c.model);
                    let mut warnings = Vec::new();
                    if let Some((reported, lower)) = truncation::suspected(req, &answer.usage) {
                        metrics::counter!(metric::TRUNCATED_PROMPTS.name, "model" => c.name.clone())
                            .increment(1);
                        tracing::warn!(
                            candidate = %c.name, model = %c.model, url = %c.shown_url, reported,
                            lower_bound = lower,
                            "the model reported far fewer prompt tokens than were sent: the server probably cut the prompt"
                        );
                        warnings.push(truncation::warning(&model, reported, lower));
                    }
                    return Some(Summary {
                        text: answer.text,
                        usage: answer.usage,
                        model,
                        summarizer: SummarizerKind::Llm,
                        retries: progress.retries,
                        cached: false,
                        moa: None,
                        warnings,
                    });
                }
                Err((failure, attempts)) => {
                    progress.out_of_reach = failure.is_out_of_reach();
                    if let Failure::ContextOverflow { limit, .. } = &failure {
                        progress.overflow = true;
                        let window = c.shrink_window(overflow::sent_tokens(req), *limit);
                        metrics::counter!(metric::CONTEXT_OVERFLOWS.name, "model" => c.name.clone())
                            .increment(1);
                        tracing::warn!(
                            candidate = %c.name, model = %c.model, window,
                            "the request exceeds the model's context window; assuming a smaller window"
                        );
                    }
                    let line = format!(
                        "{}/{}: {failure} ({attempts} attempt{})",
                        c.name,
                        c.model,
                        if attempts == 1 { "" } else { "s" }
                    );
                    let line = self.secrets.scrub(&line);
                    if let Some(next) = candidates.get(i + 1) {
                        progress.sink.emit(ProgressEvent::Fallback {
                            part: Part::default(),
                            from: Some(format!("{}/{}", c.name, c.model)),
                            to: format!("{}/{}", next.name, next.model),
                            reason: line.clone(),
                        });
                    }
                    progress.failures.push(line);
                }
            }
        }
        None
    }

    /// Attempts one candidate, retrying transient failures while retries and time remain.
    /// On failure, the last failure and the number of attempts.
    async fn try_candidate(
        &self,
        c: &Candidate,
        req: &SummaryRequest,
        deadline: Instant,
        progress: &mut Progress<'_>,
    ) -> Result<Answer, (Failure, u32)> {
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            progress.sink.emit(ProgressEvent::Summarizing {
                part: Part::default(),
                model: format!("{}/{}", c.name, c.model),
                attempt,
                cached: false,
            });
            let sink = progress.sink;
            let model = format!("{}/{}", c.name, c.model);
            let mut report = |w: StreamedTokens| {
                sink.emit(ProgressEvent::Delta {
                    part: Part::default(),
                    model: model.clone(),
                    attempt,
                    output_tokens: w.output,
                    reasoning_tokens: w.reasoning,
                    estimated: w.estimated,
                })
            };
            let sent = attempt::send(
                &self.client,
                c,
                req,
                self.upstream_timeout,
                c.stall(self.stall),
                &mut report,
                &self.secrets,
            );
            let failure = match sent.await {
                Ok(answer) => {
                    if attempt > 1 {
                        tracing::info!(candidate = %c.name, model = %c.model, attempt, "upstream attempt succeeded after retries");
                    }
                    return Ok(answer);
                }
                Err(f) => f,
            };
            if let Some(learned) = c.learn(&failure) {
                // Not a retry: the request changes, and only once per parameter.
                tracing::warn!(candidate = %c.name, model = %c.model, attempt, "{learned}");
                continue;
            }
            if let Failure::Stalled(_) = failure {
                metrics::counter!(metric::UPSTREAM_STALLS.name, "model" => c.name.clone())
                    .increment(1);
            }
            let error = self.secrets.scrub(&failure.to_string());
            let status = failure.status();
            let transient = failure.is_transient();
            if !transient || attempt > self.retries {
                tracing::warn!(
                    candidate = %c.name, model = %c.model, url = %c.shown_url, attempt, status,
                    transient, error = %error,
                    "upstream attempt failed; giving up on this candidate"
                );
                return Err((failure, attempt));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            let (wait, source) = match failure.retry_after() {
                Some(d) => (d, WaitSource::RetryAfter),
                None => (self.backoff.delay(attempt - 1), WaitSource::Backoff),
            };
            if wait >= remaining {
                tracing::warn!(
                    candidate = %c.name, model = %c.model, url = %c.shown_url, attempt, status,
                    transient, error = %error, wait_ms = wait.as_millis() as u64, source = source.as_str(),
                    "upstream attempt failed; the wait would pass the deadline, giving up on this candidate"
                );
                return Err((failure, attempt));
            }
            tracing::warn!(
                candidate = %c.name, model = %c.model, url = %c.shown_url, attempt, status,
                transient, error = %error, backoff_ms = wait.as_millis() as u64, source = source.as_str(),
                "upstream attempt failed; retrying"
            );
            progress.retries += 1;
            progress.sink.emit(ProgressEvent::Retry {
                part: Part::default(),
                model: format!("{}/{}", c.name, c.model),
                attempt,
                reason: error,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                source,
            });
            tokio::time::sleep(wait).await;
        }
    }
}
