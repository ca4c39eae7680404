//! Configuration: defaults, then an optional TOML file (`--config` /
//! `COMPACTD_CONFIG`), then environment variables. Invalid values stop start-up with a
//! message naming the setting.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::compaction::Settings;

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
    pub max_concurrency: usize,
    #[serde(with = "secs")]
    pub request_timeout: Duration,
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
    pub branch_reserve_tokens: u64,
    pub context_window: u64,
    pub prompts_dir: Option<PathBuf>,
    pub log_format: LogFormat,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body_bytes: 64 * 1024 * 1024,
            max_concurrency: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            request_timeout: Duration::from_secs(120),
            keep_recent_tokens: 20_000,
            reserve_tokens: 16_384,
            branch_reserve_tokens: 16_384,
            context_window: 128_000,
            prompts_dir: None,
            log_format: LogFormat::Pretty,
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
    max_concurrency: Option<usize>,
    request_timeout_secs: Option<u64>,
    keep_recent_tokens: Option<u64>,
    reserve_tokens: Option<u64>,
    branch_reserve_tokens: Option<u64>,
    context_window: Option<u64>,
    prompts_dir: Option<PathBuf>,
    log_format: Option<LogFormat>,
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
            set(&mut c.max_concurrency, f.max_concurrency);
            set(
                &mut c.request_timeout,
                f.request_timeout_secs.map(Duration::from_secs),
            );
            set(&mut c.keep_recent_tokens, f.keep_recent_tokens);
            set(&mut c.reserve_tokens, f.reserve_tokens);
            set(&mut c.branch_reserve_tokens, f.branch_reserve_tokens);
            set(&mut c.context_window, f.context_window);
            if f.prompts_dir.is_some() {
                c.prompts_dir = f.prompts_dir;
            }
            set(&mut c.log_format, f.log_format);
        }
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = var("COMPACTD_LISTEN") {
            c.listen = parse_value("COMPACTD_LISTEN", &v)?;
        }
        if let Some(v) = var("COMPACTD_MAX_BODY_BYTES") {
            c.max_body_bytes = parse_value("COMPACTD_MAX_BODY_BYTES", &v)?;
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
        if self.max_concurrency == 0 {
            return bad("COMPACTD_MAX_CONCURRENCY", "must be positive");
        }
        if self.request_timeout.is_zero() {
            return bad("COMPACTD_REQUEST_TIMEOUT_SECS", "must be positive");
        }
        Ok(())
    }

    /// Default compaction settings.
    pub fn settings(&self) -> Settings {
        Settings {
            keep_recent_tokens: self.keep_recent_tokens,
            reserve_tokens: self.reserve_tokens,
        }
    }
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
}
