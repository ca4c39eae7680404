//! The OpenAPI description, generated from the handlers and types.

use axum::Json;
use serde_json::{json, Value};
use utoipa::openapi::schema::{AnyOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{OpenApi, PartialSchema, ToSchema};

use crate::compaction::FileLists;
use crate::pipeline::branch::{BranchDryRun, BranchSummaryResult};
use crate::pipeline::compact::CompactionResult;
use crate::pipeline::input::{SessionEntry, SessionRequest, SettingsRequest};
use crate::pipeline::numbers::JsNumber;
use crate::pipeline::prepare::{
    Compactable, Conversation, NotCompactableResponse, PrepareResponse, SettingsJson,
};
use crate::pipeline::prune::PruneResponse;
use crate::summarize::{RequestKind, SummaryRequest};

use super::compact::{SummarizeRequest, SummarizeResponse};
use super::problem::{Problem, ProblemItem};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "compactd",
        description = "Context compaction for LLM coding agents: pi's cut point, split turns, serialization and file tracking, server-side.",
        license(name = "MIT")
    ),
    paths(
        super::prepare::prepare,
        super::compact::compact,
        super::compact::summarize,
        super::branch::branch_summary,
        super::prune::prune,
        super::health::healthz,
        super::health::readyz,
        super::health::config,
        super::health::metrics
    ),
    components(schemas(
        SessionRequest,
        SessionEntry,
        SettingsRequest,
        PrepareResponse,
        PruneResponse,
        Compactable,
        NotCompactableResponse,
        Conversation,
        SettingsJson,
        FileLists,
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
        BranchDryRun
    ))
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
    document_the_guard(&mut doc);
    doc
}

