//! Where settings come from, and the one place each is declared.
//!
//! [`RawSettings`] is the schema: one field per setting, with its default. A field's name is
//! its key in the TOML file and, upper-cased behind `COMPACTD_`, its environment variable
//! (`request_timeout_secs` ↔ `COMPACTD_REQUEST_TIMEOUT_SECS`), so every setting can be
//! set both ways and no list of names is kept by hand. figment layers the sources:
//! the defaults, then the file, then the environment; what the environment sets wins.
//!
//! Design decisions:
//! * The environment is read through a lookup function rather than the process table,
//!   so tests load configurations without touching the process's environment.
//! * Environment values are trimmed and an empty one counts as unset (a blank
//!   `COMPACTD_MODEL=` in a compose file must not become an empty model id). They are
//!   handed to figment as strings and extracted leniently, so `"120"` fills a number;
//!   the structured settings `models` and `moa` are written in the environment as inline
//!   TOML values (`COMPACTD_MODELS='[{kind = "openai", model = "m"}]'`,
//!   `COMPACTD_MOA='{proposers = ["local", "haiku"], aggregator = "haiku"}'`).
//! * Each value remembers its source, so an error names what the operator wrote: the
//!   variable for the environment, the key for the file.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::Format;
use figment::value::{Dict, Value};
use figment::{Figment, Metadata, Profile, Provider};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::choices::{FallbackPolicy, ModelKind, Strategy, SummarizerChoice};
use super::model_options::{OptionsSource, TokenLimitParam};
use super::{ConfigError, LogFormat};

/// The name of the file source in figment's metadata.
const FILE: &str = "config file";
/// The name of the environment source in figment's metadata.
const ENV: &str = "environment";
/// RawSettings whose environment value is structured (an inline list of tables).
const STRUCTURED: &[&str] = &["models", "moa", "model_options"];

/// Every setting, as the file and the environment spell it, with its default.
#[derive(Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawSettings {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    /// Entries (header included) a session body may hold.
    pub max_entries: usize,
    pub max_concurrency: usize,
    pub request_timeout_secs: u64,
    pub shutdown_grace_secs: u64,
    /// Silence after which an event stream sends a heartbeat comment (below the idle
    /// timeout of common proxies).
    pub heartbeat_ms: u64,
    /// How long a finished job's record and result are kept.
    pub job_ttl_secs: u64,
    /// Finished job records kept at most (the oldest go first).
    pub jobs_max: usize,
    /// Clients following a job's events (`GET /v1/jobs/{id}/events`) at once, at most.
    pub max_followers: usize,
    /// Bytes of finished job records (their events and results) kept at most.
    pub jobs_max_bytes: usize,
    /// What the requests in progress may hold at once, in bytes, estimated from their
    /// bodies (`http::budget`); one that would go past it gets 503 with `Retry-After`.
    pub memory_budget_bytes: usize,
    /// Shared state for replicas: `redis://` or `rediss://` (Valkey speaks
    /// the same protocol). Unset: everything stays in this process. Never shown: it may
    /// carry a password.
    #[serde(skip_serializing)]
    pub redis_url: Option<SecretString>,
    /// How long a job's lease lives without renewal; the runner renews it every third.
    pub job_lease_ms: u64,
    /// The most any one call to the shared state may take.
    pub state_timeout_ms: u64,
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
    pub branch_reserve_tokens: u64,
    pub context_window: u64,
    /// Checked compaction: pin what must survive and verify every summary.
    pub pin: bool,
    /// Share of a summary's output budget the restored pinned section may take.
    pub pin_budget_share: f64,
    /// `madeProgress` needs at least this share fewer tokens.
    pub min_progress: f64,
    pub prompts_dir: Option<PathBuf>,
    pub log_format: LogFormat,
    /// Unset: extractive, unless `models` lists candidates (then the first one's kind).
    pub summarizer: Option<SummarizerChoice>,
    pub fallback: FallbackPolicy,
    /// The single candidate's model id (kind from `summarizer`), tried before `models`.
    pub model: Option<String>,
    /// The single candidate's server [the kind's public API].
    pub base_url: Option<String>,
    /// The single candidate's context window [`DEFAULT_MODEL_CONTEXT_WINDOW`].
    ///
    /// [`DEFAULT_MODEL_CONTEXT_WINDOW`]: super::DEFAULT_MODEL_CONTEXT_WINDOW
    pub model_context_window: Option<u64>,
    /// The single candidate's options (`COMPACTD_MODEL_OPTIONS` as an inline TOML table
    /// with the keys of a `[[models]]` table's options).
    pub model_options: Option<OptionsSource>,
    pub upstream_timeout_secs: u64,
    /// A streaming answer silent this long is abandoned and retried (0: never); a
    /// candidate's `stall_ms` overrides it.
    pub model_stall_ms: u64,
    pub retries: u32,
    pub backoff_base_ms: u64,
    pub backoff_cap_ms: u64,
    pub cache_entries: usize,
    pub cache_bytes: u64,
    /// Further model candidates, tried in order.
    pub models: Vec<ModelSource>,
    /// Mixture-of-Agents: proposers, aggregator and the default strategy.
    pub moa: Option<MoaSource>,
    /// Accepted bearer tokens, comma-separated. Environment only: a key written into the
    /// config file is refused (name a file with `api_keys_file`).
    #[serde(skip_serializing)]
    pub api_keys: Option<SecretString>,
    /// A file of accepted bearer tokens, one a line (`#` starts a comment).
    pub api_keys_file: Option<PathBuf>,
    /// A file holding the upstream key of every candidate without its own
    /// (before `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
    pub llm_api_key_file: Option<PathBuf>,
    /// The inspector page on `GET /`.
    pub inspector: bool,
}

