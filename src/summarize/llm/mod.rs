//! Model summarizers: the OpenAI-compatible and Anthropic wire formats behind one
//! [`Engine`] that tries the configured candidates in order, retries transient failures
//! with jittered exponential backoff (honouring `Retry-After`) inside an overall deadline,
//! caches identical requests, and falls back to the extractive summarizer.
//!
//! Nothing here is spawned or global: dropping the future of [`Engine::summarize`] (a
//! client that went away) drops the in-flight HTTP request, which closes its connection.
//! API keys live in [`SecretString`]s and in header values marked sensitive; no log line,
//! error, `Debug` output or [`Engine::describe`] contains one, and URLs are shown without
//! their user info and query.

mod anthropic;
mod cache;
mod openai;
mod retry;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use secrecy::{ExposeSecret, SecretString};
use tokio::time::Instant;

use crate::summarize::{SummarizeError, SummarizerKind, Summary, SummaryRequest, Usage};

use crate::config::{redact_url, LlmDescription};
pub use crate::config::{FallbackPolicy, LlmConfig, ModelConfig, ModelKind, SummarizerChoice};

use cache::SummaryCache;
use retry::Backoff;

/// The extractive summarizer, injected by the caller (it lives elsewhere).
pub type Fallback = Arc<dyn Fn(&SummaryRequest) -> Summary + Send + Sync>;

/// The model name that always selects the extractive summarizer.
pub const EXTRACTIVE: &str = "extractive";

/// Largest upstream answer read, in bytes.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;
/// Longest piece of upstream text (an error message) quoted in a log line or an error.
const MAX_QUOTED_CHARS: usize = 200;

/// Summarizes with the configured model candidates; see the module documentation.
pub struct Engine {
    summarizer: SummarizerChoice,
    fallback_policy: FallbackPolicy,
    candidates: Vec<Candidate>,
    client: reqwest::Client,
    fallback: Fallback,
    retries: u32,
    backoff: Backoff,
    upstream_timeout: Duration,
    deadline: Duration,
    cache: SummaryCache,
    /// The configuration's description; `describe` adds what the cache holds now.
    described: LlmDescription,
    /// Every configured key, to scrub from upstream text before it is logged or returned.
    secrets: Vec<SecretString>,
}

/// One model candidate, ready to call.
pub(crate) struct Candidate {
    name: String,
    kind: ModelKind,
    model: String,
    endpoint: reqwest::Url,
    /// The base URL without user info or query, for logs and `describe`.
    shown_url: String,
    context_window: u64,
    /// `Authorization: Bearer …` or `x-api-key: …`, marked sensitive.
    auth: Option<(HeaderName, HeaderValue)>,
}

impl fmt::Debug for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidate")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.shown_url)
            .field("context_window", &self.context_window)
            .field("api_key", &self.auth.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("summarizer", &self.summarizer)
            .field("fallback", &self.fallback_policy)
            .field("candidates", &self.candidates)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("deadline", &self.deadline)
            .field("cached_answers", &self.cache.len())
            .finish_non_exhaustive()
    }
}

/// A model's answer to one attempt.
#[derive(Debug)]
pub(crate) struct Answer {
    text: String,
    usage: Usage,
}

/// Why one attempt failed. The texts are short and never hold a key, a URL or a body.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No connection (refused, DNS, TLS).
    Connect(String),
    /// No complete answer within the per-attempt timeout.
    Timeout(Duration),
    /// The connection broke while sending or receiving.
    Transport(String),
    /// A non-2xx status, with the server's requested wait and a short error message.
    Status {
        code: u16,
        retry_after: Option<Duration>,
        message: Option<String>,
    },
    /// The model stopped for another reason than finishing (output limit, filter).
    Stopped { field: &'static str, value: String },
    /// The answer held no text.
    Empty,
    /// The answer was not the expected JSON.
    Unparsable(String),
    /// The answer was larger than we read.
    TooLarge,
}

