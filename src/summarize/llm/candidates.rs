//! Which configured model answers.
//!
//! The candidates are built once from configuration: the endpoint of their wire format
//! ([`endpoint`], here beside the candidate it addresses),
//! the authentication header (marked sensitive), the base URL as it may be shown, the
//! context window. A call then selects its candidates: all of them in order, or the one
//! the request names, or none (the extractive summarizer). The first selected candidate's
//! context window is the one the pipelines budget for.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use secrecy::ExposeSecret;

use super::error::EngineError;
use super::outcome::Failure;
use super::{redact_url, truncate, ModelConfig, ModelKind, SummarizerChoice, EXTRACTIVE};
use crate::config::{is_openai_reasoning_model, ModelOptions, TokenLimitParam};
use crate::summarize::SummarizeError;

/// One model candidate, ready to call.
pub(super) struct Candidate {
    pub(super) name: String,
    pub(super) kind: ModelKind,
    pub(super) model: String,
    pub(super) endpoint: reqwest::Url,
    /// The base URL without user info or query, for logs and `describe`.
    pub(super) shown_url: String,
    pub(super) context_window: u64,
    /// The window assumed now: `context_window`, shrunk after each context overflow
    /// (learned for the life of the process).
    window: AtomicU64,
    /// `Authorization: Bearer …`, `x-api-key: …` or `api-key: …`, marked sensitive.
    pub(super) auth: Option<(HeaderName, HeaderValue)>,
    /// The configured extra headers, values marked sensitive.
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
    pub(super) options: ModelOptions,
    /// Send `max_completion_tokens` rather than `max_tokens` (OpenAI wire format).
    completion_tokens: AtomicBool,
    /// The token-limit parameter was switched after a 400 (once only).
    switched_param: AtomicBool,
    /// Send the configured `temperature` (false: none configured, a reasoning model, or
    /// the server refused it).
    send_temperature: AtomicBool,
    /// Ask for a stream (false: `stream = false`, or the server refused
    /// `stream_options`).
    stream: AtomicBool,
}

impl fmt::Debug for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidate")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.shown_url)
            .field("context_window", &self.context_window)
            .field("window", &self.window())
            .field("api_key", &self.auth.as_ref().map(|_| "[REDACTED]"))
            .field("options", &self.options)
            .field("completion_tokens", &self.completion_tokens())
            .finish()
    }
}

