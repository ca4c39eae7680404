use axum::Json;
use serde_json::{json, Value};
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, ObjectBuilder, Ref, RefOr, Response, ResponseBuilder, Type,
};
use utoipa::{Modify, OpenApi};

use crate::pipeline::branch::{BranchDryRun, BranchSummaryResult};
use crate::pipeline::chat::{ChatMessage, ChatRequest, StreamOptions};
use crate::pipeline::compact::{CompactionResult, EntryDetails};
use crate::pipeline::core_schemas::{FileListsSchema, RetentionSchema};
use crate::pipeline::hermes_recall::{HermesRecallAnswer, HermesRecallMatch, HermesRecallRequest};
use crate::pipeline::include::IncludePart;
use crate::pipeline::messages::{CompactionConfig, InputMessage, MessageRole, MessagesRequest};
use crate::pipeline::numbers::JsNumber;
use crate::pipeline::options::{CompactReason, RecallScope, SettingsRequest};
use crate::pipeline::outline::Outline;
use crate::pipeline::prepare::{
    Compactable, Conversation, NotCompactableResponse, PrepareResponse, SettingsJson,
};
use crate::pipeline::prune::PruneResponse;
use crate::pipeline::recall::{RecallAnswer, RecallMatch};
use crate::pipeline::responses::{
    CompactedResponse, InputTokensDetails, OutputTokensDetails, ResponseUsage,
};
use crate::summarize::{RequestKind, SummaryRequest};

use super::chat::{
    ChatAnswerMessage, ChatChoice, ChatCompletion, ChatUsage, ModelEntry, ModelList,
};
use super::compact::{SummarizeRequest, SummarizeResponse};
use super::messages::{CompactionBlock, CompactionMessage, MessagesUsage};
use super::problem::{Problem, ProblemItem};
use super::schemas::{
    BranchAnswer, BranchSummaryRequest, CompactAnswer, CompactRequest, CompactSessionRequest,
    HermesAnswer, HermesBoundaries, HermesRequestSchema, HermesSettingsSchema, HermesStateSchema,
    PrepareRequest, PruneRequest, RecallRequest, SessionEntry,
};
use super::vendor_errors::{AnthropicError, AnthropicErrorBody};
use super::vendor_errors::{Dialect, OpenAiError, OpenAiErrorBody};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "compactd",
        description = "Context compaction for LLM coding agents: pi's cut point, split turns, serialization and file tracking, server-side.",
        license(name = "MIT")
    ),
    paths(
        super::prepare::post_prepare,
        super::compact::post_compact,
        super::compact::post_summarize,
        super::branch::post_branch_summary,
        super::prune::post_prune,
        super::recall::post_recall,
        super::hermes::post_hermes_compress,
        super::hermes::post_hermes_prepare,
        super::hermes::post_hermes_recall,
        super::chat::post_chat_completions,
        super::chat::get_models,
        super::responses::post_responses_compact,
        super::messages::post_messages,
        super::jobs::get_job,
        super::jobs::get_job_events,
        super::jobs::delete_job,
        super::health::healthz,
        super::health::readyz,
        super::health::config,
        super::health::metrics,
        super::inspect::post_outline,
        super::inspect::post_session
    ),
    components(schemas(
        PrepareRequest,
        CompactSessionRequest,
        BranchSummaryRequest,
        PruneRequest,
        RecallRequest,
        RecallAnswer,
        RecallMatch,
        RecallScope,
        SessionEntry,
        SettingsRequest,
        CompactReason,
        IncludePart,
        PrepareResponse,
        Outline,
        PruneResponse,
        Compactable,
        NotCompactableResponse,
        Conversation,
        SettingsJson,
        FileListsSchema,
        RetentionSchema,
        EntryDetails,
        SummaryRequest,
        RequestKind,
        JsNumber,
        Problem,
        ProblemItem,
        CompactRequest,
        CompactAnswer,
        CompactionResult,
        SummarizeRequest,
        SummarizeResponse,
        BranchAnswer,
        BranchSummaryResult,
        BranchDryRun,
        HermesRequestSchema,
        HermesSettingsSchema,
        HermesStateSchema,
        HermesBoundaries,
        HermesAnswer,
        HermesRecallRequest,
        HermesRecallAnswer,
        HermesRecallMatch,
        ChatRequest,
        ChatMessage,
        StreamOptions,
        ChatCompletion,
        ChatChoice,
        ChatAnswerMessage,
        ChatUsage,
        ModelList,
        CompactedResponse,
        super::inspect::ProviderShape,
        ResponseUsage,
        InputTokensDetails,
        OutputTokensDetails,
        ModelEntry,
        OpenAiError,
        OpenAiErrorBody,
        MessagesRequest,
        InputMessage,
        MessageRole,
        CompactionConfig,
        CompactionMessage,
        CompactionBlock,
        MessagesUsage,
        AnthropicError,
        AnthropicErrorBody,
        super::jobs::JobView,
        super::jobs::Status
    )),
    modifiers(&Guard)
)]
pub struct ApiDoc;