impl Failure {
    fn unparsable(e: serde_json::Error) -> Failure {
        // serde's messages may quote a value from the body: keep them short.
        Failure::Unparsable(truncate(&e.to_string(), 120))
    }

    fn from_reqwest(e: reqwest::Error) -> Failure {
        let e = e.without_url();
        // The cause chain ("client error (Connect): tcp connect error: Connection
        // refused"); none of it holds a URL once the top level lost its own.
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text = format!("{text}: {cause_text}");
            }
            source = cause.source();
        }
        let text = truncate(&text, MAX_QUOTED_CHARS);
        if e.is_connect() {
            Failure::Connect(text)
        } else {
            Failure::Transport(text)
        }
    }

    /// Worth another attempt at the same candidate with the same request.
    fn is_transient(&self) -> bool {
        match self {
            Failure::Connect(_) | Failure::Timeout(_) | Failure::Transport(_) => true,
            Failure::Status { code, .. } => retry::transient_status(*code),
            Failure::Stopped { .. }
            | Failure::Empty
            | Failure::Unparsable(_)
            | Failure::TooLarge => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "cannot connect ({e})"),
            Failure::Timeout(d) => write!(f, "no answer within {} ms", d.as_millis()),
            Failure::Transport(e) => write!(f, "transport error ({e})"),
            Failure::Status {
                code,
                message: Some(m),
                ..
            } => write!(f, "HTTP {code}: {m}"),
            Failure::Status { code, .. } => write!(f, "HTTP {code}"),
            Failure::Stopped { field, value } => {
                write!(f, "answer cut off ({field} {value:?})")
            }
            Failure::Empty => f.write_str("empty answer"),
            Failure::Unparsable(e) => write!(f, "unparsable answer ({e})"),
            Failure::TooLarge => write!(f, "answer larger than {MAX_RESPONSE_BYTES} bytes"),
        }
    }
}

/// What to do with one summarize call.
enum Selection<'e> {
    Extractive,
    Models(Vec<&'e Candidate>),
}

/// What the attempts of one summarize call went through; kept outside the deadline so it
/// survives a timeout.
#[derive(Default)]
struct Progress {
    /// Retried attempts (the second and later attempts at a candidate).
    retries: u32,
    /// One line per failed candidate.
    failures: Vec<String>,
}

impl Engine {
    /// Built from configuration; `fallback` is the built-in extractive summarizer.
    pub fn new(config: &LlmConfig, fallback: Fallback) -> Result<Engine, String> {
        config.validate().map_err(|e| e.to_string())?;
        let mut candidates = Vec::with_capacity(config.models.len());
        let mut secrets = Vec::new();
        for m in &config.models {
            let base = reqwest::Url::parse(&m.base_url)
                .map_err(|e| format!("model {:?}: invalid base URL: {e}", m.name))?;
            if !matches!(base.scheme(), "http" | "https") || !base.has_host() {
                return Err(format!(
                    "model {:?}: the base URL must be http(s), got {:?}",
                    m.name,
                    redact_url(&m.base_url)
                ));
            }
            let auth = match &m.api_key {
                None => None,
                Some(key) => {
                    let (name, value) = match m.kind {
                        ModelKind::Openai => {
                            (AUTHORIZATION, format!("Bearer {}", key.expose_secret()))
                        }
                        ModelKind::Anthropic => (
                            HeaderName::from_static("x-api-key"),
                            key.expose_secret().to_string(),
                        ),
                    };
                    let mut value = HeaderValue::from_str(&value).map_err(|_| {
                        format!(
                            "model {:?}: the API key is not a valid HTTP header value",
                            m.name
                        )
                    })?;
                    value.set_sensitive(true);
                    secrets.push(key.clone());
                    Some((name, value))
                }
            };
            let mut endpoint = endpoint(&base, m.kind);
            if m.kind == ModelKind::Openai && auth.is_some() {
                // reqwest turns user info into `Authorization: Basic`; the bearer key wins.
                let _ = endpoint.set_username("");
                let _ = endpoint.set_password(None);
            }
            candidates.push(Candidate {
                name: m.name.clone(),
                kind: m.kind,
                model: m.model.clone(),
                endpoint,
                shown_url: redact_url(&m.base_url),
                context_window: m.context_window,
                auth,
            });
        }
        // Redirects are not followed: an `x-api-key` would go along to the new host.
        let client = reqwest::Client::builder()
            .user_agent(concat!("compactd/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", e.without_url()))?;
        Ok(Engine {
            summarizer: config.summarizer,
            fallback_policy: config.fallback,
            candidates,
            client,
            fallback,
            retries: config.retries,
            backoff: Backoff {
                base: config.backoff_base,
                cap: config.backoff_cap.max(config.backoff_base),
            },
            upstream_timeout: config.upstream_timeout,
            deadline: config.deadline,
            cache: SummaryCache::new(config.cache_entries, config.cache_bytes),
            described: config.describe(),
            secrets,
        })
    }

