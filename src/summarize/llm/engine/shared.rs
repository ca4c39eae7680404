//! Never paying twice: an answer from the summary cache (this process's, then the one the
//! replicas share), from the identical call in progress here (single flight), or from the
//! one another replica is making (its claim on the cache key), before the models are asked.

use super::*;
use crate::summarize::llm::cache::Key;
use crate::summarize::llm::flight::{follow, Role};
use crate::telemetry::metric;

impl Engine {
    /// From the cache, or from the identical call in progress (single flight), or from
    /// `run` (which caches what it wants cached).
    pub(in crate::summarize::llm) async fn shared<F, Fut>(
        &self,
        key: Key,
        sink: &dyn ProgressSink,
        run: F,
    ) -> Result<Summary, Exhausted>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Summary, Exhausted>>,
    {
        let lead = loop {
            if let Some(hit) = self.cached(&key).await {
                sink.emit(cached_step(&hit.model));
                return Ok(hit);
            }
            match self.flights.join(key) {
                Role::Leader(lead) => break lead,
                Role::Follower(rx) => match follow(rx).await {
                    // Shared, not paid for: counted like a cache hit.
                    Some(outcome) => {
                        let shared = outcome.map(|s| Summary {
                            retries: 0,
                            cached: true,
                            ..s
                        });
                        if let Ok(s) = &shared {
                            sink.emit(cached_step(&s.model));
                        }
                        metrics::counter!(metric::SINGLE_FLIGHT_JOINS.name).increment(1);
                        return shared;
                    }
                    // The leader was cancelled: start over (one of us leads now).
                    None => continue,
                },
            }
        };
        // The previous leader may have filled the cache since we looked.
        if let Some(hit) = self.cached(&key).await {
            lead.finish(Ok(hit.clone()));
            sink.emit(cached_step(&hit.model));
            return Ok(hit);
        }
        // Another replica may be making this very call (shared state only).
        let claim = match self.cache.claim(&key, self.deadline).await {
            Some(claim) => claim,
            None => match self.cached(&key).await {
                Some(hit) => {
                    metrics::counter!(metric::SINGLE_FLIGHT_JOINS.name).increment(1);
                    lead.finish(Ok(hit.clone()));
                    sink.emit(cached_step(&hit.model));
                    return Ok(hit);
                }
                None => None,
            },
        };
        let answered = run().await;
        // `run` cached a success before the claim goes, so waiting replicas find it.
        drop(claim);
        lead.finish(answered.clone());
        answered
    }

    pub(in crate::summarize::llm) async fn cache_insert(&self, key: Key, summary: Summary) {
        self.cache.insert(key, summary).await;
    }

    /// Adds the summary cache's tier shared by the replicas (`COMPACTD_REDIS_URL`).
    pub fn share_cache(&mut self, shared: crate::state::SharedCache) {
        self.cache.share(shared);
    }

    pub(in crate::summarize::llm) async fn cached(&self, key: &Key) -> Option<Summary> {
        let hit = self.cache.get(key).await?;
        tracing::debug!(model = %hit.model, "summary served from the cache");
        Some(Summary {
            retries: 0,
            cached: true,
            ..(*hit).clone()
        })
    }
}

/// An answer from the cache.
fn cached_step(model: &str) -> ProgressEvent {
    ProgressEvent::Summarizing {
        part: Part::default(),
        model: model.to_string(),
        attempt: 0,
        cached: true,
    }
}
