//! What real model servers need beyond a model id and a URL, per candidate: which
//! token-limit parameter to send, sampling and reasoning settings, the output cap,
//! extra headers and query parameters, and Azure's deployment and API version.
//!
//! Design decisions:
//! * The rules the servers enforce are checked here, at start-up, with an error naming
//!   the setting, rather than learned from a 400 at the first compaction: Anthropic's
//!   extended thinking needs `budget_tokens` ≥ 1024 and below `max_tokens`, and forbids
//!   `temperature` (other than 1) and a `top_p` below 0.95; `reasoning_effort` is
//!   OpenAI's and `thinking_budget` Anthropic's.
//! * What cannot be known from configuration (whether a server wants `max_tokens` or
//!   `max_completion_tokens`, whether it takes a `temperature`) starts from the model id
//!   (`auto`) and is learned from the server's 400 by the engine.
//! * Header values may be credentials (a gateway's key): they are held as
//!   [`SecretString`]s, read from the environment with `headers_env`, and no `Debug`
//!   output, error or description shows one; only the header names are shown.

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::choices::ModelKind;
use super::ConfigError;

/// The Azure OpenAI `api-version` sent when none is configured (the GA version of the
/// chat-completions API that knows `max_completion_tokens` and `reasoning_effort`).
pub const DEFAULT_AZURE_API_VERSION: &str = "2024-12-01-preview";

/// Anthropic's smallest thinking budget.
pub const MIN_THINKING_BUDGET: u64 = 1024;

/// `max_tokens` sent to Anthropic for a request that sets no cap, unless the candidate's
/// `max_output_tokens` says otherwise: the output every current Claude model accepts.
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u64 = 8192;

/// Which parameter carries the output cap (OpenAI wire format).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimitParam {
    /// `max_completion_tokens` for OpenAI's reasoning models (ids `o1…`, `o3…`, `o4…`,
    /// `gpt-5…`, also behind a `vendor/` prefix), `max_tokens` otherwise.
    #[default]
    Auto,
    MaxTokens,
    MaxCompletionTokens,
}

/// The options as the file (`[[models]]`) and `COMPACTD_MODEL_OPTIONS` spell them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct OptionsSource {
    pub token_limit_param: TokenLimitParam,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub reasoning_effort: Option<String>,
    pub thinking_budget: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// Header name → value (not for credentials: see `headers_env`).
    pub headers: BTreeMap<String, String>,
    /// Header name → the environment variable holding its value.
    pub headers_env: BTreeMap<String, String>,
    /// Query parameters added to the endpoint.
    pub query: BTreeMap<String, String>,
    /// Azure: the deployment [the model id].
    pub deployment: Option<String>,
    /// Azure: the `api-version` [`DEFAULT_AZURE_API_VERSION`].
    pub api_version: Option<String>,
    /// Ask the server to stream its answer [true] (`false`: for a server that
    /// mishandles `stream` or `stream_options`).
    pub stream: Option<bool>,
    /// A streaming answer that sends nothing for this long is abandoned and retried
    /// [`model_stall_ms`]; 0: never.
    pub stall_ms: Option<u64>,
}

/// A candidate's options, checked. `Debug` shows header names, never their values.
#[derive(Clone, Default)]
pub struct ModelOptions {
    pub token_limit_param: TokenLimitParam,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// OpenAI `reasoning_effort` (`minimal`, `low`, `medium`, `high`, …), sent as is.
    pub reasoning_effort: Option<String>,
    /// Anthropic extended thinking: `thinking: {type: "enabled", budget_tokens}`.
    pub thinking_budget: Option<u64>,
    /// The most output tokens the model may be asked for (a request's budget is capped
    /// to it; with thinking, budget and answer together).
    pub max_output_tokens: Option<u64>,
    /// Extra headers, values secret.
    pub headers: Vec<(String, SecretString)>,
    pub query: Vec<(String, String)>,
    /// Azure only (both set for `azure-openai` once resolved).
    pub deployment: Option<String>,
    pub api_version: Option<String>,
    /// `Some(false)`: never ask this server to stream (the default streams).
    pub stream: Option<bool>,
    /// This candidate's stall time in ms (0: no stall detection); `None`: the global
    /// `model_stall_ms`.
    pub stall_ms: Option<u64>,
}

impl ModelOptions {
    /// Whether answers are asked for as a stream (the default).
    pub fn streams(&self) -> bool {
        self.stream.unwrap_or(true)
    }
}

impl std::fmt::Debug for ModelOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelOptions")
            .field("token_limit_param", &self.token_limit_param)
            .field("temperature", &self.temperature)
            .field("top_p", &self.top_p)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("thinking_budget", &self.thinking_budget)
            .field("max_output_tokens", &self.max_output_tokens)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field(
                "query",
                &self.query.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("deployment", &self.deployment)
            .field("api_version", &self.api_version)
            .field("stream", &self.stream)
            .field("stall_ms", &self.stall_ms)
            .finish()
    }
}

