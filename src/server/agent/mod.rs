//! The agent: a turn loop over a `Provider` and the tool registry, run by a service that owns
//! every turn task (`service.rs`).

pub mod budget;
mod budget_gate;
mod call_order;
mod context;
mod deps;
mod gate_wait;
pub mod gates_text;
mod leases;
mod plan;
mod recovery;
mod resume;
mod service;
mod turn;

pub use deps::Deps;
pub use service::Agent;

use crate::protocol::ToolClass;

/// The instructions a real model gets at the start of every conversation.
pub const SYSTEM_PROMPT: &str = "You are a careful coding assistant working inside one workspace folder. \
Use the tools to read, search, write and edit files and to run shell commands there; paths are relative to the workspace. \
Some actions may need the person's approval or may be refused; when a tool result says a call was denied or refused, \
read the reason, do not retry the same call, and adapt. Keep answers short and say what you did.";

/// The class of any tool name the agent may produce (unknown names count as `exec`: the most
/// guarded class that still describes "something we cannot vouch for").
pub fn class_of(tool: &str) -> ToolClass {
    crate::server::tools::class_of(tool).unwrap_or(ToolClass::Exec)
}

pub use crate::server::conversation::tool_result_text;
