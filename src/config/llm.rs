//! The summarizer's configuration: which summarizer answers, what happens when the
//! models fail, the model candidates, deadlines, retries and the cache. The model engine
//! (`summarize::llm`) is built from an [`LlmConfig`]; these types live here, with the
//! settings they come from, so that the configuration never imports from the engine.
//!
//! This file sits above its siblings: it reads the settings of `sources` and the keys of
//! `secrets`, and the enums it uses (`ModelKind`, …) come from `choices`, which knows
//! nothing of this file.

use std::time::Duration;

use secrecy::SecretString;

use super::choices::{FallbackPolicy, ModelKind, Strategy, SummarizerChoice};
use super::model_options::ModelOptions;
use super::secrets::{model_key, KeySources};
use super::sources::RawSettings;
use super::url::{check_base_url, redact_url};
use super::ConfigError;

/// Default context window of a model candidate.
pub const DEFAULT_MODEL_CONTEXT_WINDOW: u64 = 128_000;

/// One model candidate. Its `Debug` shows neither the key (only whether one is set) nor
/// the base URL's credentials and query.
#[derive(Clone)]
pub struct ModelConfig {
    /// Unique among the candidates; what a request's `model` names, and the provider
    /// part of `Summary.model` (`name/model`).
    pub name: String,
    pub kind: ModelKind,
    /// The model id sent upstream.
    pub model: String,
    pub base_url: String,
    /// Tokens the model accepts (prompt + output).
    pub context_window: u64,
    pub api_key: Option<SecretString>,
    /// What the server needs beyond the model id (see `model_options.rs`).
    pub options: ModelOptions,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &redact_url(&self.base_url))
            .field("context_window", &self.context_window)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("options", &self.options)
            .finish()
    }
}

/// Mixture-of-Agents (`[moa]`): which configured models draft and which one merges the
/// drafts, by their `[[models]]` names, and the strategy of requests that name none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoaConfig {
    pub proposers: Vec<String>,
    pub aggregator: String,
    pub strategy: Strategy,
}

/// Summarizer settings.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub summarizer: SummarizerChoice,
    pub fallback: FallbackPolicy,
    /// Tried in order.
    pub models: Vec<ModelConfig>,
    /// Timeout of one upstream attempt.
    pub upstream_timeout: Duration,
    /// Silence after which a streaming attempt is abandoned (zero: never); a candidate's
    /// `stall_ms` overrides it.
    pub stall: Duration,
    /// Overall deadline of one summarize call (a tenth less than the request timeout).
    pub deadline: Duration,
    /// Retries of a transient failure, per candidate.
    pub retries: u32,
    /// Exponential backoff with full jitter: `rand(0, min(cap, base × 2^n))`.
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// Bounds of the in-memory cache of identical requests (0 entries: no cache).
    pub cache_entries: usize,
    pub cache_bytes: u64,
    /// Mixture-of-Agents; `None`: no `[moa]` table (every summary is `single`).
    pub moa: Option<MoaConfig>,
}

impl Default for LlmConfig {
    /// The summarizer part of [`Config::default`](super::Config::default).
    fn default() -> Self {
        super::Config::default().llm
    }
}

