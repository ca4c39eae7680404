//! `compactd prepare`: the cut point and summarizer requests, like `POST /v1/prepare`.

use clap::Args;

use crate::config::Config;
use crate::pipeline::prepare_response;
use crate::summarize::Prompts;

use super::error::CliError;
use super::input::{offline, write_prepared, InputArgs};

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Leave out messagesToSummarize and turnPrefixMessages.
    #[arg(long)]
    pub no_messages: bool,
}

pub fn run(args: PrepareArgs, config: &Config, prompts: &Prompts) -> Result<(), CliError> {
    let PrepareArgs { input, no_messages } = args;
    let mut options = input.options();
    if no_messages {
        options.include_messages = Some(false);
    }
    offline(&input, options, |inp, out| {
        let answer = prepare_response(inp, prompts, config.settings(), None)?;
        write_prepared(out, &answer, input.pretty)
    })
}
