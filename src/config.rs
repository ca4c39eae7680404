//! Configuration: defaults, then an optional TOML file (`--config` /
//! `COMPACTD_CONFIG`), then environment variables. Invalid values stop start-up with a
//! message naming the setting.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::compaction::Settings;
use crate::summarize::llm::redact_url;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Json,
    Pretty,
}

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// Entries (header included) a session body may hold: bounds the memory a small
    /// body can claim, since each parsed entry costs far more than its shortest JSON.
    pub max_entries: usize,
    pub max_concurrency: usize,
    #[serde(with = "secs")]
    pub request_timeout: Duration,
    /// After SIGTERM/SIGINT, how long in-flight requests may run before the process
    /// exits anyway.
    #[serde(with = "secs")]
    pub shutdown_grace: Duration,
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
    pub branch_reserve_tokens: u64,
    pub context_window: u64,
    pub prompts_dir: Option<PathBuf>,
    pub log_format: LogFormat,
    /// The summarizer: which one, its model candidates, deadlines, retries, cache.
    pub llm: LlmConfig,
    /// Accepted bearer tokens (none: no authentication).
    #[serde(skip)]
    pub api_keys: ApiKeys,
}

/// Accepted bearer tokens, kept only as SHA-256 digests and compared in constant time.
#[derive(Clone, Default)]
pub struct ApiKeys(Vec<[u8; 32]>);

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} configured)", self.0.len())
    }
}

impl ApiKeys {
    pub fn new<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Self {
        use sha2::Digest;
        ApiKeys(
            keys.into_iter()
                .map(|k| k.as_ref().trim().to_string())
                .filter(|k| !k.is_empty())
                .map(|k| sha2::Sha256::digest(k.as_bytes()).into())
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `token` is one of the keys. Every key is compared, in constant time, on
    /// digests (so neither the content nor the length of a key leaks through timing).
    pub fn accepts(&self, token: &str) -> bool {
        use sha2::Digest;
        use subtle::ConstantTimeEq;
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        self.0
            .iter()
            .fold(subtle::Choice::from(0), |found, k| found | k.ct_eq(&digest))
            .into()
    }
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
}

mod millis {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// Which summarizer answers when a request names no model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummarizerChoice {
    /// The built-in extractive summarizer; no network.
    Extractive,
    /// The model candidates (the single one from the environment is OpenAI-compatible).
    Openai,
    /// The model candidates (the single one from the environment speaks the Messages API).
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
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Openai => "openai",
            ModelKind::Anthropic => "anthropic",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            ModelKind::Openai => "https://api.openai.com/v1",
            ModelKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The conventional environment variable holding this kind's API key.
    pub fn key_env(self) -> &'static str {
        match self {
            ModelKind::Openai => "OPENAI_API_KEY",
            ModelKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// One model candidate. Serializes without its key (only whether one is set) and with
/// the base URL stripped of credentials and query.
#[derive(Clone, Serialize)]
pub struct ModelConfig {
    /// Unique among the candidates; what a request's `model` names, and the provider
    /// part of `Summary.model` (`name/model`).
    pub name: String,
    pub kind: ModelKind,
    /// The model id sent upstream.
    pub model: String,
    #[serde(serialize_with = "ser_url")]
    pub base_url: String,
    /// Tokens the model accepts (prompt + output).
    pub context_window: u64,
    #[serde(rename = "api_key_set", serialize_with = "ser_key_set")]
    pub api_key: Option<SecretString>,
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
            .finish()
    }
}

fn ser_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact_url(url))
}

fn ser_key_set<S: serde::Serializer>(key: &Option<SecretString>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(key.is_some())
}

/// Default context window of a model candidate.
pub const DEFAULT_MODEL_CONTEXT_WINDOW: u64 = 128_000;

/// Summarizer settings.
#[derive(Debug, Clone, Serialize)]
pub struct LlmConfig {
    pub summarizer: SummarizerChoice,
    pub fallback: FallbackPolicy,
    /// Tried in order.
    pub models: Vec<ModelConfig>,
    /// Timeout of one upstream attempt.
    #[serde(with = "secs")]
    pub upstream_timeout: Duration,
    /// Overall deadline of one summarize call (the request timeout).
    #[serde(with = "secs")]
    pub deadline: Duration,
    /// Retries of a transient failure, per candidate.
    pub retries: u32,
    /// Exponential backoff with full jitter: `rand(0, min(cap, base × 2^n))`.
    #[serde(with = "millis")]
    pub backoff_base: Duration,
    #[serde(with = "millis")]
    pub backoff_cap: Duration,
    /// Bounds of the in-memory cache of identical requests (0 entries: no cache).
    pub cache_entries: usize,
    pub cache_bytes: u64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            summarizer: SummarizerChoice::Extractive,
            fallback: FallbackPolicy::Extractive,
            models: Vec::new(),
            upstream_timeout: Duration::from_secs(60),
            deadline: Duration::from_secs(120),
            retries: 2,
            backoff_base: Duration::from_millis(250),
            backoff_cap: Duration::from_secs(8),
            cache_entries: 1024,
            cache_bytes: 32 * 1024 * 1024,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body_bytes: 64 * 1024 * 1024,
            max_entries: 200_000,
            max_concurrency: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            request_timeout: Duration::from_secs(120),
            // Kubernetes' default terminationGracePeriodSeconds is 30: leave it headroom.
            shutdown_grace: Duration::from_secs(25),
            keep_recent_tokens: 20_000,
            reserve_tokens: 16_384,
            branch_reserve_tokens: 16_384,
            context_window: 128_000,
            prompts_dir: None,
            log_format: LogFormat::Pretty,
            llm: LlmConfig::default(),
            api_keys: ApiKeys::default(),
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

/// The TOML file: the same settings as the environment, snake_case without the prefix.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    max_body_bytes: Option<usize>,
    max_entries: Option<usize>,
    max_concurrency: Option<usize>,
    request_timeout_secs: Option<u64>,
    shutdown_grace_secs: Option<u64>,
    keep_recent_tokens: Option<u64>,
    reserve_tokens: Option<u64>,
    branch_reserve_tokens: Option<u64>,
    context_window: Option<u64>,
    prompts_dir: Option<PathBuf>,
    log_format: Option<LogFormat>,
    summarizer: Option<SummarizerChoice>,
    fallback: Option<FallbackPolicy>,
    model: Option<String>,
    base_url: Option<String>,
    model_context_window: Option<u64>,
    upstream_timeout_secs: Option<u64>,
    retries: Option<u32>,
    backoff_base_ms: Option<u64>,
    backoff_cap_ms: Option<u64>,
    cache_entries: Option<usize>,
    cache_bytes: Option<u64>,
    models: Option<Vec<FileModel>>,
}

/// A `[[models]]` table. Keys come from `api_key_env` / `api_key_file`, never inline.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    name: Option<String>,
    kind: ModelKind,
    model: String,
    base_url: Option<String>,
    context_window: Option<u64>,
    api_key_env: Option<String>,
    api_key_file: Option<PathBuf>,
}

