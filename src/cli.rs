//! The command line: `serve` (default) and offline runs of the same pipelines.
//!
//! Every failure is a [`CliError`], which decides the exit code and what is printed: a
//! failed offline run prints the same problem document the server would answer with
//! (exit 1); a command that cannot start (configuration, prompts, summarizer, a file that
//! cannot be read or written) prints one `compactd: …` line (exit 2); a server that cannot
//! listen or fails exits 1.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Config, ConfigError};
use crate::http;
use crate::pipeline::branch::{plan_branch_summary, run_branch_summary, BranchBudget};
use crate::pipeline::compact::{plan_compaction, run_compaction, NothingToCompact, PlanError};
use crate::pipeline::hermes::{parse_request_with, plan_hermes, run_hermes};
use crate::pipeline::options::{comma_list, Options};
use crate::pipeline::prune::plan_prune;
use crate::pipeline::{
    prepare_response, BodyFormat, BranchSummaryOptions, CompactOptions, PrepareOptions,
    PruneOptions, SessionInput,
};
use crate::session::InputError;
use crate::startup::{Application, StartupError};
use crate::summarize::llm::EngineError;
use crate::summarize::templates::PromptError;
use crate::summarize::{Prompts, SummarizeError};

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
    Prepare {
        #[command(flatten)]
        input: InputArgs,
        /// Leave out messagesToSummarize and turnPrefixMessages.
        #[arg(long)]
        no_messages: bool,
    },
    /// Compact a session file, like POST /v1/compact: summaries from the configured
    /// summarizer and a ready-to-append compaction entry.
    Compact {
        #[command(flatten)]
        input: InputArgs,
        /// Also write a one-paragraph summary for a UI.
        #[arg(long)]
        short_summary: bool,
        /// A configured model name.
        #[arg(long)]
        model: Option<String>,
        /// Answer like `prepare`, call no model.
        #[arg(long)]
        dry_run: bool,
        /// No pinned ledger, no verification of the summary (pin: false).
        #[arg(long)]
        no_pin: bool,
    },
    /// Summarize the branch left when going back from --from to --to, like
    /// POST /v1/branch-summary.
    BranchSummary {
        #[command(flatten)]
        input: InputArgs,
        /// The leaf being left (oldLeafId).
        #[arg(long = "from")]
        from: String,
        /// Where the session goes back to (targetId).
        #[arg(long = "to")]
        to: String,
        /// customInstructions replace the template instead of adding focus.
        #[arg(long)]
        replace_instructions: bool,
        /// A configured model name.
        #[arg(long)]
        model: Option<String>,
        /// Show what would be summarized; call no model.
        #[arg(long)]
        dry_run: bool,
        /// No pinned ledger, no verification of the summary (pin: false).
        #[arg(long)]
        no_pin: bool,
    },
    /// Prune old tool outputs of a session file, like POST /v1/prune: prints the changed
    /// entries, or with -o writes the whole file with them replaced.
    Prune {
        #[command(flatten)]
        input: InputArgs,
        /// Newest tool-output tokens never pruned [40000].
        #[arg(long)]
        protect_tokens: Option<u64>,
        /// Prune only when this many tokens are saved [20000].
        #[arg(long)]
        minimum_savings: Option<u64>,
        /// Comma-separated tool names never pruned [skill,read]; "" for none.
        #[arg(long)]
        protected_tools: Option<String>,
        /// Write the whole session file, pruned entries replaced and every other line as
        /// read, to this path (`-`: standard output); the counts go to standard error.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Compact a hermes-agent conversation, like POST /v1/hermes/compress. FILE holds
    /// the request object (`{"messages": [...], "contextLength": N, ...}`) or a bare
    /// message list (then --context-length is needed).
    HermesCompress {
        /// Request or message-list file (`-` for standard input).
        file: PathBuf,
        /// The main model's context window (sets or overrides `contextLength`).
        #[arg(long)]
        context_length: Option<u64>,
        /// Focus topic for the summary.
        #[arg(long)]
        focus: Option<String>,
        /// A configured model name.
        #[arg(long)]
        model: Option<String>,
        /// Answer like POST /v1/hermes/prepare, call no model.
        #[arg(long)]
        dry_run: bool,
        /// Pretty-print the JSON answer.
        #[arg(long)]
        pretty: bool,
    },
    /// Print the OpenAPI description of the HTTP API.
    Openapi,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Json,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct InputArgs {
    /// Session file (`-` for standard input).
    pub file: PathBuf,
    /// Input format [default: json for *.json, jsonl otherwise].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Entry to compact up to (default: the last entry).
    #[arg(long)]
    pub leaf_id: Option<String>,
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    #[arg(long)]
    pub context_window: Option<u64>,
    /// Appended to the summary instructions as "Additional focus".
    #[arg(long)]
    pub custom_instructions: Option<String>,
    /// Pretty-print the JSON answer.
    #[arg(long)]
    pub pretty: bool,
}

impl InputArgs {
    /// The flags every command shares, as `/v1/prepare`'s options.
    fn options(&self) -> PrepareOptions {
        PrepareOptions {
            leaf_id: self.leaf_id.clone(),
            keep_recent_tokens: self.keep_recent_tokens,
            reserve_tokens: self.reserve_tokens,
            context_window: self.context_window,
            custom_instructions: self.custom_instructions.clone(),
            ..PrepareOptions::default()
        }
    }

    fn format(&self) -> BodyFormat {
        match self.format {
            Some(Format::Json) => BodyFormat::Json,
            Some(Format::Jsonl) => BodyFormat::Jsonl,
            None if self.file.extension().is_some_and(|e| e == "json") => BodyFormat::Json,
            None => BodyFormat::Jsonl,
        }
    }

    fn read(&self) -> std::io::Result<Vec<u8>> {
        if self.file == Path::new("-") {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf)?;
            Ok(buf)
        } else {
            std::fs::read(&self.file)
        }
    }
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Prompts(#[from] PromptError),
    #[error(transparent)]
    Summarizer(#[from] EngineError),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("server error: {0}")]
    Server(#[source] std::io::Error),
    /// An offline run failed the way a request to the server would.
    #[error(transparent)]
    Request(#[from] RequestError),
}

/// Why an offline run of a pipeline failed; reported as the problem document the server
/// answers the same request with.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("nothing to compact")]
    NothingToCompact(NothingToCompact),
    #[error(transparent)]
    Summarize(#[from] SummarizeError),
    /// A failure of this process (writing the answer, the runtime), not of the input.
    #[error("{0}")]
    Internal(String),
}

impl From<PlanError> for RequestError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Input(e) => RequestError::Input(e),
            PlanError::NothingToCompact(n) => RequestError::NothingToCompact(n),
        }
    }
}

impl From<StartupError> for CliError {
    fn from(e: StartupError) -> Self {
        match e {
            StartupError::Prompts(e) => CliError::Prompts(e),
            StartupError::Summarizer(e) => CliError::Summarizer(e),
            StartupError::Bind { addr, source } => CliError::Listen { addr, source },
        }
    }
}

impl CliError {
    /// 1: the run or the server failed; 2: the command could not start.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Config(_)
            | CliError::Prompts(_)
            | CliError::Summarizer(_)
            | CliError::Read { .. }
            | CliError::Write { .. } => 2,
            CliError::Runtime(_)
            | CliError::Listen { .. }
            | CliError::Server(_)
            | CliError::Request(_) => 1,
        }
    }

    /// Prints the error on standard error: a problem document for a failed run, one
    /// `compactd: …` line otherwise.
    pub fn report(self) {
        match self {
            CliError::Request(e) => {
                let problem = serde_json::to_string_pretty(&e.problem()).unwrap_or_default();
                eprintln!("{problem}");
            }
            e => eprintln!("compactd: {e}"),
        }
    }
}

