//! Builds and runs the application: the one place that wires the configuration, the
//! prompts, the summarizer, the listener and the HTTP router together.
//!
//! `compactd serve` and the API tests both start the service through [`Application`], so
//! the tests run the production wiring: the same middleware, limits and shutdown path.
//! Tests that bring a summarizer of their own use [`Application::build_with`]; the rest is
//! shared. Binding happens in `build`, so a test can ask for port 0 and read the port
//! actually bound from [`Application::port`] before it starts serving.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::http::{self, AppState};
use crate::state::SharedState;
use crate::summarize::llm::EngineError;
use crate::summarize::templates::PromptError;
use crate::summarize::{backend, Prompts, Summarize};

/// Why the application could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The prompts directory holds a file that cannot be read.
    #[error(transparent)]
    Prompts(#[from] PromptError),
    /// The summarizer configuration is unusable.
    #[error(transparent)]
    Summarizer(#[from] EngineError),
    /// `COMPACTD_REDIS_URL` cannot be used (never quoted: it may hold a password).
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The service, bound and ready to serve.
pub struct Application {
    listener: TcpListener,
    address: SocketAddr,
    router: axum::Router,
    /// The state the router serves, for the shutdown (grace period, requests in flight).
    state: AppState,
}

impl Application {
    /// Loads the prompts, builds the configured summarizer and binds `config.listen`; fails
    /// before listening when the prompts or the summarizer configuration are unusable.
    pub async fn build(config: Config) -> Result<Application, StartupError> {
        let prompts = Prompts::load(config.prompts_dir.as_deref())?;
        let shared = SharedState::open(&config)?;
        let summarizer = backend::build_shared(&config, shared.cache.clone())?;
        Application::build_on(config, prompts, summarizer, shared).await
    }

    /// [`Application::build`] with the prompts and the summarizer given (tests bring
    /// summarizers of their own).
    pub async fn build_with(
        config: Config,
        prompts: Prompts,
        summarizer: Arc<dyn Summarize>,
    ) -> Result<Application, StartupError> {
        let shared = SharedState::open(&config)?;
        Application::build_on(config, prompts, summarizer, shared).await
    }

    async fn build_on(
        config: Config,
        prompts: Prompts,
        summarizer: Arc<dyn Summarize>,
        shared: SharedState,
    ) -> Result<Application, StartupError> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| StartupError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let address = listener.local_addr().unwrap_or(config.listen);
        tracing::info!(addr = %address, "compactd listening");
        if config.api_keys.is_empty() && !address.ip().is_loopback() {
            tracing::warn!(
                addr = %address,
                "serving WITHOUT authentication on a non-loopback address: anyone who can reach it can use it (set COMPACTD_API_KEYS or COMPACTD_API_KEYS_FILE)"
            );
        }
        tracing::info!(
            state = shared.kind(),
            "jobs, idempotency keys and cached summaries"
        );
        let state = AppState::new(config, prompts, summarizer, shared);
        Ok(Application {
            listener,
            address,
            router: http::router(state.clone()),
            state,
        })
    }

    /// The address bound (with the real port when the configuration asked for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Serves until SIGINT/SIGTERM, then stops accepting connections and lets in-flight
    /// requests finish — for at most `shutdown_grace`, or until a second signal.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let Application {
            listener,
            router,
            state,
            ..
        } = self;
        tokio::spawn(give_back_freed_memory());
        let grace = state.config.shutdown_grace;
        let limiter = state.limiter.clone();
        let limit = state.config.max_concurrency;
        // Signals are counted from start-up by one listener, so a second signal sent
        // right after the first is never missed.
        let signals = count_signals()?;
        let mut first = signals.clone();
        // TCP_NODELAY on every accepted connection: an answer's last partial segment
        // leaves at once instead of waiting for the client's ACK of the previous ones
        // (Nagle); hyper writes each response in one go, so nothing is gained by waiting.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "could not set TCP_NODELAY");
            }
        });
        let server = axum::serve(listener, router).with_graceful_shutdown(async move {
            if first.wait_for(|&n| n >= 1).await.is_err() {
                // No signal can come any more: serve on.
                return std::future::pending().await;
            }
            tracing::info!(
                in_flight = limit.saturating_sub(limiter.available_permits()),
                grace_secs = grace.as_secs_f64(),
                "shutdown signal received; finishing in-flight requests"
            );
        });
        let mut second = signals;
        let deadline = async move {
            if second.wait_for(|&n| n >= 1).await.is_err() {
                return std::future::pending().await;
            }
            tokio::select! {
                _ = tokio::time::sleep(grace) => {
                    tracing::warn!("shutdown grace period over; abandoning in-flight requests");
                }
                _ = second.wait_for(|&n| n >= 2) => {
                    tracing::warn!("second shutdown signal; abandoning in-flight requests");
                }
            }
        };
        tokio::select! {
            result = std::future::IntoFuture::into_future(server) => result,
            () = deadline => Ok(()),
        }
    }
}

/// Gives the memory large requests freed back to the system, a moment after work was
/// done. glibc keeps freed memory in its arenas (one per thread that allocated), so after
/// a 29 MB session the process stayed at 600 MiB though nothing was live; trimming brings
/// it back to its working set. Each trim is a pass over the free lists (milliseconds),
/// done on the blocking pool and only after work.
async fn give_back_freed_memory() {
    let mut seen = crate::cancel::offloaded();
    // Once more on the tick after work stopped: what an answer held is freed once it was
    // sent, after the work itself.
    let mut once_more = false;
    let mut every = tokio::time::interval(std::time::Duration::from_secs(2));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let now = crate::cancel::offloaded();
        let worked = now != seen;
        if worked || once_more {
            seen = now;
            once_more = worked;
            let _ = tokio::task::spawn_blocking(trim).await;
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        /// glibc: returns free memory at the top of the heap and whole free pages inside
        /// every arena to the system.
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// The number of SIGINT and SIGTERM signals received so far. The listeners are installed
/// before this returns and stay installed, so no signal between two waits is lost.
fn count_signals() -> std::io::Result<tokio::sync::watch::Receiver<u32>> {
    let (tx, rx) = tokio::sync::watch::channel(0u32);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
                tx.send_modify(|n| *n += 1);
            }
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            tx.send_modify(|n| *n += 1);
        }
    });
    Ok(rx)
}
