//! Why the model engine cannot be built from its configuration.
//!
//! Design decision: both `candidates` (a candidate's URL or key) and `engine` (the HTTP
//! client) report these errors, and `engine` uses `candidates`; the error type lives in
//! this file of its own so that the imports point one way and neither file has to know
//! the other to name it.

use crate::config::ConfigError;

/// Why an [`Engine`](super::Engine) cannot be built from its configuration. No variant holds a key or a
/// URL's credentials.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A setting is out of range or missing (see [`LlmConfig::validate`](crate::config::LlmConfig::validate)).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A candidate's base URL does not parse.
    #[error("model {model:?}: invalid base URL: {reason}")]
    InvalidBaseUrl { model: String, reason: String },
    /// A candidate's base URL is not an absolute http(s) URL (shown without credentials).
    #[error("model {model:?}: the base URL must be http(s), got {shown_url:?}")]
    UnsupportedBaseUrl { model: String, shown_url: String },
    /// A candidate's API key cannot be sent as an HTTP header value.
    #[error("model {model:?}: the API key is not a valid HTTP header value")]
    InvalidApiKey { model: String },
    /// The HTTP client could not be built (TLS backend).
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
}
