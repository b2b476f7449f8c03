//! The agent: a turn loop over a `Provider`, the tools it may call, and the bridge from the
//! session's event log to the conversation a model reads.

pub mod budget;
mod gate_wait;
pub mod gates_text;
mod plan;
pub mod provider;
mod recovery;
mod resume;
mod service;
pub mod tools;
mod turn;

pub use service::{Agent, Deps};

use crate::protocol::ToolClass;

/// The instructions a real model gets at the start of every conversation.
pub const SYSTEM_PROMPT: &str = "You are a careful coding assistant working inside one workspace folder. \
Use the tools to read, search, write and edit files and to run shell commands there; paths are relative to the workspace. \
Some actions may need the person's approval or may be refused; when a tool result says a call was denied or refused, \
read the reason, do not retry the same call, and adapt. Keep answers short and say what you did.";

/// Added to the system prompt whenever checkpoints are offered (every mode but yolo).
pub const CHECKPOINT_PROMPT: &str = "\n\nBefore a consequential decision — choosing the target column, a data preparation plan, \
a model shortlist, or an expensive run — put it to the person with request_approval (kind: target_column, prep_plan, \
model_shortlist, expensive_run or other; a one-line title; the proposal in markdown) and follow the answer. \
If the result says nobody answered in time, you may proceed, but say clearly in your reply that the decision is UNAPPROVED.";

/// Added in plan mode: how to leave it.
pub const PLAN_PROMPT: &str = "\n\nYou are in plan mode: you may read, but nothing that changes files or runs commands will run. \
Investigate, then propose your plan with exit_plan (the plan in markdown). If the person approves it, the session leaves \
plan mode and you carry the plan out in the same turn; if they deny it, revise the plan using their reason.";

/// The tool that leaves plan mode once the person approves the plan.
pub const EXIT_PLAN_TOOL: &str = "exit_plan";

/// The `exit_plan` tool as the model sees it (offered in plan mode only).
pub fn exit_plan_spec() -> provider::ToolSpec {
    provider::ToolSpec {
        name: EXIT_PLAN_TOOL,
        description: "Propose your plan; if the person approves, plan mode ends and you carry it out.",
        class: ToolClass::Decision,
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "the plan, in markdown"}},
            "required": ["plan"],
            "additionalProperties": false
        }),
    }
}

/// The agent's own configuration tool (class config: always gated unless yolo; protected keys
/// are refused outright).
pub const CONFIG_TOOL: &str = "config_set";

/// `config_set {key, value}` as the model sees it.
pub fn config_set_spec() -> provider::ToolSpec {
    provider::ToolSpec {
        name: CONFIG_TOOL,
        description: "Change one setting of this server's configuration (dotted key, e.g. tools.shell_timeout_secs).",
        class: ToolClass::Config,
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "key": {"type": "string"},
                "value": {"description": "the new value: a string, number, boolean or list"}
            },
            "required": ["key", "value"],
            "additionalProperties": false
        }),
    }
}

/// Validates `config_set {key, value}`'s shape (the value itself is checked by the config).
pub fn parse_config_set(args: &serde_json::Value) -> Result<(String, serde_json::Value), String> {
    let obj = args
        .as_object()
        .ok_or("config_set takes an object {key, value}")?;
    if let Some(unknown) = obj.keys().find(|k| !matches!(k.as_str(), "key" | "value")) {
        return Err(format!("config_set: unknown field `{unknown}`"));
    }
    let key = obj
        .get("key")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .ok_or("config_set: `key` must be a non-empty string")?;
    let value = obj
        .get("value")
        .filter(|v| !v.is_null())
        .ok_or("config_set: `value` is required")?;
    Ok((key.to_owned(), value.clone()))
}

/// The `request_approval` tool as the model sees it.
pub fn checkpoint_spec() -> provider::ToolSpec {
    provider::ToolSpec {
        name: "request_approval",
        description: "Ask the person to approve a consequential decision before going on; returns their answer.",
        class: ToolClass::Decision,
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["target_column", "prep_plan", "model_shortlist", "expensive_run", "other"]},
                "title": {"type": "string", "description": "one line"},
                "proposal": {"type": "string", "description": "the proposal, in markdown"},
                "context": {"type": "string", "description": "optional background"}
            },
            "required": ["kind", "title", "proposal"],
            "additionalProperties": false
        }),
    }
}

/// Tools that later issues add; known here so their calls get the right class meanwhile.
fn class_of_later_tool(tool: &str) -> Option<ToolClass> {
    match tool {
        "request_approval" | "exit_plan" => Some(ToolClass::Decision),
        "config_set" => Some(ToolClass::Config),
        _ => None,
    }
}

/// The class of any tool name the agent may produce (unknown names count as `exec`: the most
/// guarded class that still describes "something we cannot vouch for").
pub fn class_of(tool: &str) -> ToolClass {
    tools::class_of(tool)
        .or_else(|| class_of_later_tool(tool))
        .unwrap_or(ToolClass::Exec)
}

pub use crate::server::conversation::tool_result_text;
