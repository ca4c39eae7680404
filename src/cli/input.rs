//! What the offline commands share: the session-file flags, reading the input, running
//! a pipeline on it and writing the answer.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::pipeline::options::Options;
use crate::pipeline::{BodyFormat, PrepareOptions, PrepareResponse, SessionInput};

use super::error::{CliError, RequestError};

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
    pub fn options(&self) -> PrepareOptions {
        PrepareOptions {
            leaf_id: self.leaf_id.clone(),
            keep_recent_tokens: self.keep_recent_tokens,
            reserve_tokens: self.reserve_tokens,
            context_window: self.context_window,
            custom_instructions: self.custom_instructions.clone(),
            ..PrepareOptions::default()
        }
    }

    pub fn format(&self) -> BodyFormat {
        match self.format {
            Some(Format::Json) => BodyFormat::Json,
            Some(Format::Jsonl) => BodyFormat::Jsonl,
            None if self.file.extension().is_some_and(|e| e == "json") => BodyFormat::Json,
            None => BodyFormat::Jsonl,
        }
    }

    /// The file's bytes.
    pub fn read(&self) -> Result<Vec<u8>, CliError> {
        read_file(&self.file)
    }
}

/// A file's bytes (`-`: standard input).
pub fn read_file(path: &Path) -> Result<Vec<u8>, CliError> {
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

/// Runs one future to completion on a fresh runtime (offline commands).
pub fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, RequestError> {
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| RequestError::Internal(format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(f))
}

/// Streams the answer to `out` (no copy of a possibly large answer in memory).
pub fn write_json<T: serde::Serialize>(
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

/// A prepare answer (`compactd prepare`, `compact --dry-run`): compact JSON from
/// [`PrepareResponse::write_json`], the same bytes as serde's, faster on large sessions and
/// never held whole; pretty printing stays serde's.
pub fn write_prepared(
    out: &mut dyn Write,
    answer: &PrepareResponse<'_>,
    pretty: bool,
) -> Result<(), RequestError> {
    if pretty {
        return write_json(out, answer, true);
    }
    // Streamed: the answer of a large session is larger than the session.
    answer
        .write_json(out)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))
}

/// Reads the file, runs `f` on the parsed input and prints the JSON answer; a failure of
/// the run is reported as the problem document the server would send.
pub fn offline<O: Options>(
    args: &InputArgs,
    options: O,
    f: impl FnOnce(&SessionInput<O>, &mut dyn Write) -> Result<(), RequestError>,
) -> Result<(), CliError> {
    offline_with_body(args, options, |input, _, out| f(input, out))
}

/// [`offline`], also handing `f` the bytes the input was parsed from.
pub fn offline_with_body<O: Options>(
    args: &InputArgs,
    options: O,
    f: impl FnOnce(&SessionInput<O>, &[u8], &mut dyn Write) -> Result<(), RequestError>,
) -> Result<(), CliError> {
    let bytes = args.read()?;
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
/// so a reader never sees half a file and `-o` may name the input itself.
pub fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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

/// `--strategy`: `single` or `moa` (Mixture-of-Agents, needs a `[moa]` table).
pub fn parse_strategy(s: &str) -> Result<crate::config::Strategy, String> {
    use crate::config::Strategy;
    match s {
        "single" => Ok(Strategy::Single),
        "moa" => Ok(Strategy::Moa),
        _ => Err("expected `single` or `moa`".into()),
    }
}