impl RequestError {
    /// The server's problem document for the same failure (one format for both).
    fn problem(self) -> http::problem::Problem {
        let error = match self {
            RequestError::Input(e) => http::ApiError::Input(e),
            RequestError::NothingToCompact(n) => http::ApiError::NothingToCompact(n),
            RequestError::Summarize(e) => http::ApiError::Summarize(e),
            RequestError::Internal(message) => http::ApiError::Internal(message),
        };
        error.problem()
    }
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
        return serve(config, listen);
    }
    let prompts = Prompts::load(config.prompts_dir.as_deref())?;
    match command {
        Command::Openapi | Command::Serve { .. } => Ok(()),
        Command::BranchSummary {
            input,
            from,
            to,
            replace_instructions,
            model,
            dry_run,
            no_pin,
        } => {
            let shared = input.options();
            let options = BranchSummaryOptions {
                old_leaf_id: Some(from),
                target_id: Some(to),
                custom_instructions: shared.custom_instructions,
                replace_instructions: Some(replace_instructions),
                context_window: shared.context_window,
                reserve_tokens: shared.reserve_tokens,
                model,
                pin: no_pin.then_some(false),
                ..BranchSummaryOptions::default()
            };
            let summarizer = crate::summarize::backend::build(&config)?;
            offline(&input, options, |inp, out| {
                let budget = BranchBudget::resolve(&inp.options, &*summarizer, &config);
                let plan = plan_branch_summary(inp, &prompts, budget, config.checking())?;
                if dry_run {
                    return write_json(out, &plan.dry_run(), input.pretty);
                }
                let result = block_on(run_branch_summary(
                    plan,
                    &prompts,
                    &*summarizer,
                    time::OffsetDateTime::now_utc(),
                ))??;
                write_json(out, &result, input.pretty)
            })
        }
        Command::Compact {
            input,
            short_summary,
            model,
            dry_run,
            no_pin,
        } => {
            let options = CompactOptions {
                prepare: input.options(),
                short_summary: Some(short_summary),
                model,
                pin: no_pin.then_some(false),
                ..CompactOptions::default()
            };
            let summarizer = crate::summarize::backend::build(&config)?;
            offline(&input, options, |inp, out| {
                if dry_run {
                    let answer = prepare_response(inp, &prompts, config.settings(), None)?;
                    return write_json(out, &answer, input.pretty);
                }
                let plan = plan_compaction(inp, &prompts, config.settings(), config.checking())?;
                let result = block_on(run_compaction(
                    plan,
                    &prompts,
                    &*summarizer,
                    time::OffsetDateTime::now_utc(),
                ))??;
                write_json(out, &result, input.pretty)
            })
        }
        Command::Prune {
            input,
            protect_tokens,
            minimum_savings,
            protected_tools,
            output,
        } => {
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
                    let answer = pruning.response(pruned_at).map_err(|e| {
                        RequestError::Internal(format!("cannot rewrite an entry: {e}"))
                    })?;
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
        Command::HermesCompress {
            file,
            context_length,
            focus,
            model,
            dry_run,
            pretty,
        } => {
            let bytes = read_file(&file)?;
            let summarizer = crate::summarize::backend::build(&config)?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let run = || -> Result<(), RequestError> {
                let mut req = hermes_request(&bytes, context_length)?;
                req.dry_run |= dry_run;
                if focus.is_some() {
                    req.focus_topic = focus;
                }
                if model.is_some() {
                    req.model = model;
                }
                let planned = plan_hermes(req, &prompts.hermes, &crate::hermes::Options::default());
                let answer = block_on(run_hermes(planned, &*summarizer))??;
                write_json(&mut out, &answer.to_json(), pretty)?;
                out.flush()
                    .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))
            };
            Ok(run()?)
        }
        Command::Prepare { input, no_messages } => {
            let mut options = input.options();
            if no_messages {
                options.include_messages = Some(false);
            }
            offline(&input, options, |inp, out| {
                let answer = prepare_response(inp, &prompts, config.settings(), None)?;
                write_json(out, &answer, input.pretty)
            })
        }
    }
}

