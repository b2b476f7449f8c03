//! Contract tests for the public HTTP + SSE protocol (docs/protocol.md), run against a real
//! server started in-process on a loopback ephemeral port.
//!
//! One test binary (modules below) to keep link time down. Build and run with
//! `cargo test --features ssr --test api`.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod answer_doors;
mod answered_by;
mod auth;
mod changes;
mod concurrency;
mod errors;
mod eviction;
mod floor_view;
mod forms;
mod passkey_modes;
mod push;
mod restart;
mod reviewer;
mod scopes;
mod server_fns;
mod sessions;
mod sse;
mod stats;
mod step_up;
