//! Builds what an approval card shows: title, one-line summary, proposal (rendered and
//! sanitized on the server), unified diff for file edits, digest, deadline, allowed answers.

use std::time::Duration;

use crate::protocol::{
    ApprovalId, ApprovalRequestBody, Decision, DecisionKind, GateKind, GateReason, Mode,
    RuleSuggestion, SessionId, TimeoutOutcome, Timestamp, ToolClass,
};
use crate::server::config::DecisionTimeout;
use crate::server::conversation::ToolCallRequest;
use crate::server::digest::{bound_call_digest, proposal_digest};
use crate::server::gate::{rules, sentence};
use crate::server::markdown;
use crate::server::tools::{self, CardEnv, CardText, Checkpoint};

/// Everything that does not depend on the gate kind.
pub struct Common {
    pub approval_id: ApprovalId,
    pub session_id: SessionId,
    pub reason: GateReason,
    pub reason_detail: String,
    pub created_at: Timestamp,
    pub timeout: Duration,
    /// The agent's own words about the call (`ApprovalRequestBody::agent_says`).
    pub agent_says: Option<String>,
}

fn times(common: &Common) -> (Timestamp, Timestamp) {
    let timeout_ms = i64::try_from(common.timeout.as_millis()).unwrap_or(i64::MAX);
    (
        common.created_at.clone(),
        common.created_at.plus_ms(timeout_ms),
    )
}

/// The card for a gated tool call.
/// `approved_before`: how many matching calls were approved by hand in this session.
/// Blocking: it reads the file a file tool would change (capped at `tools::MAX_DIFF_BYTES`).
pub fn tool_gate(
    common: Common,
    call: &ToolCallRequest,
    class: ToolClass,
    env: &CardEnv<'_>,
    approved_before: u32,
) -> ApprovalRequestBody {
    let floor = common.reason == GateReason::SafetyFloor;
    let mut allowed = vec![Decision::Approve, Decision::Edit, Decision::Deny];
    let suggested_rule = if floor {
        None
    } else {
        suggested_rule(call, approved_before)
    };
    if suggested_rule.is_some() {
        allowed.push(Decision::AllowAlways);
    }
    let (created_at, expires_at) = times(&common);
    let card = tool_card(call, env, floor.then_some(common.reason_detail.as_str()));
    ApprovalRequestBody {
        route: None,
        cwd: None,
        source: None,
        approval_id: common.approval_id,
        session_id: common.session_id,
        call_id: call.id.clone(),
        kind: GateKind::Tool,
        tool: call.name.clone(),
        class,
        args: call.args.clone(),
        decision_kind: None,
        title: card.title,
        summary: card.summary,
        proposal_md: String::new(),
        proposal_html: String::new(),
        diff: card.diff,
        reason: common.reason,
        reason_detail: common.reason_detail,
        allowed_decisions: allowed,
        digest: bound_call_digest(&call.name, &call.args, card.bound.as_deref()),
        created_at,
        expires_at,
        timeout_outcome: TimeoutOutcome::Deny,
        suggested_rule,
        execution_mode: None,
        agent_says: common.agent_says,
    }
}

/// The standing rule a tool card offers (never on a floor card): the call's default pattern.
fn suggested_rule(call: &ToolCallRequest, approved_before: u32) -> Option<RuleSuggestion> {
    rules::default_pattern(&call.name, &call.args).map(|pattern| RuleSuggestion {
        tool: call.name.clone(),
        pattern,
        approved_before,
    })
}

/// What the tool says its call does; `floor_detail` (the floor pattern that matched) makes it
/// a floor card, which opens with one plain sentence while the pattern stays in the reason.
fn tool_card(call: &ToolCallRequest, env: &CardEnv<'_>, floor_detail: Option<&str>) -> CardText {
    let mut card = match tools::get(&call.name) {
        Some(tool) => tool.card(&call.args, env),
        None => CardText {
            title: "Tool".into(),
            summary: call.name.clone(),
            diff: None,
            bound: None,
        },
    };
    if let Some(detail) = floor_detail {
        card.summary = sentence::floor_sentence(&call.name, &call.args, detail);
    }
    card
}

/// A decision card: the agent puts a proposal to the person (checkpoint or plan).
pub fn decision_card(
    common: Common,
    call: &ToolCallRequest,
    checkpoint: &Checkpoint,
    summary: String,
    timeout_outcome: TimeoutOutcome,
    execution_mode: Option<Mode>,
) -> ApprovalRequestBody {
    let (created_at, expires_at) = times(&common);
    ApprovalRequestBody {
        route: None,
        cwd: None,
        source: None,
        approval_id: common.approval_id,
        session_id: common.session_id,
        call_id: call.id.clone(),
        kind: GateKind::Decision,
        tool: call.name.clone(),
        class: ToolClass::Decision,
        args: call.args.clone(),
        decision_kind: Some(checkpoint.kind),
        title: checkpoint.title.clone(),
        summary,
        proposal_html: markdown::render(&checkpoint.proposal),
        proposal_md: checkpoint.proposal.clone(),
        diff: None,
        reason: common.reason,
        reason_detail: common.reason_detail,
        allowed_decisions: vec![Decision::Approve, Decision::Edit, Decision::Deny],
        digest: proposal_digest(&checkpoint.proposal),
        created_at,
        expires_at,
        timeout_outcome,
        suggested_rule: None,
        execution_mode,
        agent_says: common.agent_says,
    }
}