impl LlmConfig {
    /// The summarizer settings of `s`: the single candidate of `model` / `base_url`
    /// first, then `models`, each with its key resolved; and the summarizer settled (the
    /// default is extractive unless `models` lists candidates).
    pub(super) fn from_settings(
        s: &RawSettings,
        request_timeout: Duration,
        name: &dyn Fn(&str) -> String,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<LlmConfig, ConfigError> {
        let bad = |key: &str, message: &str| ConfigError::Value {
            name: name(key),
            message: message.into(),
        };
        let summarizer = match (s.summarizer, s.models.first()) {
            (Some(choice), _) => choice,
            (None, Some(first)) => match first.kind {
                ModelKind::Openai | ModelKind::AzureOpenai => SummarizerChoice::Openai,
                ModelKind::Anthropic => SummarizerChoice::Anthropic,
            },
            (None, None) => SummarizerChoice::Extractive,
        };
        let shared_file = s
            .llm_api_key_file
            .as_deref()
            .map(|p| (p, name("llm_api_key_file")));
        let kind = match summarizer {
            SummarizerChoice::Openai => Some(ModelKind::Openai),
            SummarizerChoice::Anthropic => Some(ModelKind::Anthropic),
            SummarizerChoice::Extractive => None,
        };
        let mut models = Vec::new();
        match (kind, &s.model) {
            (Some(kind), Some(model)) => {
                // The env candidate's kind comes from COMPACTD_SUMMARIZER: never Azure.
                let base_url = s
                    .base_url
                    .clone()
                    .or_else(|| kind.default_base_url().map(str::to_string))
                    .unwrap_or_default();
                check_base_url(&base_url).map_err(|m| bad("base_url", &m))?;
                if model.is_empty() {
                    return Err(bad("model", "must not be empty"));
                }
                let sources = KeySources {
                    own_env: None,
                    own_file: None,
                    shared_file: shared_file.clone(),
                };
                let options = s.model_options.clone().unwrap_or_default().resolve(
                    kind,
                    model,
                    &|k| format!("{}.{k}", name("model_options")),
                    env,
                )?;
                models.push(ModelConfig {
                    name: kind.as_str().to_string(),
                    kind,
                    model: model.clone(),
                    base_url,
                    context_window: s
                        .model_context_window
                        .unwrap_or(DEFAULT_MODEL_CONTEXT_WINDOW),
                    api_key: model_key(kind, sources, env)?,
                    options,
                });
            }
            (None, Some(_)) if s.summarizer.is_none() => {
                return Err(bad(
                    "model",
                    "a model is set but COMPACTD_SUMMARIZER is not: set it to `openai` or \
                     `anthropic`",
                ));
            }
            (_, None) => {
                if s.base_url.is_some() {
                    return Err(bad(
                        "base_url",
                        "a base URL is set without a model: set COMPACTD_MODEL too",
                    ));
                }
            }
            // Explicitly extractive: the single candidate is not used.
            (None, Some(_)) => {}
        }
        if s.model_context_window == Some(0) {
            return Err(bad("model_context_window", "must be positive"));
        }
        let list = name("models");
        for (i, m) in s.models.iter().enumerate() {
            let field = |f: &str| format!("{list}[{i}].{f}");
            let sources = KeySources {
                own_env: m.api_key_env.as_deref().map(|v| (v, field("api_key_env"))),
                own_file: m
                    .api_key_file
                    .as_deref()
                    .map(|p| (p, field("api_key_file"))),
                shared_file: shared_file.clone(),
            };
            let base_url = match (&m.base_url, m.kind.default_base_url()) {
                (Some(url), _) => url.clone(),
                (None, Some(default)) => default.to_string(),
                (None, None) => {
                    return Err(ConfigError::Value {
                        name: field("base_url"),
                        message: "required for kind = \"azure-openai\": the resource's \
                                  endpoint, e.g. https://NAME.openai.azure.com"
                            .into(),
                    })
                }
            };
            models.push(ModelConfig {
                name: m
                    .name
                    .clone()
                    .unwrap_or_else(|| m.kind.as_str().to_string()),
                kind: m.kind,
                model: m.model.clone(),
                base_url,
                context_window: m.context_window.unwrap_or(DEFAULT_MODEL_CONTEXT_WINDOW),
                api_key: model_key(m.kind, sources, env)?,
                options: m.options().resolve(m.kind, &m.model, &field, env)?,
            });
        }
        Ok(LlmConfig {
            summarizer,
            fallback: s.fallback,
            models,
            upstream_timeout: Duration::from_secs(s.upstream_timeout_secs),
            stall: Duration::from_millis(s.model_stall_ms),
            // A summarize call must end (with the fallback if need be) before the
            // request's own deadline answers 504.
            deadline: request_timeout.mul_f64(0.9),
            retries: s.retries,
            backoff_base: Duration::from_millis(s.backoff_base_ms),
            backoff_cap: Duration::from_millis(s.backoff_cap_ms),
            cache_entries: s.cache_entries,
            cache_bytes: s.cache_bytes,
            moa: s.moa.as_ref().map(|m| MoaConfig {
                proposers: m.proposers.clone(),
                aggregator: m.aggregator.clone(),
                strategy: m.strategy,
            }),
        })
    }

    /// Checks the values an engine relies on; errors name the environment variables.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_named(&super::sources::env_name)
    }