/// The LLM settings gathered from the file and the environment, before candidates are
/// assembled and keys resolved.
#[derive(Default)]
struct LlmSources {
    summarizer: Option<(SummarizerChoice, &'static str)>,
    model: Option<(String, &'static str)>,
    base_url: Option<(String, &'static str)>,
    model_context_window: Option<u64>,
    models: Vec<FileModel>,
}

impl Config {
    /// Loads from the process environment and the file it names.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(file, |k| std::env::var(k).ok())
    }

    pub fn load_from(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut c = Config::default();
        let mut llm = LlmSources::default();
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| env("COMPACTD_CONFIG").map(PathBuf::from));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let f: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::File {
                path: path.display().to_string(),
                message: e.message().to_string(),
            })?;
            if let Some(v) = f.listen {
                c.listen = parse_value("listen", &v)?;
            }
            set(&mut c.max_body_bytes, f.max_body_bytes);
            set(&mut c.max_entries, f.max_entries);
            set(&mut c.max_concurrency, f.max_concurrency);
            set(
                &mut c.request_timeout,
                f.request_timeout_secs.map(Duration::from_secs),
            );
            set(
                &mut c.shutdown_grace,
                f.shutdown_grace_secs.map(Duration::from_secs),
            );
            set(&mut c.keep_recent_tokens, f.keep_recent_tokens);
            set(&mut c.reserve_tokens, f.reserve_tokens);
            set(&mut c.branch_reserve_tokens, f.branch_reserve_tokens);
            set(&mut c.context_window, f.context_window);
            if f.prompts_dir.is_some() {
                c.prompts_dir = f.prompts_dir;
            }
            set(&mut c.log_format, f.log_format);
            llm.summarizer = f.summarizer.map(|v| (v, "summarizer"));
            set(&mut c.llm.fallback, f.fallback);
            llm.model = f.model.map(|v| (v, "model"));
            llm.base_url = f.base_url.map(|v| (v, "base_url"));
            llm.model_context_window = f.model_context_window;
            set(
                &mut c.llm.upstream_timeout,
                f.upstream_timeout_secs.map(Duration::from_secs),
            );
            set(&mut c.llm.retries, f.retries);
            set(
                &mut c.llm.backoff_base,
                f.backoff_base_ms.map(Duration::from_millis),
            );
            set(
                &mut c.llm.backoff_cap,
                f.backoff_cap_ms.map(Duration::from_millis),
            );
            set(&mut c.llm.cache_entries, f.cache_entries);
            set(&mut c.llm.cache_bytes, f.cache_bytes);
            llm.models = f.models.unwrap_or_default();
        }
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = var("COMPACTD_LISTEN") {
            c.listen = parse_value("COMPACTD_LISTEN", &v)?;
        }
        if let Some(v) = var("COMPACTD_MAX_BODY_BYTES") {
            c.max_body_bytes = parse_value("COMPACTD_MAX_BODY_BYTES", &v)?;
        }
        if let Some(v) = var("COMPACTD_MAX_ENTRIES") {
            c.max_entries = parse_value("COMPACTD_MAX_ENTRIES", &v)?;
        }
        if let Some(v) = var("COMPACTD_SHUTDOWN_GRACE_SECS") {
            c.shutdown_grace =
                Duration::from_secs(parse_value("COMPACTD_SHUTDOWN_GRACE_SECS", &v)?);
        }
        if let Some(v) = var("COMPACTD_MAX_CONCURRENCY") {
            c.max_concurrency = parse_value("COMPACTD_MAX_CONCURRENCY", &v)?;
        }
        if let Some(v) = var("COMPACTD_REQUEST_TIMEOUT_SECS") {
            c.request_timeout =
                Duration::from_secs(parse_value("COMPACTD_REQUEST_TIMEOUT_SECS", &v)?);
        }
        if let Some(v) = var("COMPACTD_KEEP_RECENT_TOKENS") {
            c.keep_recent_tokens = parse_value("COMPACTD_KEEP_RECENT_TOKENS", &v)?;
        }
        if let Some(v) = var("COMPACTD_RESERVE_TOKENS") {
            c.reserve_tokens = parse_value("COMPACTD_RESERVE_TOKENS", &v)?;
        }
        if let Some(v) = var("COMPACTD_BRANCH_RESERVE_TOKENS") {
            c.branch_reserve_tokens = parse_value("COMPACTD_BRANCH_RESERVE_TOKENS", &v)?;
        }
        if let Some(v) = var("COMPACTD_CONTEXT_WINDOW") {
            c.context_window = parse_value("COMPACTD_CONTEXT_WINDOW", &v)?;
        }
        if let Some(v) = var("COMPACTD_PROMPTS_DIR") {
            c.prompts_dir = Some(PathBuf::from(v));
        }
        if let Some(v) = var("COMPACTD_LOG_FORMAT") {
            c.log_format = match v.trim() {
                "json" => LogFormat::Json,
                "pretty" => LogFormat::Pretty,
                other => {
                    return Err(ConfigError::Value {
                        name: "COMPACTD_LOG_FORMAT".into(),
                        message: format!("expected `json` or `pretty`, got {other:?}"),
                    })
                }
            };
        }
        if let Some(v) = var("COMPACTD_SUMMARIZER") {
            let choice = match v.trim() {
                "extractive" => SummarizerChoice::Extractive,
                "openai" => SummarizerChoice::Openai,
                "anthropic" => SummarizerChoice::Anthropic,
                other => {
                    return Err(ConfigError::Value {
                        name: "COMPACTD_SUMMARIZER".into(),
                        message: format!(
                            "expected `extractive`, `openai` or `anthropic`, got {other:?}"
                        ),
                    })
                }
            };
            llm.summarizer = Some((choice, "COMPACTD_SUMMARIZER"));
        }
        if let Some(v) = var("COMPACTD_FALLBACK") {
            c.llm.fallback = match v.trim() {
                "extractive" => FallbackPolicy::Extractive,
                "none" => FallbackPolicy::None,
                other => {
                    return Err(ConfigError::Value {
                        name: "COMPACTD_FALLBACK".into(),
                        message: format!("expected `extractive` or `none`, got {other:?}"),
                    })
                }
            };
        }
        if let Some(v) = var("COMPACTD_MODEL") {
            llm.model = Some((v.trim().to_string(), "COMPACTD_MODEL"));
        }
        if let Some(v) = var("COMPACTD_BASE_URL") {
            llm.base_url = Some((v.trim().to_string(), "COMPACTD_BASE_URL"));
        }
        if let Some(v) = var("COMPACTD_MODEL_CONTEXT_WINDOW") {
            llm.model_context_window = Some(parse_value("COMPACTD_MODEL_CONTEXT_WINDOW", &v)?);
        }
        if let Some(v) = var("COMPACTD_UPSTREAM_TIMEOUT_SECS") {
            c.llm.upstream_timeout =
                Duration::from_secs(parse_value("COMPACTD_UPSTREAM_TIMEOUT_SECS", &v)?);
        }
        if let Some(v) = var("COMPACTD_RETRIES") {
            c.llm.retries = parse_value("COMPACTD_RETRIES", &v)?;
        }
        let mut keys: Vec<String> = var("COMPACTD_API_KEYS")
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        if let Some(path) = var("COMPACTD_API_KEYS_FILE") {
            let text = std::fs::read_to_string(path.trim()).map_err(|e| ConfigError::Value {
                name: "COMPACTD_API_KEYS_FILE".into(),
                message: format!("cannot read {}: {}", path.trim(), e.kind()),
            })?;
            keys.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string),
            );
            if keys.is_empty() {
                return Err(ConfigError::Value {
                    name: "COMPACTD_API_KEYS_FILE".into(),
                    message: "the file holds no key".into(),
                });
            }
        }
        c.api_keys = ApiKeys::new(keys);
        // A summarize call must end (with the fallback if need be) before the request's
        // own deadline answers 504.
        c.llm.deadline = c.request_timeout.mul_f64(0.9);
        c.llm.models = assemble_models(llm, &mut c.llm.summarizer, &env)?;
        c.validate()?;
        Ok(c)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |name: &str, message: &str| {
            Err(ConfigError::Value {
                name: name.into(),
                message: message.into(),
            })
        };
        if self.max_body_bytes == 0 {
            return bad("COMPACTD_MAX_BODY_BYTES", "must be positive");
        }
        if self.max_entries == 0 {
            return bad("COMPACTD_MAX_ENTRIES", "must be positive");
        }
        if self.max_concurrency == 0 {
            return bad("COMPACTD_MAX_CONCURRENCY", "must be positive");
        }
        if self.request_timeout.is_zero() {
            return bad("COMPACTD_REQUEST_TIMEOUT_SECS", "must be positive");
        }
        self.llm.validate()
    }

    /// Default compaction settings.
    pub fn settings(&self) -> Settings {
        Settings {
            keep_recent_tokens: self.keep_recent_tokens,
            reserve_tokens: self.reserve_tokens,
        }
    }
}

