//! The summarizer's choices, as plain enums: which summarizer answers, what happens when
//! the models fail, and which wire format a model candidate speaks.
//!
//! Design decision: these are the vocabulary every other file of `config` shares (the
//! settings schema in `sources`, the key lookup in `secrets`, the typed `llm` config), so
//! they sit in a file of their own that imports nothing from its siblings; the
//! dependencies inside `config` then point one way: `choices` ← `secrets`, `sources` ←
//! `llm` ← `describe`.

use serde::{Deserialize, Serialize};

/// Which summarizer answers when a request names no model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummarizerChoice {
    /// The built-in extractive summarizer; no network.
    Extractive,
    /// The model candidates (the single one from `model` is OpenAI-compatible).
    Openai,
    /// The model candidates (the single one from `model` speaks the Messages API).
    Anthropic,
}

/// What to answer with when every model candidate failed or the deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FallbackPolicy {
    /// The extractive summarizer (a warning is logged).
    Extractive,
    /// No fallback: 502 `upstream-failed` / 504 `upstream-timeout`.
    None,
}

/// The wire format a model candidate speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// OpenAI-compatible `POST {base}/chat/completions`.
    Openai,
    /// Anthropic `POST {base}/v1/messages`.
    Anthropic,
    /// Azure OpenAI: the OpenAI wire format at
    /// `POST {base}/openai/deployments/{deployment}/chat/completions?api-version=…`,
    /// the key in an `api-key` header.
    #[serde(rename = "azure-openai")]
    AzureOpenai,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Openai => "openai",
            ModelKind::Anthropic => "anthropic",
            ModelKind::AzureOpenai => "azure-openai",
        }
    }

    /// The public API's URL; `None` for Azure (each resource has its own endpoint).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ModelKind::Openai => Some("https://api.openai.com/v1"),
            ModelKind::Anthropic => Some("https://api.anthropic.com"),
            ModelKind::AzureOpenai => None,
        }
    }

    /// Whether the candidate speaks the OpenAI chat-completions wire format.
    pub fn is_openai_format(self) -> bool {
        matches!(self, ModelKind::Openai | ModelKind::AzureOpenai)
    }

    /// The conventional environment variable holding this kind's API key.
    pub fn key_env(self) -> &'static str {
        match self {
            ModelKind::Openai => "OPENAI_API_KEY",
            ModelKind::Anthropic => "ANTHROPIC_API_KEY",
            ModelKind::AzureOpenai => "AZURE_OPENAI_API_KEY",
        }
    }
}

/// How a summary is written: by one model (the candidates in order), or by
/// Mixture-of-Agents (the `[moa]` proposers draft concurrently, the aggregator merges).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// One model answers (the candidates in order, or the one the request names).
    #[default]
    Single,
    /// The `[moa]` proposers draft concurrently; the aggregator writes the summary.
    Moa,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Single => "single",
            Strategy::Moa => "moa",
        }
    }
}