/// A file's bytes (`-`: standard input).
fn read_file(path: &Path) -> Result<Vec<u8>, CliError> {
    let read = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map(|_| buf)
    } else {
        std::fs::read(path)
    };
    read.map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A hermes request from a request object or a bare message list.
fn hermes_request(
    bytes: &[u8],
    context_length: Option<u64>,
) -> Result<crate::pipeline::hermes::HermesRequest, RequestError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'[') {
        return Ok(parse_request_with(bytes, context_length)?);
    }
    let mut body = b"{\"messages\":".to_vec();
    body.extend_from_slice(bytes);
    body.push(b'}');
    parse_request_with(&body, context_length)
        .map_err(|e| match e {
            // Positions refer to the file, not to the object wrapped around it.
            InputError::Malformed {
                message,
                line,
                column,
            } => InputError::Malformed {
                message,
                line,
                column: if line == 1 {
                    column.saturating_sub(12)
                } else {
                    column
                },
            },
            InputError::Invalid(mut v) => {
                for item in &mut v {
                    if let Some(rest) = item.pointer.strip_prefix("/messages") {
                        item.pointer = rest.to_string();
                    }
                    if item.message == "missing field `contextLength`" {
                        item.message = "a bare message list needs --context-length".into();
                    }
                }
                InputError::Invalid(v)
            }
            other => other,
        })
        .map_err(RequestError::from)
}

