//! The §15 answer body of an [`Outcome`]: field names and order as the contract shows
//! them, `usage` and `model` left to the pipeline.

use serde_json::{json, Map, Value};

use super::{Boundaries, Outcome};
use crate::settings::HermesState;

impl Outcome {
    /// The answer body of §15 (`usage` and `model` are the pipeline's).
    pub fn to_json(&self) -> Value {
        let c = &self.common;
        let mut o = Map::new();
        o.insert("compressed".into(), json!(self.compressed()));
        match &self.result {
            Ok(d) => {
                o.insert("messages".into(), Value::Array(d.messages.clone()));
                o.insert("summary".into(), json!(d.summary));
                o.insert("summaryIndex".into(), json!(d.summary_index));
                o.insert("summaryRole".into(), json!(d.summary_role));
                o.insert("summaryMerged".into(), json!(d.summary_merged));
                o.insert("summarizer".into(), json!(d.summarizer));
                if let Some(b) = &c.boundaries {
                    o.insert("boundaries".into(), boundaries_json(b));
                }
                o.insert("sources".into(), json!(d.sources));
                o.insert("tokensBefore".into(), json!(c.tokens_before));
                o.insert("tokensAfter".into(), json!(d.tokens_after));
                o.insert("madeProgress".into(), json!(d.made_progress));
                o.insert("threshold".into(), self.threshold_json());
                o.insert(
                    "requests".into(),
                    requests_json(d.prompt.as_deref(), d.summary_budget),
                );
                o.insert("state".into(), state_json(&d.state));
                o.insert(
                    "fallback".into(),
                    json!({"used": d.fallback_used, "droppedCount": d.dropped, "error": d.error}),
                );
            }
            Err(u) => {
                o.insert("reason".into(), json!(u.reason.as_str()));
                o.insert("messages".into(), Value::Array(c.input.clone()));
                o.insert("tokensBefore".into(), json!(c.tokens_before));
                o.insert("threshold".into(), self.threshold_json());
                o.insert("state".into(), state_json(&c.state));
                if let Some(b) = &c.boundaries {
                    o.insert("boundaries".into(), boundaries_json(b));
                }
                if u.prompt.is_some() {
                    o.insert(
                        "requests".into(),
                        requests_json(u.prompt.as_deref(), u.summary_budget),
                    );
                }
                if let Some(s) = &u.serialized {
                    o.insert("serialized".into(), json!(s));
                }
                if let Some(e) = &u.error {
                    o.insert("error".into(), json!(e));
                }
            }
        }
        Value::Object(o)
    }

    /// For each message of the answer's `messages`, the index of the input message it is
    /// unchanged from (`None`: a summary, or a message pruning or merging rewrote), so
    /// the caller can send those back as the client's own bytes.
    pub fn unchanged_sources(&self) -> Vec<Option<usize>> {
        let input = &self.common.input;
        match &self.result {
            Ok(d) => d
                .messages
                .iter()
                .zip(&d.sources)
                .map(|(m, s)| s.filter(|&i| input.get(i) == Some(m)))
                .collect(),
            Err(_) => (0..input.len()).map(Some).collect(),
        }
    }

    fn threshold_json(&self) -> Value {
        let t = &self.common.threshold;
        json!({
            "thresholdPercent": t.threshold_percent,
            "thresholdTokens": t.threshold_tokens,
            "tailTokenBudget": t.tail_token_budget,
            "maxSummaryTokens": t.max_summary_tokens,
            "shouldCompress": self.common.should_compress,
        })
    }
}

fn boundaries_json(b: &Boundaries) -> Value {
    json!({
        "headSize": b.head_size,
        "compressStart": b.compress_start,
        "compressEnd": b.compress_end,
        "previousSummaryIndex": b.previous_summary_index,
        "turnsStart": b.turns_start,
        "turnsCount": b.turns_count,
        "prunedIndexes": b.pruned_indexes,
    })
}

fn requests_json(prompt: Option<&str>, budget: Option<u64>) -> Value {
    match prompt {
        Some(p) => json!([{
            "kind": "summary",
            "messages": [{"role": "user", "content": p}],
            "summaryBudget": budget,
            "maxTokens": null,
        }]),
        None => json!([]),
    }
}

fn state_json(s: &HermesState) -> Value {
    json!({"compressionCount": s.compression_count, "previousSummary": s.previous_summary})
}
