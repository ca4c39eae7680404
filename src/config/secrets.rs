//! Secret material and where it comes from: the bearer tokens clients must present and
//! the upstream key of each model candidate. Keys are held as [`SecretString`]s; no
//! `Debug` output, error or description contains one. Checking a client's token is the
//! HTTP layer's job (`http::auth::ApiKeys` digests these keys).

use std::path::Path;

use secrecy::{ExposeSecret, SecretString};

use super::choices::ModelKind;
use super::ConfigError;

/// The bearer tokens clients must present (none: no authentication).
#[derive(Clone, Default)]
pub struct ClientKeys(Vec<SecretString>);

impl std::fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientKeys({} configured)", self.0.len())
    }
}

impl ClientKeys {
    /// The keys, trimmed; blank ones are dropped.
    pub fn new<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> Self {
        ClientKeys(
            keys.into_iter()
                .map(|k| k.as_ref().trim().to_string())
                .filter(|k| !k.is_empty())
                .map(SecretString::from)
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &SecretString> {
        self.0.iter()
    }
}

/// The client keys of `api_keys` (comma-separated) and of the file `api_keys_file` (one
/// a line, `#` comments). A named file that cannot be read or holds no key is an error.
pub(super) fn client_keys(
    listed: Option<&SecretString>,
    file: Option<(&Path, String)>,
) -> Result<ClientKeys, ConfigError> {
    let mut keys: Vec<String> = listed
        .map(|v| v.expose_secret().split(',').map(str::to_string).collect())
        .unwrap_or_default();
    if let Some((path, name)) = file {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Value {
            name: name.clone(),
            message: format!("cannot read {}: {}", path.display(), e.kind()),
        })?;
        keys.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
        if keys.iter().all(|k| k.trim().is_empty()) {
            return Err(ConfigError::Value {
                name,
                message: "the file holds no key".into(),
            });
        }
    }
    Ok(ClientKeys::new(keys))
}

/// Where a model candidate's key may come from, each with the name an error shows.
pub(super) struct KeySources<'a> {
    /// The candidate's own `api_key_env`.
    pub own_env: Option<(&'a str, String)>,
    /// The candidate's own `api_key_file`.
    pub own_file: Option<(&'a Path, String)>,
    /// `llm_api_key_file`, shared by every candidate without its own.
    pub shared_file: Option<(&'a Path, String)>,
}

/// A candidate's key: its own `api_key_env` / `api_key_file`, else `llm_api_key_file`,
/// else `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` by kind, else none (a local server). A
/// named source that is missing or empty is an error; no message quotes a key.
pub(super) fn model_key(
    kind: ModelKind,
    sources: KeySources<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<SecretString>, ConfigError> {
    let from_file = |path: &Path, name: String| -> Result<SecretString, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Value {
            name: name.clone(),
            message: format!("cannot read {}: {e}", path.display()),
        })?;
        let key = text.trim();
        if key.is_empty() {
            return Err(ConfigError::Value {
                name,
                message: format!("{} is empty", path.display()),
            });
        }
        Ok(SecretString::from(key))
    };
    if let Some((var, name)) = sources.own_env {
        return match env(var).filter(|v| !v.trim().is_empty()) {
            Some(v) => Ok(Some(SecretString::from(v.trim()))),
            None => Err(ConfigError::Value {
                name,
                message: format!("the environment variable {var} is not set"),
            }),
        };
    }
    if let Some((path, name)) = sources.own_file.or(sources.shared_file) {
        return from_file(path, name).map(Some);
    }
    Ok(env(kind.key_env())
        .filter(|v| !v.trim().is_empty())
        .map(|v| SecretString::from(v.trim())))
}