/// The card for an agent checkpoint (`request_approval`).
pub fn decision_gate(
    common: Common,
    call: &ToolCallRequest,
    checkpoint: &Checkpoint,
    on_timeout: DecisionTimeout,
) -> ApprovalRequestBody {
    let summary = format!(
        "Decision ({}): {}",
        checkpoint.kind.label(),
        checkpoint.title
    );
    let timeout_outcome = match on_timeout {
        DecisionTimeout::ProceedUnapproved => TimeoutOutcome::ProceedUnapproved,
        DecisionTimeout::Deny => TimeoutOutcome::Deny,
    };
    decision_card(common, call, checkpoint, summary, timeout_outcome, None)
}

/// The card for leaving plan mode (`exit_plan`): the plan, and the mode it would run in. An
/// unanswered plan keeps plan mode (there is nothing to proceed with unapproved).
pub fn plan_gate(
    common: Common,
    call: &ToolCallRequest,
    plan: &str,
    default_mode: Mode,
) -> ApprovalRequestBody {
    let checkpoint = Checkpoint {
        kind: DecisionKind::Plan,
        title: "Leave plan mode and carry out this plan".into(),
        proposal: plan.to_owned(),
    };
    let summary = format!("Plan: execute in {} mode", default_mode.label());
    decision_card(
        common,
        call,
        &checkpoint,
        summary,
        TimeoutOutcome::Deny,
        Some(default_mode),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    use std::path::Path;
    use std::sync::Arc;

    /// The default floor, as cards are built under it.
    fn env(workspace: &Path) -> CardEnv<'_> {
        let floor = crate::server::gate::floor::SafetyFloor::new(&Default::default()).unwrap();
        CardEnv {
            workspace,
            floor: Arc::new(floor),
        }
    }

    fn card(tool: &str, args: &Value, workspace: &Path) -> CardText {
        tools::get(tool).unwrap().card(args, &env(workspace))
    }

    fn summary(tool: &str, args: &Value, workspace: &Path) -> String {
        card(tool, args, workspace).summary
    }

    fn diff(tool: &str, args: &Value, workspace: &Path) -> Option<String> {
        card(tool, args, workspace).diff
    }
    use serde_json::json;

    #[test]
    fn summaries_and_diffs_describe_the_change() {
        let ws = tempfile::tempdir().unwrap();
        let args = json!({"path": "notes.md", "content": "hello"});
        assert_eq!(
            summary("write_file", &args, ws.path()),
            "write_file notes.md (1 line, new file)"
        );
        let d = diff("write_file", &args, ws.path()).unwrap();
        assert!(d.contains("+++ b/notes.md") && d.contains("+hello"), "{d}");
        std::fs::write(ws.path().join("notes.md"), "a\nb\n").unwrap();
        let edit = json!({"path": "notes.md", "old": "b", "new": "c"});
        let d = diff("edit_file", &edit, ws.path()).unwrap();
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
        assert_eq!(
            summary(
                "write_file",
                &json!({"path": "notes.md", "content": "x\ny\nz"}),
                ws.path()
            ),
            "write_file notes.md (3 lines, replaces 2 lines)"
        );
        assert_eq!(
            summary("shell", &json!({"command": "ls"}), ws.path()),
            "shell: ls"
        );
    }

    #[test]
    fn a_file_too_large_to_diff_is_not_read_and_the_card_says_so() {
        let ws = tempfile::tempdir().unwrap();
        let big = vec![b'x'; (tools::MAX_DIFF_BYTES + 10) as usize];
        std::fs::write(ws.path().join("big.log"), &big).unwrap();
        let write = json!({"path": "big.log", "content": "small"});
        assert_eq!(diff("write_file", &write, ws.path()), None);
        assert_eq!(
            summary("write_file", &write, ws.path()),
            "write_file big.log (1 line, replaces a 1.0 MiB file too large to diff)"
        );
        let edit = json!({"path": "big.log", "old": "x", "new": "y"});
        assert_eq!(diff("edit_file", &edit, ws.path()), None);
        assert_eq!(
            tools::current_file(ws.path(), "big.log", 16, &env(ws.path()).card_guard()),
            tools::FileNow::TooLarge(tools::MAX_DIFF_BYTES + 10)
        );
        std::fs::write(ws.path().join("small.txt"), "ok").unwrap();
        assert_eq!(
            tools::current_file(ws.path(), "small.txt", 16, &env(ws.path()).card_guard()),
            tools::FileNow::Text("ok".into())
        );
    }
}
