//! Cards for the reviewer's tests: a gate as the built-in agent or an outside agent opens it.

use serde_json::{Value, json};

use crate::protocol::{ApprovalRequestBody, GateKind, ToolClass};

/// A card for `tool` of `class` with `args`, opened by the built-in agent.
pub fn card(tool: &str, class: ToolClass, args: Value) -> ApprovalRequestBody {
    let mut gate: ApprovalRequestBody = serde_json::from_value(json!({
        "approval_id": "a", "session_id": "s", "call_id": "c", "kind": "tool",
        "tool": "shell", "class": "exec", "args": {}, "title": "t", "summary": "",
        "proposal_md": "", "proposal_html": "", "reason": "mode", "reason_detail": "",
        "allowed_decisions": ["approve", "deny"], "digest": "d",
        "created_at": "2026-01-01T00:00:00.000Z", "expires_at": "2026-01-01T00:30:00.000Z",
        "timeout_outcome": "deny",
    }))
    .expect("a card");
    gate.tool = tool.into();
    gate.class = class;
    gate.args = args;
    gate
}

/// A built-in `shell` card for `command`.
pub fn shell(command: &str) -> ApprovalRequestBody {
    let mut gate = card("shell", ToolClass::Exec, json!({ "command": command }));
    gate.summary = command.into();
    gate
}

/// The agent an outside test card comes from.
pub const OUTSIDE_AGENT: &str = "claude-code";

/// The folder an outside agent's test card runs in.
pub const OUTSIDE_CWD: &str = "/home/me/app";

/// An outside agent's card (`kind: external`) from [`OUTSIDE_AGENT`], run in [`OUTSIDE_CWD`].
pub fn outside(tool: &str, class: ToolClass, args: Value) -> ApprovalRequestBody {
    let mut gate = card(tool, class, args);
    gate.kind = GateKind::External;
    gate.cwd = Some(OUTSIDE_CWD.into());
    gate.source = Some(OUTSIDE_AGENT.into());
    gate
}
