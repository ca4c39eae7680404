//! Raw TCP upstreams that break the protocol: the engine falls back or fails cleanly,
//! within the deadline.

use std::time::Instant;

use compactd::config::FallbackPolicy;
use compactd::summarize::{Mode, Silent, Summarize, SummarizeError, SummarizerKind};

use crate::helpers::*;
use crate::upstreams::*;

#[tokio::test]
async fn a_misbehaving_upstream_falls_back_or_fails_cleanly_within_the_deadline() {
    for &(how, failure, transient) in MISBEHAVIOURS {
        let (base, requests) = raw_upstream(how).await;
        let mut cfg = raw_config(base, how);
        let start = Instant::now();
        let s = engine(&cfg)
            .summarize(&request("p"), Mode::WithFallback, &Silent)
            .await;
        let s = s.unwrap_or_else(|e| panic!("{how:?}: {e:?}"));
        assert_eq!(s.summarizer, SummarizerKind::Extractive, "{how:?}");
        assert_eq!(s.text, EXTRACTIVE_TEXT, "{how:?}");
        assert!(
            start.elapsed() < cfg.deadline,
            "{how:?}: {:?}",
            start.elapsed()
        );

        cfg.fallback = FallbackPolicy::None;
        let start = Instant::now();
        let err = engine(&cfg)
            .summarize(&request("q"), Mode::WithFallback, &Silent)
            .await
            .unwrap_err();
        assert!(
            start.elapsed() < cfg.deadline,
            "{how:?}: {:?}",
            start.elapsed()
        );
        let SummarizeError::Upstream(message) = &err else {
            panic!("{how:?}: expected Upstream, got {err:?}");
        };
        assert!(message.contains(failure), "{how:?}: {message}");
        let attempts = if transient {
            "(2 attempts)"
        } else {
            "(1 attempt)"
        };
        assert!(message.contains(attempts), "{how:?}: {message}");
        assert!(!message.contains(KEY), "{how:?}: {message}");
        // One request per attempt, over both calls.
        let expected = if transient { 4 } else { 2 };
        assert_eq!(
            requests.load(std::sync::atomic::Ordering::SeqCst),
            expected,
            "{how:?}"
        );
    }
}
