//! The command line: `serve` (default) and offline runs of the same pipelines.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::Config;
use crate::http::{self, ApiError, AppState};
use crate::pipeline::branch::{plan_branch_summary, run_branch_summary, BranchBudget};
use crate::pipeline::compact::{plan_compaction, run_compaction};
use crate::pipeline::options::{comma_list, Options};
use crate::pipeline::prune::plan_prune;
use crate::pipeline::{
    prepare_response, BodyFormat, BranchSummaryOptions, CompactOptions, PrepareOptions,
    PruneOptions, SessionInput,
};
use crate::summarize::Prompts;

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

/// Runs the command line; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    let command = cli.command.unwrap_or(Command::Serve { listen: None });
    if let Command::Openapi = command {
        // Needs no configuration.
        println!("{}", http::openapi::spec_json());
        return 0;
    }
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("compactd: {e}");
            return 2;
        }
    };
    let prompts = match Prompts::load(config.prompts_dir.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("compactd: {e}");
            return 2;
        }
    };
    match command {
        Command::Openapi => 0,
        Command::Serve { listen } => serve(config, prompts, listen),
        Command::BranchSummary {
            input,
            from,
            to,
            replace_instructions,
            model,
            dry_run,
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
                ..BranchSummaryOptions::default()
            };
            let Some(summarizer) = summarizer_or_report(&config) else {
                return 2;
            };
            offline(&input, options, |inp, out| {
                let budget = BranchBudget::resolve(&inp.options, &*summarizer, &config);
                let plan = plan_branch_summary(inp, &prompts, budget)?;
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
        } => {
            let options = CompactOptions {
                prepare: input.options(),
                short_summary: Some(short_summary),
                model,
                ..CompactOptions::default()
            };
            let Some(summarizer) = summarizer_or_report(&config) else {
                return 2;
            };
            offline(&input, options, |inp, out| {
                if dry_run {
                    let answer = prepare_response(inp, &prompts, config.settings(), None)?;
                    return write_json(out, &answer, input.pretty);
                }
                let plan = plan_compaction(inp, &prompts, config.settings())?;
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
            let code = offline_with_body(&input, options, |inp, body, out| {
                let pruning = plan_prune(inp)?;
                if output.is_none() {
                    let answer = pruning
                        .response(pruned_at)
                        .map_err(|e| ApiError::Internal(format!("cannot rewrite an entry: {e}")))?;
                    return write_json(out, &answer, input.pretty);
                }
                let bytes = pruning
                    .rewrite(body, pruned_at)
                    .map_err(ApiError::Internal)?;
                rewritten = Some((bytes, pruning.changes.len(), pruning.tokens_saved));
                Ok(())
            });
            match (output, rewritten) {
                (Some(path), Some((bytes, count, saved))) if code == 0 => {
                    if let Err(e) = write_output(&path, &bytes) {
                        eprintln!("compactd: cannot write {}: {e}", path.display());
                        return 2;
                    }
                    eprintln!(
                        "{}",
                        serde_json::json!({"prunedCount": count, "tokensSaved": saved})
                    );
                    0
                }
                _ => code,
            }
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

/// The configured summarizer, or `None` after reporting why it cannot be built.
fn summarizer_or_report(
    config: &Config,
) -> Option<std::sync::Arc<dyn crate::pipeline::compact::Summarize>> {
    crate::summarize::backend::build(config)
        .map_err(|e| eprintln!("compactd: {e}"))
        .ok()
}

/// Runs one future to completion on a fresh runtime (offline commands).
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, ApiError> {
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| ApiError::Internal(format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(f))
}

/// Streams the answer to `out` (no copy of a possibly large answer in memory).
fn write_json<T: serde::Serialize>(
    out: &mut dyn Write,
    v: &T,
    pretty: bool,
) -> Result<(), ApiError> {
    let r = if pretty {
        serde_json::to_writer_pretty(&mut *out, v)
    } else {
        serde_json::to_writer(&mut *out, v)
    };
    r.and_then(|()| out.write_all(b"\n").map_err(serde_json::Error::io))
        .map_err(|e| ApiError::Internal(format!("cannot write the answer: {e}")))
}

/// Reads the file, runs `f` on the parsed input and prints the JSON answer, or the
/// same problem document the server would send (exit code 1).
fn offline<O: Options>(
    args: &InputArgs,
    options: O,
    f: impl FnOnce(&SessionInput<O>, &mut dyn Write) -> Result<(), ApiError>,
) -> i32 {
    offline_with_body(args, options, |input, _, out| f(input, out))
}

/// [`offline`], also handing `f` the bytes the input was parsed from.
fn offline_with_body<O: Options>(
    args: &InputArgs,
    options: O,
    f: impl FnOnce(&SessionInput<O>, &[u8], &mut dyn Write) -> Result<(), ApiError>,
) -> i32 {
    let bytes = match args.read() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("compactd: cannot read {}: {e}", args.file.display());
            return 2;
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    // A local file is the user's own: no entry limit.
    let result = SessionInput::parse(&bytes, args.format(), options)
        .map_err(ApiError::from)
        .and_then(|input| f(&input, &bytes, &mut out))
        .and_then(|()| {
            out.flush()
                .map_err(|e| ApiError::Internal(format!("cannot write the answer: {e}")))
        });
    match result {
        Ok(()) => 0,
        Err(e) => {
            let problem = serde_json::to_string_pretty(&e.problem()).unwrap_or_default();
            eprintln!("{problem}");
            1
        }
    }
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

fn serve(mut config: Config, prompts: Prompts, listen: Option<std::net::SocketAddr>) -> i32 {
    if let Some(addr) = listen {
        config.listen = addr;
    }
    crate::telemetry::init(config.log_format);
    // Fail before listening when the summarizer configuration is unusable.
    let Some(summarizer) = summarizer_or_report(&config) else {
        return 2;
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("compactd: cannot start the runtime: {e}");
            return 1;
        }
    };
    let code = runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(config.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("compactd: cannot listen on {}: {e}", config.listen);
                return 1;
            }
        };
        let addr = listener.local_addr().map_or(config.listen, |a| a);
        tracing::info!(%addr, "compactd listening");
        if config.api_keys.is_empty() && !addr.ip().is_loopback() {
            tracing::warn!(
                %addr,
                "serving WITHOUT authentication on a non-loopback address: anyone who can reach it can use it (set COMPACTD_API_KEYS or COMPACTD_API_KEYS_FILE)"
            );
        }
        let state = AppState::new(config, prompts, summarizer);
        match http::serve(listener, state).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("compactd: server error: {e}");
                1
            }
        }
    });
    // Dropping the runtime would wait for every blocking task (a parse of a huge body
    // still running after the grace period); the grace period is already over.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    code
}