/// Headers compactd sets itself (or the HTTP client does); configuring them is refused.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "x-api-key",
    "api-key",
    "anthropic-version",
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
];

impl OptionsSource {
    /// Checks the options of a candidate of `kind` serving `model`; `field` names a key
    /// in errors, `env` reads `headers_env`.
    pub(super) fn resolve(
        self,
        kind: ModelKind,
        model: &str,
        field: &dyn Fn(&str) -> String,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ModelOptions, ConfigError> {
        let bad = |key: &str, message: String| ConfigError::Value {
            name: field(key),
            message,
        };
        let anthropic = kind == ModelKind::Anthropic;
        if let Some(t) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return Err(bad("temperature", "must be between 0 and 2".into()));
            }
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(bad("top_p", "must be above 0 and at most 1".into()));
            }
        }
        if self.max_output_tokens == Some(0) {
            return Err(bad("max_output_tokens", "must be positive".into()));
        }
        if let Some(effort) = &self.reasoning_effort {
            if anthropic {
                return Err(bad(
                    "reasoning_effort",
                    "is OpenAI's setting: for an anthropic model set thinking_budget".into(),
                ));
            }
            if effort.is_empty()
                || !effort
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(bad(
                    "reasoning_effort",
                    "must be a word such as minimal, low, medium or high".into(),
                ));
            }
        }
        if let Some(budget) = self.thinking_budget {
            if !anthropic {
                return Err(bad(
                    "thinking_budget",
                    "is Anthropic's setting: for an OpenAI model set reasoning_effort".into(),
                ));
            }
            if budget < MIN_THINKING_BUDGET {
                return Err(bad(
                    "thinking_budget",
                    format!("must be at least {MIN_THINKING_BUDGET} (Anthropic's minimum)"),
                ));
            }
            let cap = self
                .max_output_tokens
                .unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS);
            if cap <= budget {
                return Err(bad(
                    "max_output_tokens",
                    format!(
                        "must be above thinking_budget ({budget}): Anthropic's max_tokens \
                         holds the thinking and the answer [{DEFAULT_ANTHROPIC_MAX_TOKENS}]"
                    ),
                ));
            }
            if self.temperature.is_some_and(|t| t != 1.0) {
                return Err(bad(
                    "temperature",
                    "cannot be set with thinking_budget: Anthropic allows only 1 with \
                     extended thinking (leave it unset)"
                        .into(),
                ));
            }
            if self.top_p.is_some_and(|p| p < 0.95) {
                return Err(bad(
                    "top_p",
                    "must be at least 0.95 (or unset) with thinking_budget: Anthropic's rule \
                     for extended thinking"
                        .into(),
                ));
            }
        }
        if kind != ModelKind::AzureOpenai {
            if self.deployment.is_some() {
                return Err(bad(
                    "deployment",
                    "is for kind = \"azure-openai\" only".into(),
                ));
            }
            if self.api_version.is_some() {
                return Err(bad(
                    "api_version",
                    "is for kind = \"azure-openai\" only".into(),
                ));
            }
        }
        let mut headers = Vec::new();
        let check_name = |name: &str, key: &str| {
            let lower = name.to_ascii_lowercase();
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(bad(key, format!("{name:?} is not a valid header name")));
            }
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(bad(
                    key,
                    format!(
                        "{name:?} is set by compactd (the key goes in api_key_env / api_key_file)"
                    ),
                ));
            }
            Ok(())
        };
        for (name, value) in self.headers {
            check_name(&name, "headers")?;
            if reqwest::header::HeaderValue::from_str(&value).is_err() {
                return Err(bad(
                    "headers",
                    format!("the value of {name:?} is not a valid header value"),
                ));
            }
            headers.push((name, SecretString::from(value)));
        }
        for (name, var) in self.headers_env {
            check_name(&name, "headers_env")?;
            let value = env(&var)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    bad(
                        "headers_env",
                        format!("the environment variable {var} is not set"),
                    )
                })?;
            if reqwest::header::HeaderValue::from_str(&value).is_err() {
                return Err(bad(
                    "headers_env",
                    format!("{var} does not hold a valid header value"),
                ));
            }
            headers.push((name, SecretString::from(value)));
        }
        for name in self.query.keys() {
            if name.is_empty() {
                return Err(bad("query", "a parameter name is empty".into()));
            }
            if kind == ModelKind::AzureOpenai && name == "api-version" {
                return Err(bad(
                    "query",
                    "set api_version instead of query.api-version".into(),
                ));
            }
        }
        let (deployment, api_version) = match kind {
            ModelKind::AzureOpenai => {
                let deployment = self.deployment.unwrap_or_else(|| model.to_string());
                if deployment.trim().is_empty() {
                    return Err(bad("deployment", "must not be empty".into()));
                }
                let version = self
                    .api_version
                    .unwrap_or_else(|| DEFAULT_AZURE_API_VERSION.to_string());
                if version.trim().is_empty() {
                    return Err(bad("api_version", "must not be empty".into()));
                }
                (Some(deployment), Some(version))
            }
            _ => (None, None),
        };
        Ok(ModelOptions {
            token_limit_param: self.token_limit_param,
            temperature: self.temperature,
            top_p: self.top_p,
            reasoning_effort: self.reasoning_effort,
            thinking_budget: self.thinking_budget,
            max_output_tokens: self.max_output_tokens,
            headers,
            query: self.query.into_iter().collect(),
            deployment,
            api_version,
            stream: self.stream,
            stall_ms: self.stall_ms,
        })
    }
}

