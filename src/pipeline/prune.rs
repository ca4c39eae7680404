//! `/v1/prune` and `compactd prune`: tool-output pruning over a session path.

use serde::Serialize;
use serde_json::value::RawValue;

use compactd_core::compaction::prune::{plan_pruning, pruned_entry, PruneSettings};
use compactd_core::session::{Entry, InputError};

use super::input::SessionInput;
use super::options::PruneOptions;

/// The answer of `/v1/prune`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PruneResponse {
    /// How many tool results were pruned (0: nothing changes).
    pub pruned_count: usize,
    /// Estimated tokens saved.
    pub tokens_saved: u64,
    /// The changed entries, whole, in path order: the message's `content` is one text
    /// block `[Output truncated - N tokens]` and `prunedAt` is set; every other field is
    /// as sent. Entries of a v1 file carry their migrated `id` and `parentId`.
    #[schema(value_type = Vec<Object>)]
    pub entries: Vec<Box<RawValue>>,
    /// Input position of each changed entry (header = 0).
    pub entry_indexes: Vec<usize>,
}

/// The prune settings of a request.
pub fn settings(options: &PruneOptions) -> PruneSettings {
    let defaults = PruneSettings::default();
    PruneSettings {
        protect_tokens: options.protect_tokens.unwrap_or(defaults.protect_tokens),
        minimum_savings: options.minimum_savings.unwrap_or(defaults.minimum_savings),
        protected_tools: options
            .protected_tools
            .clone()
            .unwrap_or(defaults.protected_tools),
    }
}

/// One tool result to prune.
#[derive(Debug, Clone, Copy)]
pub struct Change<'s, 'a> {
    pub entry: &'s Entry<'a>,
    /// Its tokens before pruning.
    pub tokens: u64,
}

/// What pruning the requested path changes.
#[derive(Debug)]
pub struct Pruning<'s, 'a> {
    /// In path order; empty when nothing is pruned.
    pub changes: Vec<Change<'s, 'a>>,
    pub tokens_saved: u64,
}

/// Decides what to prune on the input's path (`leafId`, or the last entry).
pub fn plan_prune<'s, 'a>(
    input: &'s SessionInput<'a, PruneOptions>,
) -> Result<Pruning<'s, 'a>, InputError> {
    let session = &input.session;
    let positions = input.path(input.options.leaf_id.as_deref())?;
    let path: Vec<&'s Entry<'a>> = positions.iter().map(|&i| &session.entries[i]).collect();
    let p = plan_pruning(&path, &settings(&input.options));
    Ok(Pruning {
        changes: p
            .candidates
            .iter()
            .map(|c| Change {
                entry: path[c.path_index],
                tokens: c.tokens,
            })
            .collect(),
        tokens_saved: p.tokens_saved,
    })
}

impl Pruning<'_, '_> {
    /// The answer, with `prunedAt` = `pruned_at` (ms since the epoch).
    pub fn response(&self, pruned_at: u64) -> Result<PruneResponse, serde_json::Error> {
        let entries = self
            .changes
            .iter()
            .map(|c| RawValue::from_string(pruned_entry(c.entry, c.tokens, pruned_at, true)))
            .collect::<Result<_, _>>()?;
        Ok(PruneResponse {
            pruned_count: self.changes.len(),
            tokens_saved: self.tokens_saved,
            entries,
            entry_indexes: self.changes.iter().map(|c| c.entry.index).collect(),
        })
    }

    /// The whole input with each changed entry's text replaced: every other byte as
    /// read. The rewritten entries keep the file's format (no ids added to a v1 file).
    /// `body` must be the buffer the session was parsed from.
    pub fn rewrite(&self, body: &[u8], pruned_at: u64) -> Result<Vec<u8>, String> {
        let mut spans = Vec::with_capacity(self.changes.len());
        for c in &self.changes {
            let raw = c.entry.raw.as_bytes();
            let start = (raw.as_ptr() as usize)
                .checked_sub(body.as_ptr() as usize)
                .filter(|s| s + raw.len() <= body.len())
                .ok_or("an entry is not part of the body it was parsed from")?;
            let text = pruned_entry(c.entry, c.tokens, pruned_at, false);
            spans.push((start, start + raw.len(), text));
        }
        spans.sort_by_key(|s| s.0);
        let extra: usize = spans.iter().map(|s| s.2.len()).sum();
        let mut out = Vec::with_capacity(body.len() + extra);
        let mut at = 0;
        for (start, end, text) in spans {
            if start < at {
                return Err("changed entries overlap".into());
            }
            out.extend_from_slice(&body[at..start]);
            out.extend_from_slice(text.as_bytes());
            at = end;
        }
        out.extend_from_slice(&body[at..]);
        Ok(out)
    }
}

/// Milliseconds since the Unix epoch (the `prunedAt` of a run).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