impl LlmConfig {
    /// Checks the values an [`Engine`](crate::summarize::llm::Engine) relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |name: &str, message: &str| {
            Err(ConfigError::Value {
                name: name.into(),
                message: message.into(),
            })
        };
        if self.upstream_timeout.is_zero() {
            return bad("COMPACTD_UPSTREAM_TIMEOUT_SECS", "must be positive");
        }
        if self.deadline.is_zero() {
            return bad("COMPACTD_REQUEST_TIMEOUT_SECS", "must be positive");
        }
        if self.backoff_base > self.backoff_cap {
            return bad("backoff_base_ms", "must not exceed backoff_cap_ms");
        }
        if self.summarizer != SummarizerChoice::Extractive && self.models.is_empty() {
            return bad(
                "COMPACTD_MODEL",
                "required when COMPACTD_SUMMARIZER is `openai` or `anthropic` and the config \
                 file lists no [[models]]",
            );
        }
        let mut names = std::collections::HashSet::new();
        for (i, m) in self.models.iter().enumerate() {
            let field = |f: &str| format!("models[{i}].{f}");
            if m.name.trim().is_empty() {
                return bad(&field("name"), "must not be empty");
            }
            if !names.insert(m.name.as_str()) {
                return bad(
                    &field("name"),
                    &format!(
                        "{:?} is used twice: give each model candidate a distinct name",
                        m.name
                    ),
                );
            }
            if m.model.trim().is_empty() {
                return bad(&field("model"), "must not be empty");
            }
            if m.context_window == 0 {
                return bad(&field("context_window"), "must be positive");
            }
            check_base_url(&m.base_url).map_err(|message| ConfigError::Value {
                name: field("base_url"),
                message,
            })?;
        }
        Ok(())
    }
}

