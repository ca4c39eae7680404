//! `POST /v1/responses/compact`: OpenAI's Responses compaction, answered with a readable
//! summary (`pipeline::responses` says how items become a session and come back).
//!
//! The request is compacted by `/v1/compact`'s plan and run. Errors are problem documents
//! inside the service, rewritten into OpenAI's `{"error": {...}}` shape by
//! `vendor_errors`, as on the chat-completions facade.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use axum::Extension;

use crate::pipeline::compact::{
    plan_compaction, run_compaction_or_default, CompactPlan, PlanError,
};
use crate::pipeline::responses::on_request::{keep_from_newest_user, AS_IT_CAME, KEPT_FROM_NEWEST};
use crate::pipeline::responses::{
    convert, output, summary_wrapper, CompactedResponse, Converted, SummaryWrapper,
};
use crate::pipeline::{BodyFormat, CompactOptions, SessionInput};
use crate::summarize::ProgressSink;
use compactd_core::session::InputError;

use super::examples;
use super::extract::{read_body, session_head};
use super::guard::Permit;
use super::jobs::Intent;
use super::problem::ApiError;
use super::stream::json_bytes;
use super::vendor_errors::OpenAiError;
use super::{blocking, AppState};

/// Compacts a Responses API conversation: the summary as a user message, then the kept
/// items as they were sent.
#[utoipa::path(
    post,
    path = "/v1/responses/compact",
    operation_id = "responsesCompact",
    tag = "openai",
    request_body(
        description = "OpenAI's compact request: `model` (a configured candidate; an unknown name means the default), `input` (a string, or Responses items: messages with string or part content, `function_call` / `function_call_output` and the other tool items, reasoning items, and an earlier output of this route), `instructions` (additional context for the summarizer). `previous_response_id` is refused (compactd stores no responses); every other property is a compaction option as on `/v1/compact` (`keepRecentTokens`, `targetTokens`, `settings`, `customInstructions`, `pin`, …), also accepted in the query string.",
        content((serde_json::Value = "application/json", example = examples::responses_compact_example))
    ),
    params(CompactOptions),
    responses(
        (status = 200, description = "A `response.compaction` object that OpenAI's SDKs parse: `output` holds the summary as one user message (pi's compaction wrapper around it) followed by the kept items byte for byte; a provider's encrypted `compaction` items come first, as sent. `usage` counts the summarizer's tokens. A conversation that fits the kept part is still compacted, up to its newest user message (or returned as it came, with an empty summary, when nothing comes before that message); `metadata.note` says so", body = CompactedResponse),
        (status = 400, description = "Not JSON, `previous_response_id`, or a bad option", body = OpenAiError),
        (status = 413, description = "Body or entries over the configured limits", body = OpenAiError),
        (status = 415, description = "Not `application/json`", body = OpenAiError),
        (status = 422, description = "An input item of no known shape (`param` names it)", body = OpenAiError),
        (status = 502, description = "Every model failed and no fallback is allowed", body = OpenAiError),
        (status = 504, description = "The summarizer deadline passed", body = OpenAiError),
    )
)]
pub async fn post_responses_compact(
    State(state): State<AppState>,
    intent: Intent,
    permit: Option<Extension<Permit>>,
    req: Request,
) -> Result<Response, ApiError> {
    let (format, query) = session_head::<CompactOptions>(&req)?;
    if format != BodyFormat::Json {
        return Err(ApiError::UnsupportedMediaType(
            "a JSONL body (send the Responses request as application/json)".into(),
        ));
    }
    let bytes = read_body(req, &state).await?;
    let intent = intent.with_body(&bytes);
    let wrapper = summary_wrapper(&state.prompts.wrappers);
    let st = state.clone();
    let w = wrapper.clone();
    let (conv, planned) = blocking(move || {
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            ApiError::Input(InputError::Malformed {
                message: "the body is not valid UTF-8".into(),
                line: 1,
                column: e.valid_up_to() + 1,
            })
        })?;
        let conv = convert(text, &w)?;
        let session = conv.session_json();
        let mut input = SessionInput::parse_limited(
            session.as_bytes(),
            BodyFormat::Json,
            query,
            st.config.max_entries,
        )?;
        if conv.model.is_some() {
            input.options.model.clone_from(&conv.model);
        }
        let plan = |input: &SessionInput<CompactOptions>| {
            plan_compaction(
                input,
                &st.prompts,
                st.config.settings(),
                st.config.checking(),
            )
        };
        let planned = match plan(&input) {
            Ok(p) => OnRequest::Compact(Box::new(p), None),
            // Compaction on request always compacts: up to the newest user message.
            Err(PlanError::NothingToCompact(n)) => match keep_from_newest_user(&input)? {
                Some(keep) => {
                    input.options.prepare.keep_recent_tokens = Some(keep);
                    input.options.target_tokens = None;
                    match plan(&input) {
                        Ok(p) => OnRequest::Compact(Box::new(p), Some(KEPT_FROM_NEWEST)),
                        Err(PlanError::NothingToCompact(n)) => OnRequest::AsItCame(n.tokens_before),
                        Err(e) => return Err(e.into()),
                    }
                }
                None => OnRequest::AsItCame(n.tokens_before),
            },
            Err(e) => return Err(e.into()),
        };
        Ok((conv, planned))
    })
    .await?;
    let (plan, note) = match planned {
        OnRequest::Compact(plan, note) => (*plan, note),
        OnRequest::AsItCame(tokens) => {
            let first = conv.first_entry_id().unwrap_or_default().to_string();
            let tokens = tokens.max(0.0) as u64;
            let answer = CompactedResponse {
                id: format!("cmp_{}", super::chat::random_id()),
                object: "response.compaction",
                created_at: time::OffsetDateTime::now_utc().unix_timestamp(),
                output: output(&conv, &wrapper, &first, ""),
                usage: crate::summarize::Usage::default().into(),
                model: "none".into(),
                tokens_before: tokens,
                tokens_after: tokens,
                warnings: Vec::new(),
                metadata: Some(serde_json::json!({ "note": AS_IT_CAME })),
            };
            let work = move |_sink: Arc<dyn ProgressSink>| -> super::stream::Work {
                Box::pin(async move { json_bytes(&answer) })
            };
            return Ok(super::respond::deliver(&state, intent, permit.map(|p| p.0), work).await);
        }
    };
    let st = state.clone();
    let work = move |sink: Arc<dyn ProgressSink>| -> super::stream::Work {
        Box::pin(async move { compact_items(st, conv, plan, &wrapper, note, &*sink).await })
    };
    Ok(super::respond::deliver(&state, intent, permit.map(|p| p.0), work).await)
}