    /// Summarize with the configured summarizer: when `summarizer = extractive` call the
    /// fallback directly (summarizer: Extractive). Otherwise try the model candidates in
    /// order (or only the one named `model`; unknown name → Err(UnknownModel)).
    ///
    /// `model` is matched against candidate names, then model ids, then `name/model`;
    /// `"extractive"` always selects the extractive summarizer, and a configured candidate
    /// may be named even when the default summarizer is extractive.
    pub async fn summarize(
        &self,
        req: &SummaryRequest,
        model: Option<&str>,
    ) -> Result<Summary, SummarizeError> {
        let candidates = match self.select(model)? {
            Selection::Extractive => return Ok(self.extractive(req, 0)),
            Selection::Models(c) => c,
        };
        let key = SummaryCache::key(&candidates, req);
        if let Some(hit) = self.cache.get(&key) {
            tracing::debug!(model = %hit.model, "summary served from the cache");
            return Ok(Summary {
                retries: 0,
                cached: true,
                ..(*hit).clone()
            });
        }
        let deadline = Instant::now() + self.deadline;
        let mut progress = Progress::default();
        let run = self.run(&candidates, req, deadline, &mut progress);
        match tokio::time::timeout_at(deadline, run).await {
            Ok(Some(summary)) => {
                self.cache.insert(key, summary.clone());
                Ok(summary)
            }
            Ok(None) => {
                let message = progress.failures.join("; ");
                match self.fallback_policy {
                    FallbackPolicy::Extractive => {
                        tracing::warn!(
                            failures = %message,
                            "every model candidate failed; answering with the extractive summarizer"
                        );
                        Ok(self.extractive(req, progress.retries))
                    }
                    FallbackPolicy::None => Err(SummarizeError::Upstream(message)),
                }
            }
            Err(_) => {
                let failures = progress.failures.join("; ");
                match self.fallback_policy {
                    FallbackPolicy::Extractive => {
                        tracing::warn!(
                            deadline_ms = self.deadline.as_millis() as u64,
                            failures = %failures,
                            "summarizer deadline passed; answering with the extractive summarizer"
                        );
                        Ok(self.extractive(req, progress.retries))
                    }
                    FallbackPolicy::None => {
                        tracing::warn!(
                            deadline_ms = self.deadline.as_millis() as u64,
                            failures = %failures,
                            "summarizer deadline passed"
                        );
                        Err(SummarizeError::Timeout)
                    }
                }
            }
        }
    }

    /// Context window (tokens) of the first candidate that would be tried; None for extractive.
    /// Whether model candidates answer (false: the extractive summarizer is configured).
    pub fn uses_models(&self) -> bool {
        self.summarizer != SummarizerChoice::Extractive
    }

    pub fn context_window(&self, model: Option<&str>) -> Option<u64> {
        match self.select(model).ok()? {
            Selection::Extractive => None,
            Selection::Models(c) => c.first().map(|c| c.context_window),
        }
    }

