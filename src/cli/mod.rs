//! The command line: `serve` (default) and offline runs of the same pipelines.
//!
//! One file per subcommand (its flags and its `run`); `input` holds what the offline
//! commands share (the session-file flags, reading, writing the answer) and `error` how a
//! failure ends the process.
//!
//! Every failure is a [`CliError`], which decides the exit code and what is printed: a
//! failed offline run prints the same problem document the server would answer with
//! (exit 1); a command that cannot start (configuration, prompts, summarizer, a file that
//! cannot be read or written) prints one `compactd: …` line (exit 2); a server that cannot
//! listen or fails exits 1.

mod branch_summary;
mod compact;
mod error;
mod hermes;
mod input;
mod inspect;
mod prepare;
mod prune;
mod recall;
mod serve;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::http;
use crate::summarize::Prompts;

pub use error::{CliError, RequestError};
pub use input::{Format, InputArgs};

#[derive(Debug, Parser)]
#[command(
    name = "compactd",
    version,
    about = "Context compaction for LLM coding agents"
)]
pub struct Cli {
    /// TOML configuration file (also COMPACTD_CONFIG).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server (the default).
    Serve {
        /// Address to listen on (overrides COMPACTD_LISTEN).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Print the cut point and summarizer requests for a session file, like POST /v1/prepare.
    Prepare(prepare::PrepareArgs),
    /// Compact a session file, like POST /v1/compact: summaries from the configured
    /// summarizer and a ready-to-append compaction entry.
    Compact(compact::CompactArgs),
    /// Summarize the branch left when going back from --from to --to, like
    /// POST /v1/branch-summary.
    BranchSummary(branch_summary::BranchSummaryArgs),
    /// Prune old tool outputs of a session file, like POST /v1/prune: prints the changed
    /// entries, or with -o writes the whole file with them replaced.
    Prune(prune::PruneArgs),
    /// Search what a compaction took out of the context of a session file, like
    /// POST /v1/recall: the matching entries, best first, each with its best passage.
    Recall(recall::RecallArgs),
    /// Compact a hermes-agent conversation, like POST /v1/hermes/compress. FILE holds
    /// the request object (`{"messages": [...], "contextLength": N, ...}`) or a bare
    /// message list (then --context-length is needed).
    HermesCompress(hermes::HermesArgs),
    /// Write the inspector's view of a session file (timeline, cut point, files, requests,
    /// an offline compaction) as one self-contained HTML file.
    Inspect(inspect::InspectArgs),
    /// Print the OpenAPI description of the HTTP API.
    Openapi,
}

/// Runs the command line; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    match execute(cli) {
        Ok(()) => 0,
        Err(e) => {
            let code = e.exit_code();
            e.report();
            code
        }
    }
}

fn execute(cli: Cli) -> Result<(), CliError> {
    let command = cli.command.unwrap_or(Command::Serve { listen: None });
    if let Command::Openapi = command {
        // Needs no configuration.
        println!("{}", http::openapi::spec_json());
        return Ok(());
    }
    let config = Config::load(cli.config.as_deref())?;
    if let Command::Serve { listen } = command {
        return serve::run(config, listen);
    }
    let prompts = Prompts::load(config.prompts_dir.as_deref())?;
    match command {
        Command::Openapi | Command::Serve { .. } => Ok(()),
        Command::Prepare(args) => prepare::run(args, &config, &prompts),
        Command::Compact(args) => compact::run(args, &config, &prompts),
        Command::BranchSummary(args) => branch_summary::run(args, &config, &prompts),
        Command::Prune(args) => prune::run(args),
        Command::Recall(args) => recall::run(args, &config),
        Command::HermesCompress(args) => hermes::run(args, &config, &prompts),
        Command::Inspect(args) => inspect::run(args, &config, &prompts),
    }
}
