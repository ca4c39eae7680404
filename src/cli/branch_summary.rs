//! `compactd branch-summary`: the summary of a branch left behind, like
//! `POST /v1/branch-summary`.

use clap::Args;

use crate::config::Config;
use crate::pipeline::branch::{self, run_branch_summary};
use crate::pipeline::BranchSummaryOptions;
use crate::pipeline::Planned;
use crate::summarize::Prompts;

use super::error::CliError;
use super::input::{block_on, offline, parse_strategy, write_json, InputArgs};

#[derive(Debug, Args)]
pub struct BranchSummaryArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The leaf being left (oldLeafId).
    #[arg(long = "from")]
    pub from: String,
    /// Where the session goes back to (targetId).
    #[arg(long = "to")]
    pub to: String,
    /// customInstructions replace the template instead of adding focus.
    #[arg(long)]
    pub replace_instructions: bool,
    /// A configured model name.
    #[arg(long)]
    pub model: Option<String>,
    /// `single` or `moa` (Mixture-of-Agents, the `[moa]` models); default: the configured one.
    #[arg(long, value_parser = parse_strategy)]
    pub strategy: Option<crate::config::Strategy>,
    /// Show what would be summarized; call no model.
    #[arg(long)]
    pub dry_run: bool,
    /// No pinned ledger, no verification of the summary (pin: false).
    #[arg(long)]
    pub no_pin: bool,
}

pub fn run(args: BranchSummaryArgs, config: &Config, prompts: &Prompts) -> Result<(), CliError> {
    let BranchSummaryArgs {
        input,
        from,
        to,
        replace_instructions,
        model,
        strategy,
        dry_run,
        no_pin,
    } = args;
    let shared = input.options();
    let options = BranchSummaryOptions {
        old_leaf_id: Some(from),
        target_id: Some(to),
        custom_instructions: shared.custom_instructions,
        replace_instructions: Some(replace_instructions),
        context_window: shared.context_window,
        reserve_tokens: shared.reserve_tokens,
        model,
        strategy,
        pin: no_pin.then_some(false),
        ..BranchSummaryOptions::default()
    };
    let summarizer = crate::summarize::backend::build(config)?;
    offline(&input, options, |inp, out| {
        let plan = match branch::plan(inp, dry_run, prompts, &*summarizer, config)? {
            Planned::DryRun(answer) => return write_json(out, &answer, input.pretty),
            Planned::Run(plan) => plan,
        };
        let result = block_on(run_branch_summary(
            plan,
            prompts,
            &*summarizer,
            time::OffsetDateTime::now_utc(),
            &crate::summarize::Silent,
        ))??;
        write_json(out, &result, input.pretty)
    })
}
