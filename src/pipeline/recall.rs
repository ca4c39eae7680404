//! `/v1/recall` and `compactd recall`: search the part of a session a compaction took out
//! of the context (`compactd_core::recall`), or the whole path.

use serde::Serialize;

use compactd_core::compaction::prepare::prepare_compaction;
use compactd_core::compaction::Settings;
use compactd_core::recall::{documents, search, Hit};
use compactd_core::session::{Entry, InputError, Violation};

use super::input::SessionInput;
use super::options::{RecallOptions, RecallScope};

/// Matches when the request names no `limit`.
pub const DEFAULT_LIMIT: u64 = 5;

/// The answer of `/v1/recall`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallAnswer {
    pub query: String,
    pub scope: RecallScope,
    /// Entries searched (those with text in the scope).
    pub searched: usize,
    /// Best first.
    pub matches: Vec<RecallMatch>,
}

/// One matching entry.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallMatch {
    pub entry_id: String,
    /// `user`, `assistant`, `toolResult`, `bashExecution`, `custom`, `branchSummary` or
    /// `compactionSummary`.
    pub role: &'static str,
    /// A tool result's tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The best matching passage, verbatim: at most 320 characters, cut at words (`…`
    /// where cut), secrets redacted.
    pub excerpt: String,
    /// BM25 (higher is better), 4 decimals.
    pub score: f64,
}

impl From<Hit> for RecallMatch {
    fn from(h: Hit) -> Self {
        RecallMatch {
            entry_id: h.entry_id,
            role: h.role,
            tool_name: h.tool_name,
            excerpt: h.excerpt,
            score: h.score,
        }
    }
}

/// Searches the input's path (`leafId`, or the last entry) in the requested scope;
/// `defaults`: the cut settings when the request names none.
pub fn recall(
    input: &SessionInput<RecallOptions>,
    defaults: Settings,
) -> Result<RecallAnswer, InputError> {
    let o = &input.options;
    let query =
        o.q.as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| {
                InputError::invalid(Violation {
                    pointer: input.option_pointer("q"),
                    message: "`q` is required: the words or identifiers to search for".into(),
                    line: None,
                })
            })?;
    let limit = o.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > compactd_core::recall::MAX_LIMIT as u64 {
        return Err(InputError::invalid(Violation {
            pointer: input.option_pointer("limit"),
            message: format!(
                "`limit` must be between 1 and {}",
                compactd_core::recall::MAX_LIMIT
            ),
            line: None,
        }));
    }
    let session = &input.session;
    let positions = input.path(o.leaf_id.as_deref())?;
    let path: Vec<&Entry> = positions.iter().map(|&i| &session.entries[i]).collect();
    let scope = o.scope.unwrap_or_default();
    let searched_part = match scope {
        RecallScope::All => &path[..],
        RecallScope::Compacted => {
            let settings = Settings {
                keep_recent_tokens: o.keep_recent_tokens.unwrap_or(defaults.keep_recent_tokens),
                reserve_tokens: o.reserve_tokens.unwrap_or(defaults.reserve_tokens),
            };
            &path[..compacted_end(&path, settings)]
        }
    };
    let docs = documents(searched_part);
    let matches = search(&docs, query, limit as usize)
        .into_iter()
        .map(RecallMatch::from)
        .collect();
    Ok(RecallAnswer {
        query: query.to_string(),
        scope,
        searched: docs.len(),
        matches,
    })
}

/// Where the compacted part of `path` ends: the latest compaction's first kept entry
/// (everything before it, when that entry is not on the path); with no compaction, the cut
/// a compaction with `settings` would make (nothing, when there would be none).
fn compacted_end(path: &[&Entry], settings: Settings) -> usize {
    if let Some((at, c)) = path
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| e.compaction().map(|c| (i, c)))
    {
        let kept = c.first_kept_entry_id.as_deref();
        return path[..at]
            .iter()
            .position(|e| kept.is_some() && e.id() == kept)
            .unwrap_or(at);
    }
    prepare_compaction(path, settings).map_or(0, |prep| prep.cut.first_kept)
}