/// What `guard.rs` adds to every route but `/healthz` and `/readyz`: bearer tokens (when
/// `COMPACTD_API_KEYS` is set), 503 past the concurrency limit, 504 past the request
/// deadline. Added here once rather than repeated in every handler's annotation.
fn document_the_guard(doc: &mut Value) {
    doc["components"]["securitySchemes"] = json!({
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "One of COMPACTD_API_KEYS / COMPACTD_API_KEYS_FILE; without configured keys no token is needed."
        }
    });
    doc["security"] = json!([{"bearer": []}]);
    let problem = |description: &str, headers: Value| {
        json!({
            "description": description,
            "headers": headers,
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        })
    };
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, operation) in item.iter_mut() {
            // The probes stay open (guard.rs `is_open`; tests/api/schemathesis.rs checks
            // the two agree).
            if matches!(path.as_str(), "/healthz" | "/readyz") {
                operation["security"] = json!([{}]);
                continue;
            }
            let Some(responses) = operation["responses"].as_object_mut() else {
                continue;
            };
            let guard = [
                ("401", problem(
                    "API keys are configured and the bearer token is missing or wrong",
                    json!({"WWW-Authenticate": {"schema": {"type": "string"}}}),
                )),
                ("503", problem(
                    "At the concurrency limit (COMPACTD_MAX_CONCURRENCY); retry after Retry-After",
                    json!({"Retry-After": {"schema": {"type": "integer", "minimum": 0}, "required": true}}),
                )),
                ("504", problem(
                    "The request deadline (COMPACTD_REQUEST_TIMEOUT_SECS) passed",
                    json!({}),
                )),
            ];
            for (status, response) in guard {
                responses.entry(status).or_insert(response);
            }
            if method == "post" {
                responses.entry("413").or_insert(problem(
                    "Body too large (COMPACTD_MAX_BODY_BYTES)",
                    json!({}),
                ));
            }
            // Status order, as in the annotations.
            let mut sorted: Vec<_> = std::mem::take(responses).into_iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            responses.extend(sorted);
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

/// `anyOf` the named component schemas. `anyOf`, not `oneOf`: the shapes are open objects,
/// so a CompactionResult also matches the smaller SummarizeResponse.
fn any_of(description: &str, names: &[&str]) -> RefOr<Schema> {
    let mut b = AnyOfBuilder::new().description(Some(description));
    for name in names {
        b = b.item(Ref::from_schema_name(*name));
    }
    b.into()
}

/// What `/v1/compact` takes as JSON: a session, or the remoteEndpoint body.
pub struct CompactRequest;

impl PartialSchema for CompactRequest {
    fn schema() -> RefOr<Schema> {
        any_of(
            "A session (`entries`), or the remoteEndpoint body `{systemPrompt, prompt}` (no `entries`).",
            &["SessionRequest", "SummarizeRequest"],
        )
    }
}
impl ToSchema for CompactRequest {}

/// What `/v1/compact` answers: the shape depends on the body.
pub struct CompactAnswer;

impl PartialSchema for CompactAnswer {
    fn schema() -> RefOr<Schema> {
        any_of(
            "A CompactionResult; a SummarizeResponse for a remoteEndpoint body; a PrepareResponse with `dryRun`.",
            &["CompactionResult", "SummarizeResponse", "PrepareResponse"],
        )
    }
}
impl ToSchema for CompactAnswer {}

/// What `/v1/branch-summary` answers.
pub struct BranchAnswer;

impl PartialSchema for BranchAnswer {
    fn schema() -> RefOr<Schema> {
        any_of(
            "A BranchSummaryResult; a BranchDryRun with `dryRun`.",
            &["BranchSummaryResult", "BranchDryRun"],
        )
    }
}
impl ToSchema for BranchAnswer {}

/// A small v3 session with something to summarize (`keepRecentTokens` 5): the example
/// request of the session endpoints, which also lets schemathesis reach their 200 answers.
pub fn session_example() -> Value {
    json!({
        "entries": example_entries(),
        "settings": {"keepRecentTokens": 5}
    })
}

/// The same session as a pi session file.
pub fn session_jsonl_example() -> Value {
    let lines: Vec<String> = example_entries().iter().map(Value::to_string).collect();
    Value::String(lines.join("\n") + "\n")
}

/// The example session with a second branch from `a2`; going back there leaves `a5`.
pub fn branch_example() -> Value {
    let mut entries = example_entries();
    entries.push(message("b1", "a2", 6, json!({"role": "user", "content": [{"type": "text", "text": "Try another approach instead."}]})));
    json!({"entries": entries, "oldLeafId": "a5", "targetId": "b1"})
}

/// A remoteEndpoint body.
pub fn summarize_example() -> Value {
    json!({
        "systemPrompt": "",
        "prompt": "<conversation>\n[User]: Fix the failing test in src/lib.rs\n\n[Assistant]: add subtracts; fixed it to a + b.\n</conversation>"
    })
}

fn message(id: &str, parent: &str, second: u32, message: Value) -> Value {
    json!({
        "type": "message", "id": id, "parentId": parent,
        "timestamp": format!("2026-01-01T00:00:{second:02}.000Z"),
        "message": message
    })
}

fn example_entries() -> Vec<Value> {
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    let mut first = message(
        "a1",
        "",
        1,
        json!({"role": "user", "content": text("Fix the failing test in src/lib.rs")}),
    );
    first["parentId"] = Value::Null;
    vec![
        json!({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/repo"}),
        first,
        message(
            "a2",
            "a1",
            2,
            json!({"role": "assistant", "content": [{"type": "text", "text": "Reading it."}, {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/lib.rs"}}], "stopReason": "toolUse"}),
        ),
        message(
            "a3",
            "a2",
            3,
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": text("fn add(a: i32, b: i32) -> i32 { a - b }"), "isError": false}),
        ),
        message(
            "a4",
            "a3",
            4,
            json!({"role": "assistant", "content": text("add subtracts; fixed it to a + b."), "stopReason": "stop"}),
        ),
        message(
            "a5",
            "a4",
            5,
            json!({"role": "user", "content": text("Thanks. Now run the tests.")}),
        ),
    ]
}