/// Runs the plan (with the default model when the request's is no configured candidate)
/// and writes the answer.
async fn compact_items(
    state: AppState,
    conv: Converted,
    plan: CompactPlan,
    wrapper: &SummaryWrapper,
    note: Option<&'static str>,
    sink: &dyn ProgressSink,
) -> Result<Vec<u8>, ApiError> {
    let result = run_compaction_or_default(
        plan,
        &state.prompts,
        &*state.summarizer,
        time::OffsetDateTime::now_utc(),
        sink,
    )
    .await?;
    let now = time::OffsetDateTime::now_utc();
    json_bytes(&CompactedResponse {
        id: format!("cmp_{}", super::chat::random_id()),
        object: "response.compaction",
        created_at: now.unix_timestamp(),
        output: output(&conv, wrapper, &result.first_kept_entry_id, &result.summary),
        usage: result.usage.into(),
        model: result.model,
        tokens_before: result.tokens_before.0 as u64,
        tokens_after: result.tokens_after,
        warnings: result.warnings,
        metadata: note.map(|n| serde_json::json!({ "note": n })),
    })
}

/// What a compaction on request does.
enum OnRequest {
    /// Compact with this plan; the note when it compacted more than the settings asked.
    Compact(Box<CompactPlan>, Option<&'static str>),
    /// Nothing comes before the newest user message: the input as it came (its tokens).
    AsItCame(f64),
}