/// Runs one future to completion on a fresh runtime (offline commands).
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, RequestError> {
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| RequestError::Internal(format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(f))
}

/// Streams the answer to `out` (no copy of a possibly large answer in memory).
fn write_json<T: serde::Serialize>(
    out: &mut dyn Write,
    v: &T,
    pretty: bool,
) -> Result<(), RequestError> {
    let r = if pretty {
        serde_json::to_writer_pretty(&mut *out, v)
    } else {
        serde_json::to_writer(&mut *out, v)
    };
    r.and_then(|()| out.write_all(b"\n").map_err(serde_json::Error::io))
        .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))
}

/// Reads the file, runs `f` on the parsed input and prints the JSON answer; a failure of
/// the run is reported as the problem document the server would send.
fn offline<O: Options>(
    args: &InputArgs,
    options: O,
    f: impl FnOnce(&SessionInput<O>, &mut dyn Write) -> Result<(), RequestError>,
) -> Result<(), CliError> {
    offline_with_body(args, options, |input, _, out| f(input, out))
}

/// [`offline`], also handing `f` the bytes the input was parsed from.
fn offline_with_body<O: Options>(
    args: &InputArgs,
    options: O,
    f: impl FnOnce(&SessionInput<O>, &[u8], &mut dyn Write) -> Result<(), RequestError>,
) -> Result<(), CliError> {
    let bytes = args.read().map_err(|source| CliError::Read {
        path: args.file.clone(),
        source,
    })?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    // A local file is the user's own: no entry limit.
    SessionInput::parse(&bytes, args.format(), options)
        .map_err(RequestError::from)
        .and_then(|input| f(&input, &bytes, &mut out))
        .and_then(|()| {
            out.flush()
                .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))
        })?;
    Ok(())
}

/// Writes `bytes` to `path` (`-`: standard output) through a temporary file beside it,
/// so a reader never sees half a session and `-o` may name the input itself.
fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes)?;
        return stdout.flush();
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".compactd-{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// `compactd serve`: the application [`startup`](crate::startup) builds, run until a
/// shutdown signal.
fn serve(mut config: Config, listen: Option<std::net::SocketAddr>) -> Result<(), CliError> {
    if let Some(addr) = listen {
        config.listen = addr;
    }
    crate::telemetry::init(config.log_format);
    let runtime = tokio::runtime::Runtime::new().map_err(CliError::Runtime)?;
    let result = runtime.block_on(async move {
        // Fails before listening when the prompts or the summarizer are unusable.
        let app = Application::build(config).await?;
        app.run_until_stopped().await.map_err(CliError::Server)
    });
    // Dropping the runtime would wait for every blocking task (a parse of a huge body
    // still running after the grace period); the grace period is already over.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_error() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use")
    }

    #[test]
    fn a_server_that_cannot_listen_exits_1() {
        let addr: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
        let e = CliError::from(StartupError::Bind {
            addr,
            source: io_error(),
        });
        assert!(matches!(e, CliError::Listen { addr: a, .. } if a == addr));
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "cannot listen on 127.0.0.1:1: in use");
    }

    #[test]
    fn a_command_that_cannot_start_exits_2() {
        let e = CliError::Read {
            path: PathBuf::from("session.jsonl"),
            source: io_error(),
        };
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.to_string(), "cannot read session.jsonl: in use");
    }

    #[test]
    fn a_failed_run_exits_1_with_the_servers_problem_document() {
        let e = RequestError::Summarize(SummarizeError::Timeout);
        assert_eq!(CliError::from(e).exit_code(), 1);
        let problem = RequestError::Summarize(SummarizeError::Timeout).problem();
        assert_eq!(
            problem.problem_type,
            "urn:compactd:problem:upstream-timeout"
        );
        assert_eq!(problem.status, 504);
    }
}
