//! `compactd prune`: old tool outputs pruned, like `POST /v1/prune`, or the whole file
//! rewritten with `-o`.

use std::path::PathBuf;

use clap::Args;

use crate::pipeline::options::comma_list;
use crate::pipeline::prune::plan_prune;
use crate::pipeline::PruneOptions;

use super::error::{CliError, RequestError};
use super::input::{offline_with_body, write_json, write_output, InputArgs};

#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Newest tool-output tokens never pruned [40000].
    #[arg(long)]
    pub protect_tokens: Option<u64>,
    /// Prune only when this many tokens are saved [20000].
    #[arg(long)]
    pub minimum_savings: Option<u64>,
    /// Comma-separated tool names never pruned [skill,read]; "" for none.
    #[arg(long)]
    pub protected_tools: Option<String>,
    /// Write the whole session file, pruned entries replaced and every other line as
    /// read, to this path (`-`: standard output); the counts go to standard error.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: PruneArgs) -> Result<(), CliError> {
    let PruneArgs {
        input,
        protect_tokens,
        minimum_savings,
        protected_tools,
        output,
    } = args;
    let options = PruneOptions {
        leaf_id: input.leaf_id.clone(),
        protect_tokens,
        minimum_savings,
        protected_tools: protected_tools.as_deref().map(comma_list),
    };
    let pruned_at = crate::pipeline::prune::now_ms();
    let mut rewritten = None;
    offline_with_body(&input, options, |inp, body, out| {
        let pruning = plan_prune(inp)?;
        if output.is_none() {
            let answer = pruning
                .response(pruned_at)
                .map_err(|e| RequestError::Internal(format!("cannot rewrite an entry: {e}")))?;
            return write_json(out, &answer, input.pretty);
        }
        let bytes = pruning
            .rewrite(body, pruned_at)
            .map_err(RequestError::Internal)?;
        rewritten = Some((bytes, pruning.changes.len(), pruning.tokens_saved));
        Ok(())
    })?;
    if let (Some(path), Some((bytes, count, saved))) = (output, rewritten) {
        write_output(&path, &bytes).map_err(|source| CliError::Write { path, source })?;
        eprintln!(
            "{}",
            serde_json::json!({"prunedCount": count, "tokensSaved": saved})
        );
    }
    Ok(())
}