    /// Checks the values an engine relies on; `name` turns a setting's key into the name
    /// an error shows (its environment variable, or its key in the config file).
    pub(super) fn validate_named(&self, name: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
        let bad = |name: String, message: &str| {
            Err(ConfigError::Value {
                name,
                message: message.into(),
            })
        };
        if self.upstream_timeout.is_zero() {
            return bad(name("upstream_timeout_secs"), "must be positive");
        }
        if self.deadline.is_zero() {
            return bad(name("request_timeout_secs"), "must be positive");
        }
        if self.backoff_base > self.backoff_cap {
            let cap = name("backoff_cap_ms");
            return bad(name("backoff_base_ms"), &format!("must not exceed {cap}"));
        }
        if self.summarizer != SummarizerChoice::Extractive && self.models.is_empty() {
            return bad(
                name("model"),
                "required when COMPACTD_SUMMARIZER is `openai` or `anthropic` and the config \
                 file lists no [[models]]",
            );
        }
        let mut names = std::collections::HashSet::new();
        for (i, m) in self.models.iter().enumerate() {
            let field = |f: &str| format!("models[{i}].{f}");
            if m.name.trim().is_empty() {
                return bad(field("name"), "must not be empty");
            }
            if !names.insert(m.name.as_str()) {
                return bad(
                    field("name"),
                    &format!(
                        "{:?} is used twice: give each model candidate a distinct name",
                        m.name
                    ),
                );
            }
            if m.model.trim().is_empty() {
                return bad(field("model"), "must not be empty");
            }
            if m.context_window == 0 {
                return bad(field("context_window"), "must be positive");
            }
            check_base_url(&m.base_url).map_err(|message| ConfigError::Value {
                name: field("base_url"),
                message,
            })?;
        }
        if let Some(moa) = &self.moa {
            self.validate_moa(moa, &name("moa"))?;
        }
        Ok(())
    }

    /// Every `[moa]` name is a `[[models]]` name; `table` is what an error calls the
    /// table (`moa` in the file, `COMPACTD_MOA` in the environment).
    fn validate_moa(&self, moa: &MoaConfig, table: &str) -> Result<(), ConfigError> {
        let bad = |message: String| {
            Err(ConfigError::Value {
                name: table.to_string(),
                message,
            })
        };
        if moa.proposers.is_empty() {
            return bad("proposers: list at least one model name from [[models]]".into());
        }
        let known: Vec<&str> = self.models.iter().map(|m| m.name.as_str()).collect();
        let unknown = |field: String, name: &str| {
            bad(format!(
                "{field}: no [[models]] entry is named {name:?} (configured: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        };
        for (i, p) in moa.proposers.iter().enumerate() {
            if !known.contains(&p.as_str()) {
                return unknown(format!("proposers[{i}]"), p);
            }
            if moa.proposers[..i].contains(p) {
                return bad(format!("proposers[{i}]: {p:?} is listed twice"));
            }
        }
        if !known.contains(&moa.aggregator.as_str()) {
            return unknown("aggregator".into(), &moa.aggregator);
        }
        Ok(())
    }
}