/// A base URL must be absolute http(s). The message never quotes credentials.
fn check_base_url(url: &str) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(()),
        Ok(_) => Err(format!(
            "expected an http(s) URL, got {:?}",
            redact_url(url)
        )),
        Err(e) => Err(format!("not a URL: {e}")),
    }
}

/// Builds the candidate list: the single candidate of `model`/`base_url`
/// (`COMPACTD_MODEL`/`COMPACTD_BASE_URL`) first, then the file's `[[models]]`; and settles
/// the summarizer (the default is extractive unless the file lists models).
fn assemble_models(
    src: LlmSources,
    summarizer: &mut SummarizerChoice,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<ModelConfig>, ConfigError> {
    let bad = |name: &str, message: String| ConfigError::Value {
        name: name.into(),
        message,
    };
    *summarizer = match (src.summarizer, src.models.first()) {
        (Some((choice, _)), _) => choice,
        (None, Some(first)) => match first.kind {
            ModelKind::Openai => SummarizerChoice::Openai,
            ModelKind::Anthropic => SummarizerChoice::Anthropic,
        },
        (None, None) => SummarizerChoice::Extractive,
    };
    let mut models = Vec::new();
    let kind = match *summarizer {
        SummarizerChoice::Openai => Some(ModelKind::Openai),
        SummarizerChoice::Anthropic => Some(ModelKind::Anthropic),
        SummarizerChoice::Extractive => None,
    };
    match (kind, src.model) {
        (Some(kind), Some((model, _))) => {
            let base_name = src
                .base_url
                .as_ref()
                .map_or("COMPACTD_BASE_URL", |(_, n)| *n);
            let base_url = src
                .base_url
                .map_or_else(|| kind.default_base_url().to_string(), |(u, _)| u);
            check_base_url(&base_url).map_err(|m| bad(base_name, m))?;
            if model.is_empty() {
                return Err(bad("COMPACTD_MODEL", "must not be empty".into()));
            }
            models.push(ModelConfig {
                name: kind.as_str().to_string(),
                kind,
                model,
                base_url,
                context_window: src
                    .model_context_window
                    .unwrap_or(DEFAULT_MODEL_CONTEXT_WINDOW),
                api_key: resolve_key(kind, None, None, env)?,
            });
        }
        (None, Some((_, name))) if src.summarizer.is_none() => {
            return Err(bad(
                name,
                "a model is set but COMPACTD_SUMMARIZER is not: set it to `openai` or \
                 `anthropic`"
                    .into(),
            ));
        }
        (_, None) => {
            if let Some((_, name)) = src.base_url {
                return Err(bad(
                    name,
                    "a base URL is set without a model: set COMPACTD_MODEL too".into(),
                ));
            }
        }
        // Explicitly extractive: the single candidate is not used.
        (None, Some(_)) => {}
    }
    if src.model_context_window == Some(0) {
        return Err(bad(
            "COMPACTD_MODEL_CONTEXT_WINDOW",
            "must be positive".into(),
        ));
    }
    for (i, m) in src.models.into_iter().enumerate() {
        let api_key = resolve_key(
            m.kind,
            m.api_key_env
                .as_deref()
                .map(|v| (v, format!("models[{i}].api_key_env"))),
            m.api_key_file
                .as_deref()
                .map(|p| (p, format!("models[{i}].api_key_file"))),
            env,
        )?;
        models.push(ModelConfig {
            name: m.name.unwrap_or_else(|| m.kind.as_str().to_string()),
            kind: m.kind,
            model: m.model,
            base_url: m
                .base_url
                .unwrap_or_else(|| m.kind.default_base_url().to_string()),
            context_window: m.context_window.unwrap_or(DEFAULT_MODEL_CONTEXT_WINDOW),
            api_key,
        });
    }
    Ok(models)
}

/// A candidate's key: its own `api_key_env` / `api_key_file`, else
/// `COMPACTD_LLM_API_KEY_FILE`, else `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` by kind, else
/// none (a local server). A named source that is missing or empty is an error; no message
/// quotes a key.
fn resolve_key(
    kind: ModelKind,
    key_env: Option<(&str, String)>,
    key_file: Option<(&Path, String)>,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<SecretString>, ConfigError> {
    let from_file = |path: &Path, name: &str| -> Result<SecretString, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Value {
            name: name.into(),
            message: format!("cannot read {}: {e}", path.display()),
        })?;
        let key = text.trim();
        if key.is_empty() {
            return Err(ConfigError::Value {
                name: name.into(),
                message: format!("{} is empty", path.display()),
            });
        }
        Ok(SecretString::from(key))
    };
    if let Some((var, name)) = key_env {
        return match env(var).filter(|v| !v.trim().is_empty()) {
            Some(v) => Ok(Some(SecretString::from(v.trim()))),
            None => Err(ConfigError::Value {
                name,
                message: format!("the environment variable {var} is not set"),
            }),
        };
    }
    if let Some((path, name)) = key_file {
        return from_file(path, &name).map(Some);
    }
    if let Some(path) = env("COMPACTD_LLM_API_KEY_FILE").filter(|v| !v.trim().is_empty()) {
        return from_file(Path::new(path.trim()), "COMPACTD_LLM_API_KEY_FILE").map(Some);
    }
    Ok(env(kind.key_env())
        .filter(|v| !v.trim().is_empty())
        .map(|v| SecretString::from(v.trim())))
}

