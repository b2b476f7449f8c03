//! Integration tests of the external adapters, one binary (linking is the slow part):
//! fixture mappings, the hooks and the installer, the opencode bridge and the MCP server, each
//! against in-process fakes of Countersign and the agent; `live` drives the built binary's
//! adapters against a real server.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

mod common;
mod dialog;
mod fixtures;
mod hooks;
mod inputs;
mod install;
mod live;
mod mcp;
mod opencode;
mod refusals;
mod schemas;
#[path = "../support/mod.rs"]
mod support;
