//! `POST /v1/compact` and `POST /v1/summarize`: the whole compaction, and the
//! remoteEndpoint contract of pi-style agents.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::pipeline::compact::{self, run_compaction, CompactPlan};
use crate::pipeline::remote::{plan_remote, run_remote_endpoint, Facade, Rendered};
use crate::pipeline::{prepare_response, BodyFormat, CompactOptions, Planned, PrepareOptions};
use crate::summarize::{MoaReport, ProgressSink, Strategy, SummarizerKind, Usage};
use compactd_core::session::{InputError, Violation};

use super::examples;
use super::extract::{json_object, parse_while_arriving, read_body, session_head, SessionBody};
use super::guard::Permit;
use super::jobs::Intent;
use super::problem::{ApiError, Problem};
use super::respond::deliver;
use super::schemas::{CompactAnswer, CompactRequest};
use super::stream::json_bytes;
use super::{blocking, AppState};

/// The remoteEndpoint body pi-style agents send.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeRequest {
    /// Empty or absent: compactd's summarization system prompt.
    #[serde(default)]
    pub system_prompt: String,
    // Required: `Option` only so that a missing prompt is found without reading serde's
    // error text.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, required = true)]
    pub prompt: Option<String>,
    /// Output budget [floor(0.8 × reserveTokens)].
    pub max_tokens: Option<u64>,
    /// A configured model name.
    pub model: Option<String>,
    /// `single` (one model) or `moa` (Mixture-of-Agents) [the `[moa]` default, else
    /// `single`].
    pub strategy: Option<Strategy>,
}

/// The remoteEndpoint answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeResponse {
    pub summary: String,
    /// The summary in a few sentences, for a UI (oh-my-pi reads it): written by a second,
    /// short model call when a model wrote the summary, else derived from the summary's
    /// goal and the conversation's last request. The summary itself when the prompt asked
    /// for a short summary.
    pub short_summary: String,
    /// Summed over the calls made (the short summary's included).
    pub usage: Usage,
    pub model: String,
    pub summarizer: SummarizerKind,
    /// The models that took part in a Mixture-of-Agents summary (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moa: Option<MoaReport>,
    /// What the caller should know about how the summary was written: a model server
    /// that reported far fewer prompt tokens than were sent (it cut the prompt). Absent
    /// when there is nothing to say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A present value: `null` is refused as it would be for a plain field.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// Summarizes one prompt: the remoteEndpoint contract (`compaction.remoteEndpoint`).