impl Default for RawSettings {
    fn default() -> Self {
        RawSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body_bytes: 64 * 1024 * 1024,
            // Bounds the memory a small body can claim: each parsed entry costs far more
            // than its shortest JSON.
            max_entries: 200_000,
            max_concurrency: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            request_timeout_secs: 120,
            // Kubernetes' default terminationGracePeriodSeconds is 30: leave it headroom.
            shutdown_grace_secs: 25,
            // Below the 60 s idle timeout of common proxies.
            heartbeat_ms: 15_000,
            job_ttl_secs: 3600,
            jobs_max: 1_000,
            max_followers: 256,
            // 256 MiB: about 30 results of a 2 MB session with every option on.
            jobs_max_bytes: 256 << 20,
            // 2 GiB: one request with the largest body (64 MiB) at its peak, with room for
            // smaller ones beside it.
            memory_budget_bytes: 2 << 30,
            redis_url: None,
            job_lease_ms: 10_000,
            state_timeout_ms: 1_000,
            keep_recent_tokens: 20_000,
            reserve_tokens: 16_384,
            branch_reserve_tokens: 16_384,
            context_window: 128_000,
            pin: true,
            pin_budget_share: 1.0,
            // hermes-agent's compressor requires the same real saving.
            min_progress: 0.05,
            prompts_dir: None,
            log_format: LogFormat::Pretty,
            summarizer: None,
            fallback: FallbackPolicy::Extractive,
            model: None,
            base_url: None,
            model_context_window: None,
            model_options: None,
            upstream_timeout_secs: 60,
            // Anthropic pings every few seconds and a model writes several tokens a
            // second: a minute of silence is a hung connection, not a slow model. Equal
            // to the default attempt timeout, so it only shortens what a raised
            // `upstream_timeout_secs` would wait.
            model_stall_ms: 60_000,
            retries: 2,
            backoff_base_ms: 250,
            backoff_cap_ms: 8_000,
            cache_entries: 1024,
            cache_bytes: 32 * 1024 * 1024,
            models: Vec::new(),
            moa: None,
            api_keys: None,
            api_keys_file: None,
            llm_api_key_file: None,
            inspector: true,
        }
    }
}

