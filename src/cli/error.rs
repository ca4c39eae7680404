//! Why a command failed, the exit code that follows and what is printed.

use std::path::PathBuf;

use crate::config::ConfigError;
use crate::http;
use crate::pipeline::compact::{NothingToCompact, PlanError};
use crate::startup::StartupError;
use crate::summarize::llm::EngineError;
use crate::summarize::templates::PromptError;
use crate::summarize::SummarizeError;
use compactd_core::session::InputError;

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
            StartupError::State(e) => CliError::Config(crate::config::ConfigError::Value {
                name: "COMPACTD_REDIS_URL".into(),
                message: e.reason,
            }),
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
    pub fn problem(self) -> http::problem::Problem {
        let error = match self {
            RequestError::Input(e) => http::ApiError::Input(e),
            RequestError::NothingToCompact(n) => http::ApiError::NothingToCompact(n),
            RequestError::Summarize(e) => http::ApiError::Summarize(e),
            RequestError::Internal(message) => http::ApiError::Internal(message),
        };
        error.problem()
    }
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