fn set<T>(slot: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *slot = v;
    }
}

fn parse_value<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    v.trim().parse().map_err(|e: T::Err| ConfigError::Value {
        name: name.into(),
        message: format!("{e} (got {:?})", v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_from_env_and_file() {
        let dir = std::env::temp_dir().join(format!("compactd-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("keys");
        std::fs::write(&file, "# comment\nkey-two\n\n").unwrap();
        let path = file.display().to_string();
        let c = Config::load_from(None, |k| match k {
            "COMPACTD_API_KEYS" => Some("key-one, ".into()),
            "COMPACTD_API_KEYS_FILE" => Some(path.clone()),
            _ => None,
        })
        .unwrap();
        assert!(c.api_keys.accepts("key-one") && c.api_keys.accepts("key-two"));
        assert!(!c.api_keys.accepts("key-three") && !c.api_keys.accepts(""));
        assert!(!format!("{:?}", c).contains("key-one"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn env_overrides_defaults_and_bad_values_are_named() {
        let env = |k: &str| match k {
            "COMPACTD_KEEP_RECENT_TOKENS" => Some("1000".to_string()),
            "COMPACTD_LISTEN" => Some("0.0.0.0:9000".to_string()),
            _ => None,
        };
        let c = Config::load_from(None, env).unwrap();
        assert_eq!(c.keep_recent_tokens, 1000);
        assert_eq!(c.listen.port(), 9000);
        let err = Config::load_from(None, |k| {
            (k == "COMPACTD_RESERVE_TOKENS").then(|| "lots".into())
        })
        .unwrap_err();
        assert!(err.to_string().contains("COMPACTD_RESERVE_TOKENS"), "{err}");
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::load_from(None, env_of(pairs))
    }

    fn temp_file(name: &str, contents: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("compactd-config-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn assert_names(result: Result<Config, ConfigError>, name: &str) {
        match result {
            Err(ConfigError::Value { name: n, message }) => {
                assert_eq!(n, name, "{message}")
            }
            Err(other) => panic!("expected a value error for {name}, got {other}"),
            Ok(_) => panic!("expected a value error for {name}"),
        }
    }

    #[test]
    fn llm_defaults() {
        let c = load(&[]).unwrap();
        let l = &c.llm;
        assert_eq!(l.summarizer, SummarizerChoice::Extractive);
        assert_eq!(l.fallback, FallbackPolicy::Extractive);
        assert!(l.models.is_empty());
        assert_eq!(l.upstream_timeout, Duration::from_secs(60));
        // The summarizer deadline leaves a tenth of the request's for the fallback.
        assert_eq!(l.deadline, Duration::from_secs(108));
        assert_eq!(l.retries, 2);
        let c = load(&[("COMPACTD_REQUEST_TIMEOUT_SECS", "30")]).unwrap();
        assert_eq!(c.llm.deadline, Duration::from_secs(27));
    }

    #[test]
    fn llm_from_env() {
        let c = load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "gpt-4.1-mini"),
            ("OPENAI_API_KEY", "sk-test-SECRET-123"),
            ("ANTHROPIC_API_KEY", "other"),
            ("COMPACTD_FALLBACK", "none"),
            ("COMPACTD_UPSTREAM_TIMEOUT_SECS", "5"),
            ("COMPACTD_RETRIES", "0"),
            ("COMPACTD_MODEL_CONTEXT_WINDOW", "32000"),
        ])
        .unwrap();
        let l = &c.llm;
        assert_eq!(l.summarizer, SummarizerChoice::Openai);
        assert_eq!(l.fallback, FallbackPolicy::None);
        assert_eq!(l.upstream_timeout, Duration::from_secs(5));
        assert_eq!(l.retries, 0);
        assert_eq!(l.models.len(), 1);
        let m = &l.models[0];
        assert_eq!(
            (
                m.name.as_str(),
                m.kind,
                m.model.as_str(),
                m.base_url.as_str()
            ),
            (
                "openai",
                ModelKind::Openai,
                "gpt-4.1-mini",
                "https://api.openai.com/v1"
            )
        );
        assert_eq!(m.context_window, 32000);
        assert!(m.api_key.is_some());
        let shown = format!("{c:?} {}", serde_json::to_string(&c).unwrap());
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains(r#""api_key_set":true"#), "{shown}");

        let c = load(&[
            ("COMPACTD_SUMMARIZER", "anthropic"),
            ("COMPACTD_MODEL", "claude-haiku-4-5"),
            (
                "COMPACTD_BASE_URL",
                "https://user:pw@proxy.example/anthropic?token=t",
            ),
            ("ANTHROPIC_API_KEY", "ak"),
        ])
        .unwrap();
        let m = &c.llm.models[0];
        assert_eq!(
            (m.name.as_str(), m.kind),
            ("anthropic", ModelKind::Anthropic)
        );
        assert_eq!(m.context_window, DEFAULT_MODEL_CONTEXT_WINDOW);
        let shown = format!("{c:?} {}", serde_json::to_string(&c).unwrap());
        assert!(
            !shown.contains("pw@") && !shown.contains("token="),
            "{shown}"
        );

        // A local server needs no key.
        let c = load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "llama3"),
            ("COMPACTD_BASE_URL", "http://127.0.0.1:11434/v1"),
        ])
        .unwrap();
        assert!(c.llm.models[0].api_key.is_none());
    }

    #[test]
    fn llm_env_errors_name_the_variable() {
        assert_names(
            load(&[("COMPACTD_SUMMARIZER", "gpt")]),
            "COMPACTD_SUMMARIZER",
        );
        assert_names(load(&[("COMPACTD_FALLBACK", "maybe")]), "COMPACTD_FALLBACK");
        assert_names(load(&[("COMPACTD_RETRIES", "-1")]), "COMPACTD_RETRIES");
        assert_names(
            load(&[("COMPACTD_UPSTREAM_TIMEOUT_SECS", "soon")]),
            "COMPACTD_UPSTREAM_TIMEOUT_SECS",
        );
        assert_names(
            load(&[("COMPACTD_UPSTREAM_TIMEOUT_SECS", "0")]),
            "COMPACTD_UPSTREAM_TIMEOUT_SECS",
        );
        assert_names(load(&[("COMPACTD_SUMMARIZER", "openai")]), "COMPACTD_MODEL");
        assert_names(load(&[("COMPACTD_MODEL", "gpt-4.1")]), "COMPACTD_MODEL");
        assert_names(
            load(&[("COMPACTD_BASE_URL", "http://127.0.0.1:1/v1")]),
            "COMPACTD_BASE_URL",
        );
        let bad_url = load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "m"),
            ("COMPACTD_BASE_URL", "ftp://user:hunter2@host/"),
        ]);
        assert_names(bad_url, "COMPACTD_BASE_URL");
        let err = load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "m"),
            ("COMPACTD_BASE_URL", "ftp://user:hunter2@host/"),
        ])
        .unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert_names(
            load(&[
                ("COMPACTD_SUMMARIZER", "openai"),
                ("COMPACTD_MODEL", "m"),
                ("COMPACTD_MODEL_CONTEXT_WINDOW", "0"),
            ]),
            "COMPACTD_MODEL_CONTEXT_WINDOW",
        );
    }

    #[test]
    fn llm_key_file() {
        let key = temp_file("key", "  sk-from-file\n");
        let c = load(&[
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "m"),
            ("OPENAI_API_KEY", "sk-from-env"),
            ("COMPACTD_LLM_API_KEY_FILE", key.to_str().unwrap()),
        ])
        .unwrap();
        use secrecy::ExposeSecret;
        let got = c.llm.models[0].api_key.as_ref().unwrap().expose_secret();
        assert_eq!(got, "sk-from-file");
        std::fs::remove_file(&key).unwrap();
        assert_names(
            load(&[
                ("COMPACTD_SUMMARIZER", "openai"),
                ("COMPACTD_MODEL", "m"),
                ("COMPACTD_LLM_API_KEY_FILE", key.to_str().unwrap()),
            ]),
            "COMPACTD_LLM_API_KEY_FILE",
        );
    }

    #[test]
    fn llm_from_file() {
        use secrecy::ExposeSecret;
        let key = temp_file("toml-key", "ak-file\n");
        let toml = format!(
            r#"
retries = 1
upstream_timeout_secs = 20
fallback = "none"
backoff_base_ms = 10
backoff_cap_ms = 100

[[models]]
name = "fast"
kind = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:8000/v1"
context_window = 64000
api_key_env = "FAST_KEY"

[[models]]
kind = "anthropic"
model = "claude-haiku-4-5"
api_key_file = "{}"
"#,
            key.display()
        );
        let file = temp_file("models.toml", &toml);
        let env = env_of(&[("FAST_KEY", "fk"), ("OPENAI_API_KEY", "unused")]);
        let c = Config::load_from(Some(&file), env).unwrap();
        let l = &c.llm;
        assert_eq!(
            l.summarizer,
            SummarizerChoice::Openai,
            "implied by [[models]]"
        );
        assert_eq!(l.fallback, FallbackPolicy::None);
        assert_eq!(l.retries, 1);
        assert_eq!(l.upstream_timeout, Duration::from_secs(20));
        assert_eq!(l.backoff_base, Duration::from_millis(10));
        assert_eq!(l.backoff_cap, Duration::from_millis(100));
        let names: Vec<_> = l.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["fast", "anthropic"]);
        assert_eq!(l.models[0].context_window, 64000);
        assert_eq!(l.models[0].api_key.as_ref().unwrap().expose_secret(), "fk");
        assert_eq!(l.models[1].base_url, "https://api.anthropic.com");
        assert_eq!(
            l.models[1].api_key.as_ref().unwrap().expose_secret(),
            "ak-file"
        );

        // The environment's single candidate goes first; COMPACTD_SUMMARIZER wins.
        let env = env_of(&[
            ("FAST_KEY", "fk"),
            ("COMPACTD_SUMMARIZER", "openai"),
            ("COMPACTD_MODEL", "gpt-4.1"),
        ]);
        let c = Config::load_from(Some(&file), env).unwrap();
        let names: Vec<_> = c.llm.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["openai", "fast", "anthropic"]);

        // A named key variable that is not set is an error naming the table.
        assert_names(
            Config::load_from(Some(&file), env_of(&[])),
            "models[0].api_key_env",
        );
        // An explicit extractive summarizer keeps the candidates but uses none by default.
        let env = env_of(&[("FAST_KEY", "fk"), ("COMPACTD_SUMMARIZER", "extractive")]);
        let c = Config::load_from(Some(&file), env).unwrap();
        assert_eq!(c.llm.summarizer, SummarizerChoice::Extractive);
        assert_eq!(c.llm.models.len(), 2);
        std::fs::remove_file(&file).unwrap();

        let dup = temp_file(
            "dup.toml",
            "[[models]]\nkind = \"openai\"\nmodel = \"a\"\n[[models]]\nkind = \"openai\"\nmodel = \"b\"\n",
        );
        assert_names(Config::load_from(Some(&dup), env_of(&[])), "models[1].name");
        std::fs::remove_file(&dup).unwrap();

        let inline = temp_file(
            "inline.toml",
            "[[models]]\nkind = \"openai\"\nmodel = \"a\"\napi_key = \"sk-inline\"\n",
        );
        match Config::load_from(Some(&inline), env_of(&[])) {
            Err(ConfigError::File { message, .. }) => {
                assert!(message.contains("api_key"), "{message}")
            }
            other => panic!("inline keys are refused: {other:?}"),
        }
        std::fs::remove_file(&inline).unwrap();

        let bad = temp_file(
            "bad.toml",
            "[[models]]\nkind = \"openai\"\nmodel = \"a\"\nbase_url = \"nope\"\n",
        );
        assert_names(
            Config::load_from(Some(&bad), env_of(&[])),
            "models[0].base_url",
        );
        std::fs::remove_file(&bad).unwrap();
        std::fs::remove_file(&key).unwrap();
    }
}
