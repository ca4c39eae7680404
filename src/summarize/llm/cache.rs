//! The cache of identical summarizer requests: in memory, and shared by the replicas
//! through Redis when `COMPACTD_REDIS_URL` is set.
//!
//! Keys are SHA-256 digests of (strategy, candidates, system prompt, prompt, output
//! budget), so a
//! prompt of megabytes is not kept a second time and two different requests cannot share
//! an entry. Only model answers are stored; the in-memory tier is bounded by entries and
//! bytes.
//!
//! Design decisions:
//! * Two tiers: this process's first (no round trip), then the shared one; a shared hit
//!   is copied into the local tier. Writes go to both, before the answer is returned, so
//!   the next identical request on any replica is a hit.
//! * Single flight reaches across replicas through the shared tier ([`SummaryCache::claim`],
//!   see `state::SharedCache`).
//! * The shared tier stores [`Stored`] as JSON: the answer without what describes this
//!   call (`retries`, `cached`). A Redis that fails is a miss (see `state::SharedCache`).

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::candidates::Candidate;
use crate::config::Strategy;
use crate::state::redis::cache::{Claim, FLIGHT_POLL};
use crate::state::SharedCache;
use crate::summarize::{MoaReport, SummarizerKind, Summary, SummaryRequest, Usage};

pub(super) type Key = [u8; 32];

/// Approximate bytes an entry costs besides its text (key, bookkeeping, the model name).
const ENTRY_OVERHEAD: u64 = 128;

#[derive(Debug, Clone)]
struct SizeWeighter {
    /// `bytes / entries`: no entry weighs less, so at most `entries` fit.
    min_weight: u64,
}

impl Weighter<Key, Arc<Summary>> for SizeWeighter {
    fn weight(&self, _key: &Key, value: &Arc<Summary>) -> u64 {
        let size = value.text.len() as u64 + value.model.len() as u64 + ENTRY_OVERHEAD;
        size.max(self.min_weight)
    }
}

pub(super) struct SummaryCache {
    inner: Option<Cache<Key, Arc<Summary>, SizeWeighter>>,
    shared: Option<SharedCache>,
}

/// A summary as the shared tier keeps it.
#[derive(Serialize, Deserialize)]
struct Stored {
    text: String,
    usage: Usage,
    model: String,
    summarizer: SummarizerKind,
    #[serde(default)]
    moa: Option<MoaReport>,
    #[serde(default)]
    warnings: Vec<String>,
}

impl Stored {
    fn of(s: &Summary) -> Self {
        Stored {
            text: s.text.clone(),
            usage: s.usage,
            model: s.model.clone(),
            summarizer: s.summarizer,
            moa: s.moa.clone(),
            warnings: s.warnings.clone(),
        }
    }

    fn summary(self) -> Summary {
        Summary {
            text: self.text,
            usage: self.usage,
            model: self.model,
            summarizer: self.summarizer,
            retries: 0,
            cached: true,
            moa: self.moa,
            warnings: self.warnings,
        }
    }
}

impl SummaryCache {
    /// A cache of at most `entries` answers and about `bytes` bytes; none when either is 0.
    pub fn new(entries: usize, bytes: u64) -> Self {
        let inner = (entries > 0 && bytes > 0).then(|| {
            let weighter = SizeWeighter {
                min_weight: (bytes / entries as u64).max(1),
            };
            Cache::with_weighter(entries, bytes, weighter)
        });
        SummaryCache {
            inner,
            shared: None,
        }
    }

    /// Adds the tier the replicas share.
    pub fn share(&mut self, shared: SharedCache) {
        self.shared = Some(shared);
    }

