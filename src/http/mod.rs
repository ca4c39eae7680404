//! The HTTP API: one router, one state, one error type.
//!
//! One module per endpoint family (`prepare`, `compact` with `/v1/summarize`, `branch`,
//! `prune`, `health`), each handler named for its route (`post_prepare`, …) and calling
//! the pipeline of the same name. Imports point one way: handlers use `extract` (the
//! session body and the endpoint's options from `pipeline::options`), `problem`,
//! `examples` and `schemas`; `openapi` only collects the handlers' annotations and adds
//! what the guard (`guard.rs`) shares, so no handler imports it.

mod auth;
mod branch;
mod budget;
mod chat;
mod compact;
mod encoding;
mod examples;
mod extract;
mod guard;
mod health;
mod hermes;
pub mod inspect;
pub mod jobs;
mod messages;
pub mod openapi;
mod prepare;
pub mod problem;
mod prune;
mod recall;
mod respond;
mod responses;
mod schemas;
mod stream;
mod vendor_errors;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::config::Config;
use crate::summarize::{Prompts, Summarize};

pub use auth::ApiKeys;
pub use problem::ApiError;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub prompts: Arc<Prompts>,
    pub summarizer: Arc<dyn Summarize>,
    /// Digests of `config.api_keys`.
    pub api_keys: Arc<ApiKeys>,
    /// Permits for requests in progress (`COMPACTD_MAX_CONCURRENCY`).
    pub limiter: Arc<tokio::sync::Semaphore>,
    /// What the requests in progress may hold (`COMPACTD_MEMORY_BUDGET_BYTES`).
    pub memory: Arc<budget::MemoryBudget>,
    /// Permits for clients following job events (`COMPACTD_MAX_FOLLOWERS`): they are not
    /// requests in progress, but each holds a connection and a task.
    pub followers: Arc<tokio::sync::Semaphore>,
    /// Jobs (`Prefer: respond-async`, `Idempotency-Key`) and their events.
    pub jobs: Arc<jobs::Jobs>,
    /// Where the jobs live, in this process or in Redis (readiness asks it).
    pub shared: crate::state::SharedState,
}

impl AppState {
    /// The state every handler shares, around the store start-up opened (the same one
    /// holds the summarizer's cache and the jobs).
    pub fn new(
        config: Config,
        prompts: Prompts,
        summarizer: Arc<dyn Summarize>,
        shared: crate::state::SharedState,
    ) -> Self {
        // Install the metrics recorder before the first request records anything.
        crate::telemetry::metrics();
        AppState {
            limiter: guard::limiter(config.max_concurrency),
            memory: Arc::new(budget::MemoryBudget::new(config.memory_budget_bytes)),
            followers: Arc::new(tokio::sync::Semaphore::new(config.max_followers)),
            jobs: Arc::clone(&shared.jobs),
            shared,
            api_keys: Arc::new(ApiKeys::new(&config.api_keys)),
            config: Arc::new(config),
            prompts: Arc::new(prompts),
            summarizer,
        }
    }
}

pub fn router(state: AppState) -> Router {
    let body_limit = state.config.max_body_bytes;
    Router::new()
        .route("/v1/prepare", post(prepare::post_prepare))
        .route("/v1/compact", post(compact::post_compact))
        .route("/v1/branch-summary", post(branch::post_branch_summary))
        .route("/v1/prune", post(prune::post_prune))
        .route("/v1/recall", post(recall::post_recall))
        .route("/v1/summarize", post(compact::post_summarize))
        .route("/v1/hermes/compress", post(hermes::post_hermes_compress))
        .route("/v1/hermes/prepare", post(hermes::post_hermes_prepare))
        .route("/v1/hermes/recall", post(hermes::post_hermes_recall))
        .route("/v1/chat/completions", post(chat::post_chat_completions))
        .route("/v1/models", get(chat::get_models))
        .route(
            "/v1/responses/compact",
            post(responses::post_responses_compact),
        )
        .route("/v1/messages", post(messages::post_messages))
        .route("/v1/jobs/{id}", get(jobs::get_job).delete(jobs::delete_job))
        .route("/v1/jobs/{id}/events", get(jobs::get_job_events))
        .route("/v1/config", get(health::config))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/metrics", get(health::metrics))
        .route("/v1/inspect/outline", post(inspect::post_outline))
        .route("/v1/inspect/session", post(inspect::post_session))
        .merge(inspector_page(&state))
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        // Bodies decoded inside the encoding check, so handlers read (and the body limit
        // counts) decoded bytes.
        .layer(encoding::decompression())
        .layer(axum::middleware::from_fn(encoding::check))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
        .layer(axum::middleware::from_fn(guard::observe))
        // A bug must still answer with a problem document, not a dropped connection.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                axum::response::IntoResponse::into_response(ApiError::Internal(
                    "handler panicked".into(),
                ))
            },
        ))
        // Outside every source of errors, so each one reaches OpenAI's and Anthropic's
        // clients in their shape.
        .layer(axum::middleware::from_fn(vendor_errors::vendor_errors))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(axum::middleware::map_request(guard::request_id_policy))
        .with_state(state)
}

/// The inspector page and its assets, unless `COMPACTD_INSPECTOR=false`.
fn inspector_page(state: &AppState) -> Router<AppState> {
    if !state.config.inspector {
        return Router::new();
    }
    Router::new()
        .route("/", get(inspect::get_index))
        .route("/inspector/{name}", get(inspect::get_asset))
}

/// Runs CPU-bound work (parsing, preparing) off the async workers; it stops when the
/// request is dropped (see `cancel`).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    crate::cancel::offload(f)
        .await
        .map_err(|e| ApiError::Internal(format!("worker stopped: {e}")))?
}
