//! Configuration: defaults, then an optional TOML file (`--config` / `COMPACTD_CONFIG`),
//! then environment variables. Invalid values stop start-up with a message naming the
//! setting: the environment variable if the environment set it, the key if the file did.
//!
//! Layout:
//! * `sources`: the one declaration of every setting (its file key, its variable and
//!   its default) and the layering by figment;
//! * `choices`: the summarizer's enums (`SummarizerChoice`, `FallbackPolicy`,
//!   `ModelKind`), shared by the files below and importing none of them;
//! * `secrets`: client keys and upstream keys, and where they are read from;
//! * `llm`: the summarizer's configuration and the model candidates, built from
//!   `sources` and `secrets`;
//! * `model_options`: what real model servers need per candidate (token-limit parameter,
//!   reasoning, output cap, headers, query, Azure), checked against their rules;
//! * `url`: checking and redacting model server URLs;
//! * `describe`: the effective non-secret configuration, described once.
//!
//! Inside the folder the imports point one way: `choices` and `url` at the bottom,
//! `secrets` and `sources` above them, `llm` above those, `describe` on top.
//!
//! [`Config`] is the typed result the rest of the service reads. It is a plain struct
//! with public fields, so tests build one with `Config { .., ..Config::default() }`.

mod choices;
mod describe;
mod llm;
mod model_options;
mod secrets;
mod sources;
mod url;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use compactd_core::compaction::Settings as CompactionSettings;

pub use choices::{FallbackPolicy, ModelKind, Strategy, SummarizerChoice};
pub use describe::{
    BackoffDescription, CacheDescription, CandidateDescription, ConfigDescription, LlmDescription,
    MoaDescription,
};
pub use llm::{LlmConfig, MoaConfig, ModelConfig, DEFAULT_MODEL_CONTEXT_WINDOW};
pub use model_options::{
    is_openai_reasoning_model, ModelOptions, TokenLimitParam, DEFAULT_ANTHROPIC_MAX_TOKENS,
    DEFAULT_AZURE_API_VERSION, MIN_THINKING_BUDGET,
};
pub use secrets::ClientKeys;
pub use url::{check_base_url, redact_url};

use sources::{env_name, Layers, RawSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Json,
    Pretty,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// Entries (header included) a session body may hold: bounds the memory a small
    /// body can claim, since each parsed entry costs far more than its shortest JSON.
    pub max_entries: usize,
    pub max_concurrency: usize,
    pub request_timeout: Duration,
    /// After SIGTERM/SIGINT, how long in-flight requests may run before the process
    /// exits anyway.
    pub shutdown_grace: Duration,
    /// Silence after which an event stream (`Accept: text/event-stream`) sends a
    /// heartbeat comment.
    pub heartbeat: Duration,
    /// How long a finished job's record and result are kept.
    pub job_ttl: Duration,
    /// Ceilings on finished job records: count and bytes.
    pub jobs_max: usize,
    pub jobs_max_bytes: usize,
    /// What the requests in progress may hold at once, in bytes (`http::budget`).
    pub memory_budget_bytes: usize,
    /// Clients following job events at once, at most.
    pub max_followers: usize,
    /// The shared state of replicas (`COMPACTD_REDIS_URL`); `None`: in process.
    pub redis_url: Option<secrecy::SecretString>,
    /// A job's lease without renewal (`COMPACTD_JOB_LEASE_MS`).
    pub job_lease: Duration,
    /// The most one call to the shared state may take (`COMPACTD_STATE_TIMEOUT_MS`).
    pub state_timeout: Duration,
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
    pub branch_reserve_tokens: u64,
    pub context_window: u64,
    /// Checked compaction by default (a request's `pin` wins).
    pub pin: bool,
    /// Share of a summary's output budget the restored pinned section may take.
    pub pin_budget_share: f64,
    /// `madeProgress` needs at least this share fewer tokens (0.05: 5 %).
    pub min_progress: f64,
    pub prompts_dir: Option<PathBuf>,
    pub log_format: LogFormat,
    /// The summarizer: which one, its model candidates, deadlines, retries, cache.
    pub llm: LlmConfig,
    /// Accepted bearer tokens (none: no authentication).
    pub api_keys: ClientKeys,
    /// Serve the inspector page on `GET /` (`COMPACTD_INSPECTOR`).
    pub inspector: bool,
}

impl Default for Config {
    /// The defaults of `sources::RawSettings`, with nothing read from outside.
    fn default() -> Self {
        Config::from_settings(RawSettings::default(), &env_name, &|_| None)
            .expect("the defaults are a valid configuration")
    }
}

/// A share as the operator wrote it: figment reads a decimal from the environment as
/// an `f32` first (`0.1` → 0.10000000149…), so shares keep six decimals.
fn share_of(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

/// Checked compaction's settings, as the pipeline takes them: whether to
/// pin and verify, the restored section's share of a summary's output budget, and the
/// saving `madeProgress` requires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Checking {
    pub pin: bool,
    pub pin_budget_share: f64,
    pub min_progress: f64,
}