    /// `candidates`: the list tried in order (`single`), or the proposers then the
    /// aggregator (`moa`).
    pub fn key(strategy: Strategy, candidates: &[&Candidate], req: &SummaryRequest) -> Key {
        fn field(h: &mut Sha256, bytes: &[u8]) {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        let mut h = Sha256::new();
        field(&mut h, b"compactd-summary-cache-v2");
        field(&mut h, strategy.as_str().as_bytes());
        h.update((candidates.len() as u64).to_le_bytes());
        for c in candidates {
            field(&mut h, c.name.as_bytes());
            field(&mut h, c.kind.as_str().as_bytes());
            field(&mut h, c.model.as_bytes());
            field(&mut h, c.endpoint.as_str().as_bytes());
        }
        field(&mut h, req.system_prompt.as_bytes());
        field(&mut h, req.prompt.as_bytes());
        h.update(req.max_tokens.to_le_bytes());
        h.finalize().into()
    }

    /// This process's answer, else the shared one (then kept here too).
    pub async fn get(&self, key: &Key) -> Option<Arc<Summary>> {
        if let Some(hit) = self.inner.as_ref().and_then(|c| c.get(key)) {
            return Some(hit);
        }
        let bytes = self.shared.as_ref()?.get(key).await?;
        // An entry this version cannot read is a miss (it is overwritten on the answer).
        let stored: Stored = serde_json::from_slice(&bytes).ok()?;
        let summary = Arc::new(stored.summary());
        if let Some(cache) = &self.inner {
            cache.insert(*key, Arc::clone(&summary));
        }
        Some(summary)
    }

    /// Single flight across replicas: `None` when another replica answered `key` while
    /// we waited (it is in the cache now); else the claim to make the call (nothing
    /// held without a shared tier).
    pub async fn claim(&self, key: &Key, lease: std::time::Duration) -> Option<Option<Claim>> {
        let Some(shared) = &self.shared else {
            return Some(None);
        };
        loop {
            if let Some(claim) = shared.claim(key, lease).await {
                return Some(Some(claim));
            }
            // Another replica is calling: its answer lands in the shared tier, or its
            // claim goes (failed, cancelled, or expired with a dead replica).
            loop {
                tokio::time::sleep(FLIGHT_POLL).await;
                if self.get(key).await.is_some() {
                    return None;
                }
                if !shared.claimed(key).await {
                    break;
                }
            }
        }
    }

    pub async fn insert(&self, key: Key, summary: Summary) {
        if let Some(shared) = &self.shared {
            if let Ok(bytes) = serde_json::to_vec(&Stored::of(&summary)) {
                shared.set(&key, bytes).await;
            }
        }
        if let Some(cache) = &self.inner {
            cache.insert(key, Arc::new(summary));
        }
    }

    pub fn len(&self) -> usize {
        self.inner.as_ref().map_or(0, Cache::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(text: &str) -> Summary {
        Summary {
            text: text.into(),
            usage: Usage::default(),
            model: "openai/m".into(),
            summarizer: SummarizerKind::Llm,
            retries: 0,
            cached: false,
            moa: None,
            warnings: Vec::new(),
        }
    }

    #[tokio::test]
    async fn bounded_by_entries_and_bytes() {
        let cache = SummaryCache::new(4, 1 << 20);
        for i in 0..20u8 {
            cache.insert([i; 32], summary("short")).await;
        }
        assert!(cache.len() <= 4, "{}", cache.len());

        let cache = SummaryCache::new(1000, 10_000);
        for i in 0..20u8 {
            cache.insert([i; 32], summary(&"x".repeat(2_000))).await;
        }
        assert!(cache.len() <= 5, "{}", cache.len());

        let off = SummaryCache::new(0, 10_000);
        off.insert([1; 32], summary("a")).await;
        assert!(off.get(&[1; 32]).await.is_none());
    }
}

#[cfg(test)]
mod stored_tests {
    use super::*;

    #[test]
    fn the_shared_form_reads_back_as_a_cached_answer() {
        let s = Summary {
            text: "t".into(),
            usage: Usage::default(),
            model: "openai/m".into(),
            summarizer: SummarizerKind::Llm,
            retries: 2,
            cached: false,
            moa: None,
            warnings: vec!["w".into()],
        };
        let bytes = serde_json::to_vec(&Stored::of(&s)).unwrap();
        let back = serde_json::from_slice::<Stored>(&bytes).unwrap().summary();
        assert_eq!(
            back,
            Summary {
                retries: 0,
                cached: true,
                ..s
            }
        );
    }
}
