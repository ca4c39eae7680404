//! HTTP API tests against the real server on a random port.

mod branch;
mod cancel;
mod chat;
mod checked;
mod compact;
mod deltas;
mod encoding;
mod errors;
mod events;
#[path = "../support/fixtures.rs"]
mod fixtures;
mod fold;
mod guard;
mod health;
mod helpers;
mod hermes;
mod input;
mod inspect;
mod jobs;
mod messages;
mod moa;
#[path = "../support/moa.rs"]
mod moa_fakes;
#[path = "../support/model_servers.rs"]
mod model_servers;
mod openapi;
mod prepare;
mod prepare_cli;
mod prune;
mod prune_cli;
mod real_servers;
mod recall;
mod resolution;
mod responses;
mod robustness;
mod schemathesis;
mod short_summary;
mod shutdown;
#[path = "../support/sse.rs"]
mod sse;
mod standing;
mod strategy_cli;
mod upstream;
#[path = "../support/upstreams.rs"]
mod upstreams;
