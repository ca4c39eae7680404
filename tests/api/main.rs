//! HTTP API tests against the real server on a random port.

mod branch;
mod chat;
mod checked;
mod compact;
mod errors;
#[path = "../support/fixtures.rs"]
mod fixtures;
mod guard;
mod health;
mod helpers;
mod hermes;
mod inspect;
mod moa;
#[path = "../support/moa.rs"]
mod moa_fakes;
mod openapi;
mod prepare;
mod prune;
mod prune_cli;
mod robustness;
mod schemathesis;
mod shutdown;
mod upstream;
#[path = "../support/upstreams.rs"]
mod upstreams;
