//! The in-memory cache of identical summarizer requests.
//!
//! Keys are SHA-256 digests of (strategy, candidates, system prompt, prompt, output
//! budget), so a
//! prompt of megabytes is not kept a second time and two different requests cannot share
//! an entry. Only model answers are stored; the cache is bounded by entries and bytes.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;
use sha2::{Digest, Sha256};

use super::candidates::Candidate;
use crate::config::Strategy;
use crate::summarize::{Summary, SummaryRequest};

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
        SummaryCache { inner }
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

    pub fn get(&self, key: &Key) -> Option<Arc<Summary>> {
        self.inner.as_ref()?.get(key)
    }

    pub fn insert(&self, key: Key, summary: Summary) {
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
    use crate::summarize::{SummarizerKind, Usage};

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

    #[test]
    fn bounded_by_entries_and_bytes() {
        let cache = SummaryCache::new(4, 1 << 20);
        for i in 0..20u8 {
            cache.insert([i; 32], summary("short"));
        }
        assert!(cache.len() <= 4, "{}", cache.len());

        let cache = SummaryCache::new(1000, 10_000);
        for i in 0..20u8 {
            cache.insert([i; 32], summary(&"x".repeat(2_000)));
        }
        assert!(cache.len() <= 5, "{}", cache.len());

        let off = SummaryCache::new(0, 10_000);
        off.insert([1; 32], summary("a"));
        assert!(off.get(&[1; 32]).is_none());
    }
}
