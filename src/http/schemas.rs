//! Schemas the HTTP layer documents without a Rust type of its own: answers and requests
//! whose shape depends on the body.

use std::borrow::Cow;

use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::pipeline::{
    BranchSummaryOptions, CompactOptions, PrepareOptions, PruneOptions, RecallOptions,
};

/// One entry as pi writes it (documentation only): the fields every entry shares. The
/// rest depends on `type` and passes through untouched, as do unknown types.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// `session` (the header, first only), `message`, `compaction`, `branch_summary`,
    /// `custom_message`, `custom`, `model_change`, `thinking_level_change`, `label`,
    /// `session_info`, or any other type.
    #[serde(rename = "type")]
    pub entry_type: String,
    /// Unique within the session (absent or null in version 1 files: assigned by
    /// migration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The entry before this one in its branch (null or absent: a root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

/// The JSON body of a session endpoint: `entries`, `settings`, and the properties of the
/// endpoint's options types (the same types read the body: `pipeline::options`).
fn session_request(description: &str, options: &[RefOr<Schema>]) -> RefOr<Schema> {
    let mut body = ObjectBuilder::new()
        .description(Some(description))
        .property(
            "entries",
            ArrayBuilder::new()
                .items(Ref::from_schema_name("SessionEntry"))
                .description(Some(
                    "The session's entries as pi writes them, header line allowed.",
                )),
        )
        .required("entries")
        .property(
            "settings",
            OneOfBuilder::new()
                .item(ObjectBuilder::new().schema_type(Type::Null))
                .item(Ref::from_schema_name("SettingsRequest"))
                .description(Some(
                    "`keepRecentTokens` and `reserveTokens`; they win over the flat ones.",
                )),
        );
    for schema in options {
        if let RefOr::T(Schema::Object(o)) = schema {
            for (name, property) in &o.properties {
                body = body.property(name.clone(), property.clone());
            }
        }
    }
    body.into()
}

/// Declares a session endpoint's JSON body schema, named `$name` in the components.
macro_rules! session_request {
    ($(#[$meta:meta])* $ty:ident = $name:literal, $description:literal, [$($options:ty),+]) => {
        $(#[$meta])*
        pub struct $ty;

        impl PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                session_request($description, &[$(<$options>::schema()),+])
            }
        }

        impl ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    };
}

session_request!(
    /// `/v1/prepare`'s JSON body.
    PrepareRequest = "PrepareRequest",
    "A session and the options of /v1/prepare.",
    [PrepareOptions]
);
session_request!(
    /// `/v1/compact`'s JSON session body (the name the spec has always used).
    CompactSessionRequest = "SessionRequest",
    "A session and the options of /v1/compact (those of /v1/prepare and its own).",
    [PrepareOptions, CompactOptions]
);
session_request!(
    /// `/v1/branch-summary`'s JSON body.
    BranchSummaryRequest = "BranchSummaryRequest",
    "The whole entry tree and the options of /v1/branch-summary.",
    [BranchSummaryOptions]
);
session_request!(
    /// `/v1/prune`'s JSON body.
    PruneRequest = "PruneRequest",
    "A session and the options of /v1/prune.",
    [PruneOptions]
);
session_request!(
    /// `/v1/recall`'s JSON body.
    RecallRequest = "RecallRequest",
    "A session and the options of /v1/recall.",
    [RecallOptions]
);

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

/// A hermes-agent compaction request (documentation only; `pipeline::hermes` reads it).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = HermesRequest)]
pub struct HermesRequestSchema {
    /// OpenAI chat-completions messages as hermes keeps them; every field is carried
    /// through untouched.
    pub messages: Vec<serde_json::Value>,
    /// The main model's context window (tokens).
    pub context_length: u64,
    pub settings: Option<HermesSettingsSchema>,
    pub state: Option<HermesStateSchema>,
    /// Focus for the summary (`/compress <topic>`); empty: the last user asks.
    pub focus_topic: Option<String>,
    /// A memory provider's context, kept by the summary.
    pub memory_context: Option<String>,
    /// The client's own token count of the request (for `shouldCompress`).
    pub current_tokens: Option<u64>,
    /// `YYYY-MM-DD` for the temporal rule [today, UTC]; `null` leaves it out.
    pub today: Option<String>,
    /// Plan only (as `/v1/hermes/prepare`).
    pub dry_run: Option<bool>,
    /// A configured model name [the default].
    pub model: Option<String>,
    /// `single` or `moa` (Mixture-of-Agents) [the `[moa]` default, else `single`].
    pub strategy: Option<crate::summarize::Strategy>,
    /// `user` | `assistant` [assistant, as hermes]: the role of a summary with no head
    /// before it (divergence H4).
    pub no_head_role: Option<String>,
}

/// hermes's `compression.*` settings.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = HermesSettings)]
pub struct HermesSettingsSchema {
    /// [0.50] share of the window that triggers compaction (at least 0.75 under 512k).
    pub threshold_percent: Option<f64>,
    /// [0.20] share of the threshold the verbatim tail may take (0.10–0.80).
    pub target_ratio: Option<f64>,
    /// [3] non-system head messages kept verbatim before the first compaction.
    pub protect_first_n: Option<u64>,
    /// [20] minimum tail messages (capped at 8 in the tail walk).
    pub protect_last_n: Option<u64>,
    /// The main model's output reservation; only a positive integer counts.
    pub max_tokens: Option<u64>,
    /// [false] keep the list unchanged instead of the static summary when the model fails.
    pub abort_on_summary_failure: Option<bool>,
}

/// What a live hermes compressor carries between calls.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = HermesState)]
pub struct HermesStateSchema {
    pub compression_count: u64,
    /// The body of the last summary, without its prefix.
    pub previous_summary: Option<String>,
}

/// Where a hermes compaction cut.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HermesBoundaries {
    pub head_size: u64,
    pub compress_start: u64,
    pub compress_end: u64,
    pub previous_summary_index: Option<u64>,
    pub turns_start: u64,
    pub turns_count: u64,
    pub pruned_indexes: Vec<u64>,
}

/// The answer of `/v1/hermes/compress` and `/v1/hermes/prepare`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HermesAnswer {
    pub compressed: bool,
    /// When not compressed: `too-few-messages`, `nothing-to-compress` or `summary-failed`.
    pub reason: Option<String>,
    /// The compacted list, or the input unchanged.
    pub messages: Vec<serde_json::Value>,
    pub summary: Option<String>,
    pub summary_index: Option<u64>,
    pub summary_role: Option<String>,
    pub summary_merged: Option<bool>,
    /// `llm`, `fallback` (hermes's static summary) or `prune-only`.
    pub summarizer: Option<String>,
    pub boundaries: Option<HermesBoundaries>,
    /// The input index of each output message (`null`: the standalone summary).
    pub sources: Option<Vec<Option<u64>>>,
    pub tokens_before: u64,
    pub tokens_after: Option<u64>,
    /// Fewer messages, or under 95 % of the rough estimate before.
    pub made_progress: Option<bool>,
    pub threshold: serde_json::Value,
    /// The summarizer request (one user message, no output cap).
    pub requests: Option<Vec<serde_json::Value>>,
    /// The serialized turns (dry runs).
    pub serialized: Option<String>,
    /// The state to send with the next request.
    pub state: HermesStateSchema,
    pub fallback: Option<serde_json::Value>,
    /// Why the summary failed (`summary-failed`).
    pub error: Option<String>,
    pub usage: Option<crate::summarize::Usage>,
    pub model: Option<String>,
    /// The models that took part in a Mixture-of-Agents summary.
    pub moa: Option<crate::summarize::MoaReport>,
}
