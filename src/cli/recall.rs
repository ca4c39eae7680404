//! `compactd recall`: search what a compaction took out of the context, like
//! `POST /v1/recall`.

use clap::Args;

use crate::config::Config;
use crate::pipeline::options::RecallScope;
use crate::pipeline::recall::recall;
use crate::pipeline::RecallOptions;

use super::error::CliError;
use super::input::{offline, write_json, InputArgs};

#[derive(Debug, Args)]
pub struct RecallArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The words or identifiers to search for.
    #[arg(long, short)]
    pub query: String,
    /// Matches to print, best first [5, at most 50].
    #[arg(long)]
    pub limit: Option<u64>,
    /// `compacted` (what the latest compaction took out of the context) or `all`.
    #[arg(long, value_enum)]
    pub scope: Option<ScopeArg>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ScopeArg {
    Compacted,
    All,
}

pub fn run(args: RecallArgs, config: &Config) -> Result<(), CliError> {
    let RecallArgs {
        input,
        query,
        limit,
        scope,
    } = args;
    let options = RecallOptions {
        q: Some(query),
        limit,
        scope: scope.map(|s| match s {
            ScopeArg::Compacted => RecallScope::Compacted,
            ScopeArg::All => RecallScope::All,
        }),
        leaf_id: input.leaf_id.clone(),
        keep_recent_tokens: input.keep_recent_tokens,
        reserve_tokens: input.reserve_tokens,
    };
    let defaults = config.settings();
    offline(&input, options, |inp, out| {
        let answer = recall(inp, defaults)?;
        write_json(out, &answer, input.pretty)
    })
}