/// The spec as pretty JSON (what `compactd openapi` prints and `openapi/` holds).
pub fn spec_json() -> String {
    serde_json::to_string_pretty(&spec()).expect("the OpenAPI document serializes")
}

pub async fn openapi_json() -> Json<Value> {
    Json(spec())
}

/// The generated document, with unsigned 64-bit integers stated as such.
fn spec() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document serializes");
    mark_u64(&mut doc);
    require_retry_after(&mut doc);
    doc
}

/// What `guard.rs` adds to every route but `/healthz` and `/readyz`: bearer tokens (when
/// `COMPACTD_API_KEYS` is set), 401 without one, 503 past the concurrency limit, 504 past
/// the request deadline, and 413 past the body limit on every POST. Added here once
/// rather than repeated in every handler's annotation (a handler's own, more specific
/// answer for a status stays).
struct Guard;

impl Modify for Guard {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.security_schemes.insert(
            "bearer".into(),
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "One of COMPACTD_API_KEYS / COMPACTD_API_KEYS_FILE; without configured keys no token is needed.",
                    ))
                    .build(),
            ),
        );
        doc.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
        for (path, item) in doc.paths.paths.iter_mut() {
            // The probes stay open (guard.rs `is_open`; tests/api/schemathesis.rs checks
            // the two agree).
            let open = matches!(path.as_str(), "/healthz" | "/readyz");
            // The provider-style routes answer their provider's error shape (vendor_errors).
            let dialect = super::vendor_errors::dialect_of(path);
            let operations = [
                (&mut item.get, false),
                (&mut item.post, true),
                (&mut item.put, true),
                (&mut item.delete, false),
                (&mut item.patch, true),
            ];
            for (operation, has_body) in operations {
                let Some(operation) = operation else { continue };
                if open {
                    operation.security = Some(vec![SecurityRequirement::default()]);
                } else {
                    guard_responses(operation, has_body, dialect);
                }
            }
        }
    }
}

fn guard_responses(operation: &mut Operation, has_body: bool, dialect: Option<Dialect>) {
    let problem = |description: &str| error(description, dialect);
    let responses = &mut operation.responses.responses;
    let mut add = |status: &str, response: Response| {
        responses
            .entry(status.to_string())
            .or_insert(RefOr::T(response));
    };
    add(
        "401",
        problem("API keys are configured and the bearer token is missing or wrong")
            .header(
                "WWW-Authenticate",
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .build(),
            )
            .build(),
    );
    add(
        "503",
        problem("At the concurrency limit (COMPACTD_MAX_CONCURRENCY, `overloaded`), or the shared state (Redis) is unavailable (`state-unavailable`); retry after Retry-After")
            .header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0)),
                    )
                    .build(),
            )
            .build(),
    );
    add(
        "504",
        problem("The request deadline (COMPACTD_REQUEST_TIMEOUT_SECS) passed").build(),
    );
    if has_body {
        add(
            "413",
            problem("Body too large (COMPACTD_MAX_BODY_BYTES)").build(),
        );
    }
}

/// A response with a problem document, or OpenAI's or Anthropic's error document on
/// their routes.
fn error(description: &str, dialect: Option<Dialect>) -> ResponseBuilder {
    let (content_type, schema) = match dialect {
        Some(Dialect::OpenAi) => ("application/json", "OpenAiError"),
        Some(Dialect::Anthropic) => ("application/json", "AnthropicError"),
        None => ("application/problem+json", "Problem"),
    };
    ResponseBuilder::new().description(description).content(
        content_type,
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(schema)))
            .build(),
    )
}

/// The guard always sends `Retry-After` with a 503; utoipa's header type cannot say a
/// header is required, so the JSON says it.
fn require_retry_after(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for operation in item.values_mut() {
            if let Some(header) = operation.pointer_mut("/responses/503/headers/Retry-After") {
                header["required"] = json!(true);
            }
        }
    }
}

/// utoipa describes a `u64` as `format: int64, minimum: 0`, which bounds it at `i64::MAX`;
/// compactd accepts every `u64` (and must cope with it), so a client or a schema-driven
/// fuzzer may send up to `u64::MAX`. Say so: `format: uint64`, `maximum: u64::MAX`.
fn mark_u64(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let is_integer = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            if is_integer
                && map.get("format").and_then(Value::as_str) == Some("int64")
                && map.get("minimum").and_then(Value::as_u64) == Some(0)
            {
                map.insert("format".into(), json!("uint64"));
                map.insert("maximum".into(), json!(u64::MAX));
            }
            map.values_mut().for_each(mark_u64);
        }
        Value::Array(items) => items.iter_mut().for_each(mark_u64),
        _ => {}
    }
}