impl Default for Checking {
    fn default() -> Self {
        let s = RawSettings::default();
        Checking {
            pin: s.pin,
            pin_budget_share: s.pin_budget_share,
            min_progress: s.min_progress,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    File { path: String, message: String },
    #[error("invalid value for {name}: {message}")]
    Value { name: String, message: String },
}

impl Config {
    /// Loads from the process environment and the file it names.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(file, |k| std::env::var(k).ok())
    }

    /// Loads from the file (else the one `COMPACTD_CONFIG` names) and the environment
    /// that `env` looks up.
    pub fn load_from(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let named = env("COMPACTD_CONFIG")
            .filter(|v| !v.trim().is_empty())
            .map(|v| PathBuf::from(v.trim()));
        let file = file.or(named.as_deref());
        let layers = Layers::read(file, &env)?;
        let settings = layers.extract()?;
        Config::from_settings(settings, &|key| layers.name(key), &env)
    }

    /// The typed configuration of `s`; `name` gives the name an error shows for a key.
    fn from_settings(
        s: RawSettings,
        name: &dyn Fn(&str) -> String,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let positive = |value: u64, key: &str| {
            if value == 0 {
                Err(ConfigError::Value {
                    name: name(key),
                    message: "must be positive".into(),
                })
            } else {
                Ok(())
            }
        };
        positive(s.max_body_bytes as u64, "max_body_bytes")?;
        positive(s.max_entries as u64, "max_entries")?;
        positive(s.max_concurrency as u64, "max_concurrency")?;
        positive(s.request_timeout_secs, "request_timeout_secs")?;
        positive(s.heartbeat_ms, "heartbeat_ms")?;
        positive(s.job_ttl_secs, "job_ttl_secs")?;
        positive(s.jobs_max as u64, "jobs_max")?;
        positive(s.jobs_max_bytes as u64, "jobs_max_bytes")?;
        positive(s.memory_budget_bytes as u64, "memory_budget_bytes")?;
        positive(s.max_followers as u64, "max_followers")?;
        positive(s.job_lease_ms, "job_lease_ms")?;
        positive(s.state_timeout_ms, "state_timeout_ms")?;
        if let Some(url) = &s.redis_url {
            url::check_redis_url(secrecy::ExposeSecret::expose_secret(url)).map_err(|message| {
                ConfigError::Value {
                    name: name("redis_url"),
                    message,
                }
            })?;
        }
        let share = |value: f64, key: &str| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(ConfigError::Value {
                    name: name(key),
                    message: "must be between 0 and 1".into(),
                })
            }
        };
        share(s.pin_budget_share, "pin_budget_share")?;
        share(s.min_progress, "min_progress")?;
        let api_keys = secrets::client_keys(
            s.api_keys.as_ref(),
            s.api_keys_file
                .as_deref()
                .map(|p| (p, name("api_keys_file"))),
        )?;
        let request_timeout = Duration::from_secs(s.request_timeout_secs);
        let llm = LlmConfig::from_settings(&s, request_timeout, name, env)?;
        llm.validate_named(name)?;
        Ok(Config {
            listen: s.listen,
            max_body_bytes: s.max_body_bytes,
            max_entries: s.max_entries,
            max_concurrency: s.max_concurrency,
            request_timeout,
            shutdown_grace: Duration::from_secs(s.shutdown_grace_secs),
            heartbeat: Duration::from_millis(s.heartbeat_ms),
            job_ttl: Duration::from_secs(s.job_ttl_secs),
            jobs_max: s.jobs_max,
            jobs_max_bytes: s.jobs_max_bytes,
            memory_budget_bytes: s.memory_budget_bytes,
            max_followers: s.max_followers,
            redis_url: s.redis_url.clone(),
            job_lease: Duration::from_millis(s.job_lease_ms),
            state_timeout: Duration::from_millis(s.state_timeout_ms),
            keep_recent_tokens: s.keep_recent_tokens,
            reserve_tokens: s.reserve_tokens,
            branch_reserve_tokens: s.branch_reserve_tokens,
            context_window: s.context_window,
            pin: s.pin,
            pin_budget_share: share_of(s.pin_budget_share),
            min_progress: share_of(s.min_progress),
            prompts_dir: s.prompts_dir,
            log_format: s.log_format,
            llm,
            api_keys,
            inspector: s.inspector,
        })
    }

    /// The checked-compaction defaults.
    pub fn checking(&self) -> Checking {
        Checking {
            pin: self.pin,
            pin_budget_share: self.pin_budget_share,
            min_progress: self.min_progress,
        }
    }

    /// Default compaction settings.
    pub fn settings(&self) -> CompactionSettings {
        CompactionSettings {
            keep_recent_tokens: self.keep_recent_tokens,
            reserve_tokens: self.reserve_tokens,
        }
    }
}

#[cfg(test)]
mod tests;
