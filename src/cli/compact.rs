//! `compactd compact`: a whole compaction, like `POST /v1/compact`.

use clap::Args;

use crate::config::Config;
use crate::pipeline::compact::{self, run_compaction};
use crate::pipeline::{CompactOptions, Planned};
use crate::summarize::{Prompts, Silent};

use super::error::CliError;
use super::input::{block_on, offline, parse_strategy, write_json, write_prepared, InputArgs};

#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Also write a one-paragraph summary for a UI.
    #[arg(long)]
    pub short_summary: bool,
    /// A configured model name.
    #[arg(long)]
    pub model: Option<String>,
    /// `single` or `moa` (Mixture-of-Agents, the `[moa]` models); default: the configured one.
    #[arg(long, value_parser = parse_strategy)]
    pub strategy: Option<crate::config::Strategy>,
    /// Answer like `prepare`, call no model.
    #[arg(long)]
    pub dry_run: bool,
    /// No pinned ledger, no verification of the summary (pin: false).
    #[arg(long)]
    pub no_pin: bool,
    /// The context budget after compaction, in tokens (`targetTokens`): compactd picks the
    /// kept tail and the summary budget; --keep-recent-tokens is then not used.
    #[arg(long)]
    pub target_tokens: Option<u64>,
}

pub fn run(args: CompactArgs, config: &Config, prompts: &Prompts) -> Result<(), CliError> {
    let CompactArgs {
        input,
        short_summary,
        model,
        strategy,
        dry_run,
        no_pin,
        target_tokens,
    } = args;
    let options = CompactOptions {
        prepare: input.options(),
        short_summary: Some(short_summary),
        model,
        strategy,
        pin: no_pin.then_some(false),
        target_tokens,
        ..CompactOptions::default()
    };
    let summarizer = crate::summarize::backend::build(config)?;
    offline(&input, options, |inp, out| {
        let plan = match compact::plan(inp, dry_run, prompts, config.settings(), config.checking())?
        {
            Planned::DryRun(answer) => return write_prepared(out, &answer, input.pretty),
            Planned::Run(plan) => plan,
        };
        let result = block_on(run_compaction(
            *plan,
            prompts,
            &*summarizer,
            time::OffsetDateTime::now_utc(),
            &Silent,
        ))??;
        write_json(out, &result, input.pretty)
    })
}
