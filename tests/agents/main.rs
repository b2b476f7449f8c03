//! The real outside agents, installed from npm at the versions `scripts/agents.txt` pins, each
//! pointed at a scripted model server on loopback that speaks its vendor's API, with
//! Countersign's integration installed exactly as the README tells a user. A test whose agent
//! is not installed is skipped with a note, unless `COUNTERSIGN_REAL_AGENTS=required` (as
//! `scripts/test` sets), when it fails.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![cfg(feature = "ssr")]

mod anthropic;
mod claude_code;
mod codex;
mod copilot;
mod gemini;
mod gemini_api;
mod kit;
mod openai_chat;
mod openai_responses;
mod opencode;
mod qwen;
mod script;
#[path = "../support/mod.rs"]
mod support;
mod tui;
