//! The model summarizer engine against fake upstreams (wiremock and raw TCP peers on
//! 127.0.0.1), without the HTTP server: wire formats, usage mapping, retries, deadlines,
//! fallback, cache, cancellation, secrets, selection and refused configurations.

mod cache;
mod cancellation;
mod configuration;
mod fallback;
mod helpers;
mod misbehaving;
mod moa;
#[path = "../support/moa.rs"]
mod moa_fakes;
#[path = "../support/model_servers.rs"]
mod model_servers;
mod overflow;
mod providers;
mod retries;
mod secrets;
mod selection;
mod streaming;
#[path = "../support/upstreams.rs"]
mod upstreams;
mod wire_formats;