/// A `[[models]]` table. Keys come from `api_key_env` / `api_key_file`, never inline.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelSource {
    /// [the kind]
    pub name: Option<String>,
    pub kind: ModelKind,
    pub model: String,
    /// [the kind's public API]
    pub base_url: Option<String>,
    pub context_window: Option<u64>,
    /// The environment variable holding this candidate's key.
    pub api_key_env: Option<String>,
    /// The file holding this candidate's key.
    pub api_key_file: Option<PathBuf>,
    // The options of `model_options.rs`, spelled out (serde's `flatten` and
    // `deny_unknown_fields` do not go together).
    #[serde(default)]
    pub token_limit_param: TokenLimitParam,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub reasoning_effort: Option<String>,
    pub thinking_budget: Option<u64>,
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    pub deployment: Option<String>,
    pub api_version: Option<String>,
    pub stream: Option<bool>,
    pub stall_ms: Option<u64>,
}

impl ModelSource {
    /// The table's options.
    pub fn options(&self) -> OptionsSource {
        OptionsSource {
            token_limit_param: self.token_limit_param,
            temperature: self.temperature,
            top_p: self.top_p,
            reasoning_effort: self.reasoning_effort.clone(),
            thinking_budget: self.thinking_budget,
            max_output_tokens: self.max_output_tokens,
            headers: self.headers.clone(),
            headers_env: self.headers_env.clone(),
            query: self.query.clone(),
            deployment: self.deployment.clone(),
            api_version: self.api_version.clone(),
            stream: self.stream,
            stall_ms: self.stall_ms,
        }
    }
}

/// The `[moa]` table: model names from `[[models]]`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MoaSource {
    /// The models that draft, concurrently.
    pub proposers: Vec<String>,
    /// The model that merges the drafts.
    pub aggregator: String,
    /// The strategy of a request that names none [single].
    #[serde(default)]
    pub strategy: Strategy,
}

/// The environment variable of a setting.
pub(super) fn env_name(key: &str) -> String {
    format!("COMPACTD_{}", key.to_ascii_uppercase())
}

/// The layered settings, and where each came from.
pub(super) struct Layers {
    figment: Figment,
    file: Option<PathBuf>,
}

impl Layers {
    /// Defaults, then the file (if any), then the environment.
    pub fn read(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Layers, ConfigError> {
        let mut figment = Figment::from(figment::providers::Serialized::defaults(
            RawSettings::default(),
        ));
        if let Some(path) = file {
            figment = figment.merge(ConfigFile::read(path)?);
        }
        figment = figment.merge(Environment::read(env)?);
        Ok(Layers {
            figment,
            file: file.map(Path::to_path_buf),
        })
    }

    /// The settings, or an error naming the first bad one.
    pub fn extract(&self) -> Result<RawSettings, ConfigError> {
        let settings: RawSettings = self.figment.extract_lossy().map_err(|e| self.error(e))?;
        if settings.api_keys.is_some() && self.set_by_file("api_keys") {
            return Err(self.file_error(
                "api_keys: keys are not read from the config file; name a file of keys with \
                 api_keys_file, or set COMPACTD_API_KEYS",
            ));
        }
        Ok(settings)
    }

    /// What an error calls the setting `key`: the key if the file set it, else its
    /// environment variable.
    pub fn name(&self, key: &str) -> String {
        if self.set_by_file(key) {
            key.to_string()
        } else {
            env_name(key)
        }
    }

    fn set_by_file(&self, key: &str) -> bool {
        self.figment
            .find_metadata(key)
            .is_some_and(|m| m.name == FILE)
    }

    fn file_error(&self, message: &str) -> ConfigError {
        ConfigError::File {
            path: self
                .file
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string()),
            message: message.to_string(),
        }
    }