/// Whether `model` is one of OpenAI's reasoning models, which take
/// `max_completion_tokens` and only the default temperature: `o1…`, `o3…`, `o4…`,
/// `gpt-5…`, also behind a gateway's `vendor/` prefix (`openai/o3-mini`).
pub fn is_openai_reasoning_model(model: &str) -> bool {
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["o1", "o3", "o4"]
        .iter()
        .any(|p| id == *p || id.starts_with(&format!("{p}-")))
        || id.starts_with("gpt-5")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_ids() {
        for id in [
            "o1",
            "o1-mini",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "gpt-5-mini",
            "openai/o3",
            "GPT-5.1",
        ] {
            assert!(is_openai_reasoning_model(id), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-4.1-mini",
            "o1x",
            "qwen2.5-coder:7b",
            "claude-sonnet-4-5",
            "gpt-4o-2024-08-06",
        ] {
            assert!(!is_openai_reasoning_model(id), "{id}");
        }
    }

    fn resolve(kind: ModelKind, src: OptionsSource) -> Result<ModelOptions, String> {
        src.resolve(kind, "m", &|k| format!("models[0].{k}"), &|v| {
            (v == "GW_KEY").then(|| "secret-value".to_string())
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn anthropic_thinking_rules() {
        let thinking = |budget, max| OptionsSource {
            thinking_budget: Some(budget),
            max_output_tokens: max,
            ..Default::default()
        };
        assert!(resolve(ModelKind::Anthropic, thinking(4096, None)).is_ok());
        let e = resolve(ModelKind::Anthropic, thinking(1000, None)).unwrap_err();
        assert!(
            e.contains("models[0].thinking_budget") && e.contains("1024"),
            "{e}"
        );
        let e = resolve(ModelKind::Anthropic, thinking(8192, None)).unwrap_err();
        assert!(e.contains("max_output_tokens"), "{e}");
        assert!(resolve(ModelKind::Anthropic, thinking(8192, Some(16000))).is_ok());
        let e = resolve(
            ModelKind::Anthropic,
            OptionsSource {
                temperature: Some(0.2),
                ..thinking(2048, None)
            },
        )
        .unwrap_err();
        assert!(e.contains("temperature"), "{e}");
        let e = resolve(
            ModelKind::Anthropic,
            OptionsSource {
                top_p: Some(0.9),
                ..thinking(2048, None)
            },
        )
        .unwrap_err();
        assert!(e.contains("top_p"), "{e}");
        let e = resolve(ModelKind::Openai, thinking(2048, None)).unwrap_err();
        assert!(e.contains("reasoning_effort"), "{e}");
    }

    #[test]
    fn headers_are_checked_and_never_shown() {
        let src = OptionsSource {
            headers: [("X-Title".to_string(), "compactd".to_string())].into(),
            headers_env: [("X-Gateway-Key".to_string(), "GW_KEY".to_string())].into(),
            ..Default::default()
        };
        let o = resolve(ModelKind::Openai, src).unwrap();
        assert_eq!(o.headers.len(), 2);
        assert!(!format!("{o:?}").contains("secret-value"));
        let e = resolve(
            ModelKind::Openai,
            OptionsSource {
                headers: [("Authorization".to_string(), "Bearer x".to_string())].into(),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("set by compactd"), "{e}");
        let e = resolve(
            ModelKind::Openai,
            OptionsSource {
                headers_env: [("X-K".to_string(), "UNSET".to_string())].into(),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("UNSET is not set"), "{e}");
    }

    #[test]
    fn azure_defaults() {
        let o = resolve(ModelKind::AzureOpenai, OptionsSource::default()).unwrap();
        assert_eq!(o.deployment.as_deref(), Some("m"));
        assert_eq!(o.api_version.as_deref(), Some(DEFAULT_AZURE_API_VERSION));
        let e = resolve(
            ModelKind::Openai,
            OptionsSource {
                deployment: Some("d".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("azure-openai"), "{e}");
    }
}