#[utoipa::path(
    post,
    path = "/v1/summarize",
    operation_id = "summarize",
    tag = "compaction",
    request_body(content = SummarizeRequest, content_type = "application/json", example = examples::summarize_example),
    responses(
        (status = 200, description = "The summary (with `Accept: text/event-stream`: progress events, then the summary as the `result` event)", body = SummarizeResponse),
        (status = 202, description = "With `Prefer: respond-async`: the job (`Location: /v1/jobs/{id}`); an `Idempotency-Key` makes the request a job too", body = super::jobs::JobView),
        (status = 400, description = "Not JSON, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Missing prompt or unknown model", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "Every model failed and no fallback is allowed", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "The summarizer deadline passed", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_summarize(
    State(state): State<AppState>,
    intent: Intent,
    permit: Option<Extension<Permit>>,
    uri: axum::http::Uri,
    body: SessionBody<CompactOptions>,
) -> Result<Response, ApiError> {
    if body.format != BodyFormat::Json {
        return Err(ApiError::UnsupportedMediaType(
            "a JSONL body (send {\"systemPrompt\", \"prompt\"} as application/json)".into(),
        ));
    }
    let mut req = remote_request(&body.bytes)?;
    remote_query(uri.query(), &body.query, &mut req.0)?;
    let intent = intent.with_body(&body.bytes);
    Ok(summarize_remote(state, intent, permit.map(|p| p.0), req).await)
}

/// The query beside a `{systemPrompt, prompt}` body: `model` and `strategy` fill in what the
/// body leaves out (the body wins), so a remoteEndpoint URL can name a model. Every other
/// option is about a session, which this body is not: a 400 naming it, never ignored.
fn remote_query(
    query: Option<&str>,
    options: &CompactOptions,
    req: &mut SummarizeRequest,
) -> Result<(), ApiError> {
    let keys = query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').map_or(pair, |(k, _)| k));
    for key in keys {
        if key != "model" && key != "strategy" {
            return Err(ApiError::InvalidParameter {
                message: format!(
                    "`{key}` does not apply to a {{systemPrompt, prompt}} body: only `model` and `strategy` do"
                ),
                parameter: Some(key.to_string()),
            });
        }
    }
    if req.model.is_none() {
        req.model.clone_from(&options.model);
    }
    if req.strategy.is_none() {
        req.strategy = options.strategy;
    }
    Ok(())
}

/// Parses `{systemPrompt, prompt, maxTokens?, model?}` with a pointer on errors; the
/// answer's `prompt` is present and not blank.
fn remote_request(bytes: &[u8]) -> Result<(SummarizeRequest, String), ApiError> {
    let mut req: SummarizeRequest = json_object(bytes, "{\"systemPrompt\", \"prompt\"}")?;
    let prompt_error = |message: &str| {
        ApiError::Input(InputError::invalid(Violation {
            pointer: "/prompt".into(),
            message: message.into(),
            line: None,
        }))
    };
    let prompt = req
        .prompt
        .take()
        .ok_or_else(|| prompt_error("missing field `prompt`"))?;
    if prompt.trim().is_empty() {
        return Err(prompt_error("the prompt is empty"));
    }
    Ok((req, prompt))
}

/// Answers a remoteEndpoint body (`/v1/summarize`, or `/v1/compact` with that body).
async fn summarize_remote(
    state: AppState,
    intent: Intent,
    permit: Option<Permit>,
    (req, prompt): (SummarizeRequest, String),
) -> Response {
    let rendered = Rendered {
        system_prompt: req.system_prompt,
        prompt,
        max_tokens: req.max_tokens,
        model: req.model,
        strategy: req.strategy,
    };
    let plan = plan_remote(
        rendered,
        Facade::RemoteEndpoint,
        state.summarizer.as_ref(),
        &state.prompts,
        state.config.reserve_tokens,
    );
    let st = state.clone();
    deliver(
        &state,
        intent,
        permit,
        move |sink: Arc<dyn ProgressSink>| {
            Box::pin(async move {
                let (s, short_summary) =
                    run_remote_endpoint(&plan, st.summarizer.as_ref(), &st.prompts, &*sink).await?;
                json_bytes(&SummarizeResponse {
                    summary: s.text,
                    short_summary,
                    usage: s.usage,
                    model: s.model,
                    summarizer: s.summarizer,
                    moa: s.moa,
                    warnings: s.warnings,
                })
            })
        },
    )
    .await
}

/// Is this JSON body the remoteEndpoint shape (a prompt, no entries)?
fn is_remote_body(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        entries: Option<serde::de::IgnoredAny>,
        prompt: Option<serde::de::IgnoredAny>,
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return false;
    }
    matches!(
        serde_json::from_slice::<Probe>(bytes),
        Ok(Probe {
            entries: None,
            prompt: Some(_)
        })
    )
}

/// The whole compaction: preparation, summaries, and a ready-to-append entry.
#[utoipa::path(
    post,
    path = "/v1/compact",
    operation_id = "compact",
    tag = "compaction",
    request_body(
        description = "A session (JSON with `entries`, or a pi session file as JSONL, with options in the query string; the query string also fills in what a JSON body does not set, the body winning), or the remoteEndpoint body `{systemPrompt, prompt}`.",
        content(
            (CompactRequest = "application/json", examples(
                ("session" = (summary = "A session", value = json!(examples::session_example()))),
                ("remoteEndpoint" = (summary = "The remoteEndpoint body", value = json!(examples::summarize_example())))
            )),
            (String = "application/x-ndjson", example = examples::session_jsonl_example),
            (String = "application/jsonl")
        )
    ),
    params(PrepareOptions, CompactOptions),
    responses(
        (status = 200, description = "A CompactionResult (a remoteEndpoint answer for a `{systemPrompt, prompt}` body; a prepare answer with dryRun). With `Accept: text/event-stream`: Server-Sent Events `prepared`, `summarizing`, `retry`, `fallback`, `delta` (output tokens so far, from the model's stream), then `result` (this answer) or `error` (a problem document), with a heartbeat comment after `heartbeat_ms` of silence", body = CompactAnswer),
        (status = 202, description = "With `Prefer: respond-async`: the job (`Location: /v1/jobs/{id}`); an `Idempotency-Key` makes the request a job too", body = super::jobs::JobView),
        (status = 400, description = "Not JSON / JSONL, a bad query parameter, broken body framing (`bad-body`), or a body that does not decode as its Content-Encoding says (`bad-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Nothing to compact", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over COMPACTD_MAX_BODY_BYTES once decoded (`body-too-large`) or more entries than COMPACTD_MAX_ENTRIES (`too-many-entries`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor JSONL, or a Content-Encoding other than gzip, zstd and identity (`unsupported-content-encoding`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a valid session, or an unknown model", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "Every model failed and no fallback is allowed", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "The summarizer deadline passed", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn post_compact(
    State(state): State<AppState>,
    intent: Intent,
    permit: Option<Extension<Permit>>,
    req: Request,
) -> Result<Response, ApiError> {
    let (format, query) = session_head::<CompactOptions>(&req)?;
    let query_string = req.uri().query().map(str::to_string);
    if format == BodyFormat::Jsonl && query.dry_run == Some(true) {
        // A dry run answers as `/v1/prepare` does, from a session parsed as it arrives.
        let st = state.clone();
        let json = parse_while_arriving(req, &state, query, move |input| {
            let answer = prepare_response(input, &st.prompts, st.config.settings(), None)?;
            Ok(answer.to_json())
        })
        .await?;
        return Ok(([(CONTENT_TYPE, "application/json")], json).into_response());
    }
    let body = SessionBody::new(read_body(req, &state).await?, format, query, &state);
    let intent = intent.with_body(&body.bytes);
    let permit = permit.map(|p| p.0);
    if body.format == BodyFormat::Json && is_remote_body(&body.bytes) {
        let mut req = remote_request(&body.bytes)?;
        remote_query(query_string.as_deref(), &body.query, &mut req.0)?;
        return Ok(summarize_remote(state, intent, permit, req).await);
    }
    let st = state.clone();
    let planned = blocking(move || {
        let input = body.parse()?;
        let dry_run = input.options.dry_run == Some(true);
        let planned = compact::plan(
            &input,
            dry_run,
            &st.prompts,
            st.config.settings(),
            st.config.checking(),
        )?;
        // Written here, while the session the answer borrows is alive.
        Ok(planned.map_dry_run(|answer| answer.to_json()))
    })
    .await?;
    match planned {
        Planned::DryRun(json) => Ok(([(CONTENT_TYPE, "application/json")], json).into_response()),
        Planned::Run(plan) => {
            let st = state.clone();
            let work = move |sink: Arc<dyn ProgressSink>| -> super::stream::Work {
                Box::pin(async move { compact_work(st, *plan, &*sink).await })
            };
            Ok(deliver(&state, intent, permit, work).await)
        }
    }
}

/// The summarizer stage of `/v1/compact`.
async fn compact_work(
    state: AppState,
    plan: CompactPlan,
    sink: &dyn ProgressSink,
) -> Result<Vec<u8>, ApiError> {
    let (messages, reason) = (plan.history_messages, plan.options.reason);
    let result = run_compaction(
        plan,
        &state.prompts,
        &*state.summarizer,
        time::OffsetDateTime::now_utc(),
        sink,
    )
    .await?;
    tracing::info!(
        summarized_messages = messages,
        reason = ?reason,
        tokens_before = result.tokens_before.0,
        tokens_after = result.tokens_after,
        summarizer = ?result.summarizer,
        model = %result.model,
        calls = result.calls,
        chunks = result.chunks,
        "compacted"
    );
    json_bytes(&result)
}