    /// Non-secret description for GET /v1/config: summarizer, fallback, candidates (name, kind, baseUrl, contextWindow, whether a key is set — never the key), timeouts, retries.
    pub fn describe(&self) -> serde_json::Value {
        let mut described = self.described.clone();
        described.cache.entries = self.cache.len();
        serde_json::to_value(described).expect("a description is plain data")
    }

    fn select(&self, model: Option<&str>) -> Result<Selection<'_>, SummarizeError> {
        let Some(name) = model else {
            return Ok(match self.summarizer {
                SummarizerChoice::Extractive => Selection::Extractive,
                _ => Selection::Models(self.candidates.iter().collect()),
            });
        };
        if name == EXTRACTIVE {
            return Ok(Selection::Extractive);
        }
        let found = self
            .candidates
            .iter()
            .find(|c| c.name == name)
            .or_else(|| self.candidates.iter().find(|c| c.model == name))
            .or_else(|| {
                self.candidates.iter().find(|c| {
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

    fn extractive(&self, req: &SummaryRequest, retries: u32) -> Summary {
        Summary {
            summarizer: SummarizerKind::Extractive,
            retries,
            cached: false,
            ..(self.fallback)(req)
        }
    }

    /// Tries the candidates in order; `None` when every one failed.
    async fn run(
        &self,
        candidates: &[&Candidate],
        req: &SummaryRequest,
        deadline: Instant,
        progress: &mut Progress,
    ) -> Option<Summary> {
        for c in candidates {
            match self.try_candidate(c, req, deadline, progress).await {
                Ok(answer) => {
                    return Some(Summary {
                        text: answer.text,
                        usage: answer.usage,
                        model: format!("{}/{}", c.name, c.model),
                        summarizer: SummarizerKind::Llm,
                        retries: progress.retries,
                        cached: false,
                    })
                }
                Err((failure, attempts)) => {
                    let line = format!(
                        "{}/{}: {failure} ({attempts} attempt{})",
                        c.name,
                        c.model,
                        if attempts == 1 { "" } else { "s" }
                    );
                    progress.failures.push(self.scrub(&line));
                }
            }
        }
        None
    }

    /// Attempts one candidate, retrying transient failures while retries and time remain.
    /// On failure, the last failure and the number of attempts.
    async fn try_candidate(
        &self,
        c: &Candidate,
        req: &SummaryRequest,
        deadline: Instant,
        progress: &mut Progress,
    ) -> Result<Answer, (Failure, u32)> {
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let failure = match self.attempt(c, req).await {
                Ok(answer) => {
                    if attempt > 1 {
                        tracing::info!(candidate = %c.name, model = %c.model, attempt, "upstream attempt succeeded after retries");
                    }
                    return Ok(answer);
                }
                Err(f) => f,
            };
            let error = self.scrub(&failure.to_string());
            let status = match &failure {
                Failure::Status { code, .. } => *code,
                _ => 0,
            };
            let transient = failure.is_transient();
            if !transient || attempt > self.retries {
                tracing::warn!(
                    candidate = %c.name, model = %c.model, url = %c.shown_url, attempt, status,
                    transient, error = %error,
                    "upstream attempt failed; giving up on this candidate"
                );
                return Err((failure, attempt));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            let (wait, source) = match failure.retry_after() {
                Some(d) => (d, "retry-after"),
                None => (self.backoff.delay(attempt - 1), "backoff"),
            };
            if wait >= remaining {
                tracing::warn!(
                    candidate = %c.name, model = %c.model, url = %c.shown_url, attempt, status,
                    transient, error = %error, wait_ms = wait.as_millis() as u64, source,
                    "upstream attempt failed; the wait would pass the deadline, giving up on this candidate"
                );
                return Err((failure, attempt));
            }
            tracing::warn!(
                candidate = %c.name, model = %c.model, url = %c.shown_url, attempt, status,
                transient, error = %error, backoff_ms = wait.as_millis() as u64, source,
                "upstream attempt failed; retrying"
            );
            progress.retries += 1;
            tokio::time::sleep(wait).await;
        }
    }

    /// One HTTP exchange, bounded by the per-attempt timeout.
    async fn attempt(&self, c: &Candidate, req: &SummaryRequest) -> Result<Answer, Failure> {
        let mut builder = self.client.post(c.endpoint.clone());
        builder = match c.kind {
            ModelKind::Openai => builder.json(&openai::body(&c.model, req)),
            ModelKind::Anthropic => builder
                .header("anthropic-version", anthropic::VERSION)
                .json(&anthropic::body(&c.model, req)),
        };
        if let Some((name, value)) = &c.auth {
            builder = builder.header(name.clone(), value.clone());
        }
        let exchange = async {
            let mut response = builder.send().await.map_err(Failure::from_reqwest)?;
            let status = response.status();
            let retry_after = retry::retry_after(response.headers(), SystemTime::now());
            if response.content_length().unwrap_or(0) > MAX_RESPONSE_BYTES {
                return Err(Failure::TooLarge);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(Failure::from_reqwest)? {
                if (body.len() + chunk.len()) as u64 > MAX_RESPONSE_BYTES {
                    return Err(Failure::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(Failure::Status {
                    code: status.as_u16(),
                    retry_after,
                    message: error_message(&body)
                        .map(|m| truncate(&self.scrub(&m), MAX_QUOTED_CHARS)),
                });
            }
            match c.kind {
                ModelKind::Openai => openai::parse(&body),
                ModelKind::Anthropic => anthropic::parse(&body),
            }
        };
        match tokio::time::timeout(self.upstream_timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(Failure::Timeout(self.upstream_timeout)),
        }
    }

    /// Removes every configured key from text that came from upstream, and shortens it.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        for key in &self.secrets {
            let key = key.expose_secret();
            if key.len() >= 4 && text.contains(key) {
                text = text.replace(key, "[REDACTED]");
            }
        }
        text
    }
}

/// `{base}/chat/completions` or `{base}/v1/messages` (a base already ending in `/v1` gets
/// `/messages`), keeping the base's query (e.g. an `api-version`).
fn endpoint(base: &reqwest::Url, kind: ModelKind) -> reqwest::Url {
    let path = base.path().trim_end_matches('/');
    let suffix = match kind {
        ModelKind::Openai => "/chat/completions",
        ModelKind::Anthropic if path.ends_with("/v1") => "/messages",
        ModelKind::Anthropic => "/v1/messages",
    };
    let mut url = base.clone();
    url.set_path(&format!("{path}{suffix}"));
    url.set_fragment(None);
    url
}

/// The `error.message` (or `error`, or `message`) of an upstream error body, on one line
/// (to be scrubbed of keys, then shortened).
fn error_message(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(|m| m.as_str())
        .or_else(|| error.and_then(|e| e.as_str()))
        .or_else(|| v.get("message").and_then(|m| m.as_str()))?;
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    (!message.is_empty()).then_some(message)
}

/// At most `max` characters, with an ellipsis when shortened.
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
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
    fn error_messages_are_short() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Rate   limit\nreached","type":"x"}}"#)
                .as_deref(),
            Some("Rate limit reached")
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(error_message(b"<html>"), None);
        assert_eq!(truncate(&"x".repeat(1000), 200).chars().count(), 201);
        assert_eq!(truncate("short", 200), "short");
    }

    #[test]
    fn summarize_future_is_send() {
        fn send<T: Send>(_: &T) {}
        let engine = Engine::new(
            &LlmConfig::default(),
            Arc::new(|_: &SummaryRequest| Summary {
                text: String::new(),
                usage: Usage::default(),
                model: EXTRACTIVE.into(),
                summarizer: SummarizerKind::Extractive,
                retries: 0,
                cached: false,
            }),
        )
        .unwrap();
        let req = SummaryRequest {
            kind: crate::summarize::RequestKind::History,
            system_prompt: String::new(),
            prompt: String::new(),
            max_tokens: 1,
        };
        send(&engine.summarize(&req, None));
        fn sync<T: Send + Sync>(_: &T) {}
        sync(&engine);
    }
}