    /// figment's error as ours: a file error carries the key, an environment error is a
    /// value error naming the variable.
    fn error(&self, e: figment::Error) -> ConfigError {
        let message = e.kind.to_string();
        let from_file = e.metadata.as_ref().is_some_and(|m| m.name == FILE);
        let Some((key, rest)) = e.path.split_first() else {
            return if from_file {
                self.file_error(&message)
            } else {
                ConfigError::Value {
                    name: "environment".into(),
                    message,
                }
            };
        };
        // `models.0.kind` → `models[0].kind`.
        let mut name = key.clone();
        for part in rest {
            if part.bytes().all(|b| b.is_ascii_digit()) {
                name.push_str(&format!("[{part}]"));
            } else {
                name.push_str(&format!(".{part}"));
            }
        }
        if from_file {
            self.file_error(&format!("{name}: {message}"))
        } else {
            let var = env_name(key);
            let message = match name.strip_prefix(key.as_str()) {
                Some("") | None => message,
                Some(inner) => format!("{inner}: {message}"),
            };
            ConfigError::Value { name: var, message }
        }
    }
}

/// The TOML file, read at once so that a missing file is an error (figment would skip
/// it) and a malformed one is reported without quoting it.
struct ConfigFile {
    path: PathBuf,
    text: String,
}

impl ConfigFile {
    fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        // Checked here for toml's short message: its full one quotes the offending line,
        // which may hold a secret.
        if let Err(e) = toml::from_str::<toml::Table>(&text) {
            return Err(ConfigError::File {
                path: path.display().to_string(),
                message: e.message().to_string(),
            });
        }
        Ok(ConfigFile {
            path: path.to_path_buf(),
            text,
        })
    }
}

impl Provider for ConfigFile {
    fn metadata(&self) -> Metadata {
        Metadata::from(FILE, self.path.as_path())
    }

    fn data(&self) -> figment::Result<figment::value::Map<Profile, Dict>> {
        figment::providers::Toml::string(&self.text).data()
    }
}

/// The `COMPACTD_*` variables of the settings that are set.
struct Environment(Dict);

impl Environment {
    fn read(env: &dyn Fn(&str) -> Option<String>) -> Result<Environment, ConfigError> {
        let mut dict = Dict::new();
        for &key in setting_keys() {
            let Some(raw) = env(&env_name(key)) else {
                continue;
            };
            let value = raw.trim();
            if value.is_empty() {
                continue;
            }
            let value = if STRUCTURED.contains(&key) {
                inline_toml(value).map_err(|message| ConfigError::Value {
                    name: env_name(key),
                    message,
                })?
            } else {
                Value::from(value.to_string())
            };
            dict.insert(key.to_string(), value);
        }
        Ok(Environment(dict))
    }
}

/// A TOML value written inline, as in the file (`[{kind = "openai", model = "m"}]`).
fn inline_toml(text: &str) -> Result<Value, String> {
    let mut table: toml::Table =
        toml::from_str(&format!("value = {text}")).map_err(|e| e.message().to_string())?;
    let value = table.remove("value").ok_or("no value")?;
    Value::serialize(value).map_err(|e| e.to_string())
}

impl Provider for Environment {
    fn metadata(&self) -> Metadata {
        Metadata::named(ENV)
    }

    fn data(&self) -> figment::Result<figment::value::Map<Profile, Dict>> {
        Ok(Profile::Default.collect(self.0.clone()))
    }
}

/// The keys of [`RawSettings`], as serde's derive reports them.
pub(super) fn setting_keys() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    /// A deserializer that only records the field list it is asked for.
    struct Fields(Option<&'static [&'static str]>);

    impl<'de> de::Deserializer<'de> for &mut Fields {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("fields only"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("fields only"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
            enum identifier ignored_any
        }
    }

    static KEYS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let mut fields = Fields(None);
        let _ = RawSettings::deserialize(&mut fields);
        fields.0.expect("Settings is a struct")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_a_key_and_a_variable() {
        let keys = setting_keys();
        assert!(keys.contains(&"request_timeout_secs") && keys.contains(&"models"));
        assert_eq!(
            env_name("request_timeout_secs"),
            "COMPACTD_REQUEST_TIMEOUT_SECS"
        );
    }
}
