//! The answer of `/v1/responses/compact`, in OpenAI's `response.compaction` shape.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::summarize::Usage;

/// The answer: OpenAI's `response.compaction` object, with compactd's report beside it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CompactedResponse {
    /// `cmp_` and 24 random characters.
    pub id: String,
    /// `response.compaction`.
    pub object: &'static str,
    /// Unix seconds.
    pub created_at: i64,
    /// The summary as a user message (`input_text` wrapped as pi wraps a compaction
    /// summary), then the kept items as they were sent.
    #[schema(value_type = Vec<Object>)]
    pub output: Vec<Box<RawValue>>,
    pub usage: ResponseUsage,
    /// compactd's extension: the model that wrote the summary (`name/model`, or
    /// `extractive`).
    pub model: String,
    /// compactd's extension: estimated tokens of the input and of the output.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// compactd's extension: what the caller should know (absent when nothing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// `{"note": …}` when the answer is not what the settings alone would give: the
    /// whole conversation fit the kept part, so it was compacted up to the newest user
    /// message, or returned as it came when nothing comes before that message.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
}

/// OpenAI's usage of a Responses call: the summarizer's tokens.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct ResponseUsage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
}

#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

impl From<Usage> for ResponseUsage {
    fn from(u: Usage) -> Self {
        let input = u.input + u.cache_read + u.cache_write;
        ResponseUsage {
            input_tokens: input,
            input_tokens_details: InputTokensDetails {
                cached_tokens: u.cache_read,
            },
            output_tokens: u.output,
            output_tokens_details: OutputTokensDetails {
                reasoning_tokens: u.reasoning,
            },
            total_tokens: input + u.output,
        }
    }
}