impl Candidate {
    /// A candidate from its configuration; the errors never quote the key or the URL's
    /// credentials.
    pub(super) fn new(m: &ModelConfig) -> Result<Candidate, EngineError> {
        let base = reqwest::Url::parse(&m.base_url).map_err(|e| EngineError::InvalidBaseUrl {
            model: m.name.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(base.scheme(), "http" | "https") || !base.has_host() {
            return Err(EngineError::UnsupportedBaseUrl {
                model: m.name.clone(),
                shown_url: redact_url(&m.base_url),
            });
        }
        let auth = match &m.api_key {
            None => None,
            Some(key) => {
                let (name, value) = match m.kind {
                    ModelKind::Openai => (AUTHORIZATION, format!("Bearer {}", key.expose_secret())),
                    ModelKind::Anthropic => (
                        HeaderName::from_static("x-api-key"),
                        key.expose_secret().to_string(),
                    ),
                    ModelKind::AzureOpenai => (
                        HeaderName::from_static("api-key"),
                        key.expose_secret().to_string(),
                    ),
                };
                let mut value =
                    HeaderValue::from_str(&value).map_err(|_| EngineError::InvalidApiKey {
                        model: m.name.clone(),
                    })?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let mut headers = Vec::new();
        for (name, value) in &m.options.headers {
            // Checked by the configuration; a failure here names no value.
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                EngineError::InvalidApiKey {
                    model: m.name.clone(),
                }
            })?;
            let mut value = HeaderValue::from_str(value.expose_secret()).map_err(|_| {
                EngineError::InvalidApiKey {
                    model: m.name.clone(),
                }
            })?;
            value.set_sensitive(true);
            headers.push((name, value));
        }
        let mut endpoint = endpoint(&base, m.kind, &m.options);
        if m.kind != ModelKind::Anthropic && auth.is_some() {
            // reqwest turns user info into `Authorization: Basic`; the bearer key wins.
            let _ = endpoint.set_username("");
            let _ = endpoint.set_password(None);
        }
        Ok(Candidate {
            name: m.name.clone(),
            kind: m.kind,
            model: m.model.clone(),
            endpoint,
            shown_url: redact_url(&m.base_url),
            context_window: m.context_window,
            window: AtomicU64::new(m.context_window),
            auth,
            headers,
            completion_tokens: AtomicBool::new(match m.options.token_limit_param {
                TokenLimitParam::Auto => is_openai_reasoning_model(&m.model),
                TokenLimitParam::MaxTokens => false,
                TokenLimitParam::MaxCompletionTokens => true,
            }),
            switched_param: AtomicBool::new(false),
            send_temperature: AtomicBool::new(
                m.options.temperature.is_some()
                    && !(m.kind.is_openai_format() && is_openai_reasoning_model(&m.model)),
            ),
            stream: AtomicBool::new(m.options.streams()),
            options: m.options.clone(),
        })
    }

    /// Whether answers are asked for as a stream.
    pub(super) fn streams(&self) -> bool {
        self.stream.load(Ordering::Relaxed)
    }

    /// The longest silence of a streamed answer: the candidate's `stall_ms`, else
    /// `default`; `None` (zero): no stall detection.
    pub(super) fn stall(&self, default: std::time::Duration) -> Option<std::time::Duration> {
        let stall = self
            .options
            .stall_ms
            .map_or(default, std::time::Duration::from_millis);
        (!stall.is_zero()).then_some(stall)
    }

    /// Whether the output cap goes in `max_completion_tokens` (OpenAI wire format).
    pub(super) fn completion_tokens(&self) -> bool {
        self.completion_tokens.load(Ordering::Relaxed)
    }

    /// The temperature to send, if any.
    pub(super) fn temperature(&self) -> Option<f64> {
        self.options
            .temperature
            .filter(|_| self.send_temperature.load(Ordering::Relaxed))
    }

    /// Learns from a 400 that names a parameter this candidate sent and the server does
    /// not take: the other token-limit parameter (once), or no temperature. Returns what
    /// changed, for the log; `None`: nothing to learn, the failure stands.
    pub(super) fn learn(&self, failure: &Failure) -> Option<&'static str> {
        let Failure::Status {
            code: 400 | 422,
            message: Some(message),
            ..
        } = failure
        else {
            return None;
        };
        if !self.kind.is_openai_format() && self.temperature().is_none() {
            return None;
        }
        let text = message.to_ascii_lowercase();
        let refused = REFUSALS.iter().any(|r| text.contains(r));
        // An OpenAI-compatible server that does not know `stream_options` (older vLLM
        // and proxies: "stream_options: Extra inputs are not permitted"): without it a
        // stream reports no usage, so the answer is asked for whole.
        if self.kind.is_openai_format()
            && text.contains("stream_options")
            && self.stream.swap(false, Ordering::Relaxed)
        {
            return Some("the server refused stream_options; not streaming from now on");
        }
        if self.kind.is_openai_format() && !self.switched_param.load(Ordering::Relaxed) {
            let completion = self.completion_tokens();
            // OpenAI: "Unsupported parameter: 'max_tokens' … Use 'max_completion_tokens'
            // instead."; older servers: "Unrecognized request argument supplied:
            // max_completion_tokens". ("max_completion_tokens" does not contain
            // "max_tokens".)
            let switch = if completion {
                refused && text.contains("max_completion_tokens")
            } else {
                text.contains("max_completion_tokens") || (refused && text.contains("max_tokens"))
            };
            if switch && !self.switched_param.swap(true, Ordering::Relaxed) {
                self.completion_tokens.store(!completion, Ordering::Relaxed);
                return Some(if completion {
                    "the server refused max_completion_tokens; sending max_tokens from now on"
                } else {
                    "the server refused max_tokens; sending max_completion_tokens from now on"
                });
            }
        }
        if self.temperature().is_some()
            && text.contains("temperature")
            && (refused || text.contains("only the default") || text.contains("may only be set"))
        {
            self.send_temperature.store(false, Ordering::Relaxed);
            return Some("the server refused temperature; sending none from now on");
        }
        None
    }

    /// The context window assumed now (tokens).
    pub(super) fn window(&self) -> u64 {
        self.window.load(Ordering::Relaxed)
    }

    /// After a context overflow of a request estimated at `sent` tokens: the window
    /// becomes half of the smaller of the window assumed and `sent` (the estimate was
    /// off by an unknown factor), and at most the window the server `named`; never below
    /// [`MIN_WINDOW`]. Returns the new window.
    pub(super) fn shrink_window(&self, sent: u64, named: Option<u64>) -> u64 {
        let shrink = |w: u64| {
            let halved = (w.min(sent.max(1)) / 2).min(named.unwrap_or(u64::MAX));
            halved.max(MIN_WINDOW).min(w)
        };
        let before = self
            .window
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| Some(shrink(w)))
            .unwrap_or_else(|w| w);
        shrink(before)
    }
}

/// Words of a 400 that refuses a parameter rather than its value.
const REFUSALS: &[&str] = &[
    "unsupported",
    "not supported",
    "unrecognized",
    "unknown parameter",
    "not permitted",
    "not allowed",
    "does not support",
    "extra inputs",
];

