//! The effective non-secret configuration, described once: `GET /v1/config` serves
//! [`ConfigDescription`], the model engine describes itself with [`LlmDescription`], and
//! tests inspect the same types. Keys appear only as whether one is set; URLs lose their
//! credentials and query.

use std::time::Duration;

use serde::Serialize;

use super::choices::{FallbackPolicy, ModelKind, Strategy, SummarizerChoice};
use super::llm::{LlmConfig, ModelConfig};
use super::model_options::TokenLimitParam;
use super::url::redact_url;
use super::{Config, LogFormat};

/// The service's settings as `GET /v1/config` shows them; `summarizer` is the
/// summarizer's own description (an engine's [`LlmDescription`], or a test's stand-in).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigDescription<S> {
    pub listen: String,
    pub max_body_bytes: usize,
    pub max_entries: usize,
    pub max_concurrency: usize,
    pub request_timeout_secs: u64,
    pub shutdown_grace_secs: u64,
    pub heartbeat_ms: u64,
    pub job_ttl_secs: u64,
    pub jobs_max: usize,
    pub jobs_max_bytes: usize,
    pub memory_budget_bytes: usize,
    pub max_followers: usize,
    /// Where jobs, idempotency keys and cached summaries live: `memory` (this process)
    /// or `redis` (shared by replicas; the URL is never shown).
    pub state: &'static str,
    pub job_lease_ms: u64,
    pub state_timeout_ms: u64,
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
    pub branch_reserve_tokens: u64,
    pub context_window: u64,
    pub pin: bool,
    pub pin_budget_share: f64,
    pub min_progress: f64,
    pub prompts_dir: Option<String>,
    pub log_format: LogFormat,
    /// The inspector page on `GET /`.
    pub inspector: bool,
    pub summarizer: S,
}

/// The summarizer's settings as its engine reports them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmDescription {
    pub summarizer: SummarizerChoice,
    pub fallback: FallbackPolicy,
    pub candidates: Vec<CandidateDescription>,
    pub upstream_timeout_ms: u64,
    /// Silence that abandons a streaming attempt (0: never).
    pub model_stall_ms: u64,
    pub deadline_ms: u64,
    pub retries: u32,
    pub backoff: BackoffDescription,
    pub cache: CacheDescription,
    /// Mixture-of-Agents, when a `[moa]` table is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moa: Option<MoaDescription>,
}

/// The `[moa]` table: proposers and aggregator by their `[[models]]` names.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MoaDescription {
    pub proposers: Vec<String>,
    pub aggregator: String,
    /// The strategy of a request that names none.
    pub strategy: Strategy,
}

