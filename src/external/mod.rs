//! Adapters that route outside coding agents' permission prompts to Countersign's external
//! gates (`/api/v1/gates`, docs/api.md section 11): the Claude Code and Codex hooks, the opencode
//! bridge and the MCP server, over one gates client.

pub mod gates_client;
pub mod hook;
pub mod key;
pub mod mcp;
pub mod opencode;
pub mod remote;
pub mod transcript;
pub mod verdict;
