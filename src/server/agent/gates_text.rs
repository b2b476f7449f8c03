//! What the agent reads after a gate: one sentence first (the demo agent quotes first lines),
//! so a denial's reason or a timed-out checkpoint's "unapproved" flag always reaches it.

use crate::protocol::{ApprovalRequest, Decision, Resolution, TimeoutOutcome, ToolStatus};

pub fn denied(reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("denied by the person: {reason}"),
        None => "denied by the person (no reason given)".to_owned(),
    }
}

/// The result of a `request_approval` checkpoint.
pub fn decision_outcome(
    gate: &ApprovalRequest,
    resolution: &Resolution,
    window: &str,
) -> (ToolStatus, String) {
    match resolution.decision {
        Decision::Approve | Decision::AllowAlways => (
            ToolStatus::Ok,
            format!(
                "approved: go ahead with \"{}\" as proposed",
                gate.body.title
            ),
        ),
        Decision::Edit => {
            let revised = resolution
                .edits
                .as_ref()
                .and_then(|e| e.as_str())
                .unwrap_or(&gate.body.proposal_md);
            (
                ToolStatus::Ok,
                format!("approved with changes: follow this revised proposal instead:\n{revised}"),
            )
        }
        Decision::Deny => (ToolStatus::Denied, denied(resolution.reason.as_deref())),
        Decision::Timeout => match gate.body.timeout_outcome {
            TimeoutOutcome::ProceedUnapproved => (
                ToolStatus::Timeout,
                format!(
                    "no answer within {window}: proceed, but flag \"{}\" as UNAPPROVED in your answer",
                    gate.body.title
                ),
            ),
            TimeoutOutcome::Deny => (
                ToolStatus::Timeout,
                format!("no answer within {window}: not approved; do not proceed with it"),
            ),
        },
        Decision::Cancelled => (
            ToolStatus::Cancelled,
            "the turn was cancelled while this waited for a decision".to_owned(),
        ),
    }
}