/// The smallest window an overflow shrinks a candidate's to (tokens).
pub(super) const MIN_WINDOW: u64 = 1024;

/// What to do with one summarize call.
pub(super) enum Selection<'e> {
    Extractive,
    Models(Vec<&'e Candidate>),
}

/// The configured candidates and the default summarizer.
#[derive(Debug)]
pub(super) struct Candidates {
    pub(super) summarizer: SummarizerChoice,
    pub(super) list: Vec<Candidate>,
}

impl Candidates {
    /// The candidates that answer a call naming `model` (`None`: the default summarizer).
    ///
    /// `model` is matched against candidate names, then model ids, then `name/model`;
    /// `"extractive"` always selects the extractive summarizer, and a configured candidate
    /// may be named even when the default summarizer is extractive.
    pub(super) fn select(&self, model: Option<&str>) -> Result<Selection<'_>, SummarizeError> {
        let Some(name) = model else {
            return Ok(match self.summarizer {
                SummarizerChoice::Extractive => Selection::Extractive,
                _ => Selection::Models(self.list.iter().collect()),
            });
        };
        if name == EXTRACTIVE {
            return Ok(Selection::Extractive);
        }
        let found = self
            .list
            .iter()
            .find(|c| c.name == name)
            .or_else(|| self.list.iter().find(|c| c.model == name))
            .or_else(|| {
                self.list.iter().find(|c| {
                    name.strip_prefix(c.name.as_str())
                        .and_then(|rest| rest.strip_prefix('/'))
                        == Some(c.model.as_str())
                })
            });
        match found {
            Some(c) => Ok(Selection::Models(vec![c])),
            None => Err(SummarizeError::UnknownModel(truncate(name, 64))),
        }
    }

    /// Context window (tokens) of the first candidate that would be tried; `None` for the
    /// extractive summarizer or an unknown model.
    pub(super) fn context_window(&self, model: Option<&str>) -> Option<u64> {
        match self.select(model).ok()? {
            Selection::Extractive => None,
            Selection::Models(c) => c.first().map(|c| c.window()),
        }
    }
}

/// `{base}/chat/completions`, `{base}/v1/messages` (a base already ending in `/v1` gets
/// `/messages`) or Azure's `{base}/openai/deployments/{deployment}/chat/completions?
/// api-version=…`, keeping the base's query and adding the configured `query`.
pub(super) fn endpoint(
    base: &reqwest::Url,
    kind: ModelKind,
    options: &ModelOptions,
) -> reqwest::Url {
    let path = base.path().trim_end_matches('/');
    let mut url = base.clone();
    match kind {
        ModelKind::Openai => url.set_path(&format!("{path}/chat/completions")),
        ModelKind::Anthropic if path.ends_with("/v1") => url.set_path(&format!("{path}/messages")),
        ModelKind::Anthropic => url.set_path(&format!("{path}/v1/messages")),
        ModelKind::AzureOpenai => {
            url.set_path(path);
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.pop_if_empty().extend([
                    "openai",
                    "deployments",
                    options.deployment.as_deref().unwrap_or_default(),
                    "chat",
                    "completions",
                ]);
            }
            if let Some(version) = &options.api_version {
                url.query_pairs_mut().append_pair("api-version", version);
            }
        }
    }
    if !options.query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in &options.query {
            pairs.append_pair(name, value);
        }
    }
    url.set_fragment(None);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        let endpoint = |base: &reqwest::Url, kind| endpoint(base, kind, &ModelOptions::default());
        assert_eq!(
            endpoint(&u("http://127.0.0.1:11434/v1/"), ModelKind::Openai).as_str(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            endpoint(
                &u("https://x.example/openai?api-version=1"),
                ModelKind::Openai
            )
            .as_str(),
            "https://x.example/openai/chat/completions?api-version=1"
        );
        assert_eq!(
            endpoint(&u("https://api.anthropic.com"), ModelKind::Anthropic).as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint(
                &u("https://proxy.example/anthropic/v1"),
                ModelKind::Anthropic
            )
            .as_str(),
            "https://proxy.example/anthropic/v1/messages"
        );
    }

    #[test]
    fn azure_and_extra_query() {
        let options = ModelOptions {
            deployment: Some("gpt 4o".into()),
            api_version: Some("2024-10-21".into()),
            query: vec![("x".into(), "1".into())],
            ..ModelOptions::default()
        };
        let base = reqwest::Url::parse("https://r.openai.azure.com/").unwrap();
        assert_eq!(
            endpoint(&base, ModelKind::AzureOpenai, &options).as_str(),
            "https://r.openai.azure.com/openai/deployments/gpt%204o/chat/completions?api-version=2024-10-21&x=1"
        );
    }
}