/// One model candidate, without its key.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateDescription {
    pub name: String,
    pub kind: ModelKind,
    pub model: String,
    /// Without user info, query or fragment.
    pub base_url: String,
    pub context_window: u64,
    pub api_key_set: bool,
    /// The options of `model_options.rs` that are set (headers and query parameters by
    /// name only: their values may be credentials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_limit_param: Option<TokenLimitParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackoffDescription {
    pub base_ms: u64,
    pub cap_ms: u64,
    /// Always `full`: a wait is drawn from `0..=min(cap, base × 2^n)`.
    pub jitter: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheDescription {
    pub max_entries: usize,
    pub max_bytes: u64,
    /// Answers cached now: a running engine fills it in (0 in the configuration's own
    /// description).
    pub entries: usize,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Config {
    /// The effective non-secret settings, with `summarizer` describing the summarizer.
    pub fn describe<S: Serialize>(&self, summarizer: S) -> ConfigDescription<S> {
        ConfigDescription {
            listen: self.listen.to_string(),
            max_body_bytes: self.max_body_bytes,
            max_entries: self.max_entries,
            max_concurrency: self.max_concurrency,
            request_timeout_secs: self.request_timeout.as_secs(),
            shutdown_grace_secs: self.shutdown_grace.as_secs(),
            heartbeat_ms: millis(self.heartbeat),
            job_ttl_secs: self.job_ttl.as_secs(),
            jobs_max: self.jobs_max,
            jobs_max_bytes: self.jobs_max_bytes,
            memory_budget_bytes: self.memory_budget_bytes,
            max_followers: self.max_followers,
            state: if self.redis_url.is_some() {
                "redis"
            } else {
                "memory"
            },
            job_lease_ms: millis(self.job_lease),
            state_timeout_ms: millis(self.state_timeout),
            keep_recent_tokens: self.keep_recent_tokens,
            reserve_tokens: self.reserve_tokens,
            branch_reserve_tokens: self.branch_reserve_tokens,
            context_window: self.context_window,
            pin: self.pin,
            pin_budget_share: self.pin_budget_share,
            min_progress: self.min_progress,
            prompts_dir: self.prompts_dir.as_ref().map(|p| p.display().to_string()),
            log_format: self.log_format,
            inspector: self.inspector,
            summarizer,
        }
    }
}

impl LlmConfig {
    /// The summarizer's non-secret settings (no answers cached yet).
    pub fn describe(&self) -> LlmDescription {
        LlmDescription {
            summarizer: self.summarizer,
            fallback: self.fallback,
            candidates: self.models.iter().map(ModelConfig::describe).collect(),
            upstream_timeout_ms: millis(self.upstream_timeout),
            model_stall_ms: millis(self.stall),
            deadline_ms: millis(self.deadline),
            retries: self.retries,
            backoff: BackoffDescription {
                base_ms: millis(self.backoff_base),
                // What the engine waits at most: a cap below the base is the base.
                cap_ms: millis(self.backoff_cap.max(self.backoff_base)),
                jitter: "full",
            },
            cache: CacheDescription {
                max_entries: self.cache_entries,
                max_bytes: self.cache_bytes,
                entries: 0,
            },
            moa: self.moa.as_ref().map(|m| MoaDescription {
                proposers: m.proposers.clone(),
                aggregator: m.aggregator.clone(),
                strategy: m.strategy,
            }),
        }
    }
}

impl ModelConfig {
    pub fn describe(&self) -> CandidateDescription {
        let o = &self.options;
        CandidateDescription {
            name: self.name.clone(),
            kind: self.kind,
            model: self.model.clone(),
            base_url: redact_url(&self.base_url),
            context_window: self.context_window,
            api_key_set: self.api_key.is_some(),
            token_limit_param: Some(o.token_limit_param).filter(|p| *p != TokenLimitParam::Auto),
            temperature: o.temperature,
            top_p: o.top_p,
            reasoning_effort: o.reasoning_effort.clone(),
            thinking_budget: o.thinking_budget,
            max_output_tokens: o.max_output_tokens,
            headers: o.headers.iter().map(|(n, _)| n.clone()).collect(),
            query: o.query.iter().map(|(n, _)| n.clone()).collect(),
            deployment: o.deployment.clone(),
            api_version: o.api_version.clone(),
            stream: o.stream,
            stall_ms: o.stall_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `GET /v1/config` answers this document: its names are part of the API.
    #[test]
    fn the_description_keeps_its_names() {
        let mut llm = LlmConfig::default();
        llm.models.push(ModelConfig {
            name: "local".into(),
            kind: ModelKind::Openai,
            model: "m".into(),
            base_url: "http://user:pw@127.0.0.1:1/v1?token=t".into(),
            context_window: 1000,
            api_key: Some("sk-SECRET".into()),
            options: Default::default(),
        });
        let config = Config::default();
        let v = serde_json::to_value(config.describe(llm.describe())).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "listen",
                "maxBodyBytes",
                "maxEntries",
                "maxConcurrency",
                "requestTimeoutSecs",
                "shutdownGraceSecs",
                "heartbeatMs",
                "jobTtlSecs",
                "jobsMax",
                "jobsMaxBytes",
                "memoryBudgetBytes",
                "maxFollowers",
                "state",
                "jobLeaseMs",
                "stateTimeoutMs",
                "keepRecentTokens",
                "reserveTokens",
                "branchReserveTokens",
                "contextWindow",
                "pin",
                "pinBudgetShare",
                "minProgress",
                "promptsDir",
                "logFormat",
                "inspector",
                "summarizer"
            ]
        );
        assert_eq!(v["listen"], "127.0.0.1:8080");
        assert_eq!(v["logFormat"], "pretty");
        let s = &v["summarizer"];
        assert_eq!(
            s["candidates"][0],
            serde_json::json!({"name": "local", "kind": "openai", "model": "m",
                "baseUrl": "http://127.0.0.1:1/v1", "contextWindow": 1000, "apiKeySet": true})
        );
        assert_eq!(
            s["backoff"],
            serde_json::json!({"baseMs": 250, "capMs": 8000, "jitter": "full"})
        );
        assert_eq!(
            s["cache"],
            serde_json::json!({"maxEntries": 1024, "maxBytes": 33554432, "entries": 0})
        );
        assert_eq!(s["upstreamTimeoutMs"], 60_000);
        assert_eq!(s["deadlineMs"], 108_000);
        assert_eq!(
            (s["summarizer"].as_str(), s["fallback"].as_str()),
            (Some("extractive"), Some("extractive"))
        );
        assert!(!v.to_string().contains("SECRET") && !v.to_string().contains("pw"));
    }
}
