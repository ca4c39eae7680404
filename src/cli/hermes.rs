//! `compactd hermes-compress`: a hermes-agent conversation compacted, like
//! `POST /v1/hermes/compress`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::config::Config;
use crate::pipeline::hermes::{parse_request_with, plan_hermes, run_hermes, HermesRequest};
use crate::summarize::Prompts;
use compactd_core::session::InputError;

use super::error::{CliError, RequestError};
use super::input::{block_on, parse_strategy, read_file, write_json};

#[derive(Debug, Args)]
pub struct HermesArgs {
    /// Request or message-list file (`-` for standard input).
    pub file: PathBuf,
    /// The main model's context window (sets or overrides `contextLength`).
    #[arg(long)]
    pub context_length: Option<u64>,
    /// Focus topic for the summary.
    #[arg(long)]
    pub focus: Option<String>,
    /// A configured model name.
    #[arg(long)]
    pub model: Option<String>,
    /// `single` or `moa` (Mixture-of-Agents, the `[moa]` models); default: the configured one.
    #[arg(long, value_parser = parse_strategy)]
    pub strategy: Option<crate::config::Strategy>,
    /// Answer like POST /v1/hermes/prepare, call no model.
    #[arg(long)]
    pub dry_run: bool,
    /// Pretty-print the JSON answer.
    #[arg(long)]
    pub pretty: bool,
}

pub fn run(args: HermesArgs, config: &Config, prompts: &Prompts) -> Result<(), CliError> {
    let HermesArgs {
        file,
        context_length,
        focus,
        model,
        strategy,
        dry_run,
        pretty,
    } = args;
    let bytes = read_file(&file)?;
    let summarizer = crate::summarize::backend::build(config)?;
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
        if strategy.is_some() {
            req.strategy = strategy;
        }
        let planned = plan_hermes(req, &prompts.hermes, &compactd_hermes::Switches::default());
        let answer = block_on(run_hermes(planned, &*summarizer, &crate::summarize::Silent))??;
        if pretty {
            write_json(&mut out, &answer.to_json(), pretty)?;
        } else {
            // The messages returned unchanged as they were in the file, byte for byte.
            let mut bytes = answer.to_bytes();
            bytes.push(b'\n');
            out.write_all(&bytes)
                .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))?;
        }
        out.flush()
            .map_err(|e| RequestError::Internal(format!("cannot write the answer: {e}")))
    };
    Ok(run()?)
}

/// A hermes request from a request object or a bare message list.
fn hermes_request(
    bytes: &[u8],
    context_length: Option<u64>,
) -> Result<HermesRequest, RequestError> {
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
