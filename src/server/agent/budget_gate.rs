//! The budget card: how a turn that crossed a ceiling (`budget.rs`) asks the person whether to
//! go on.

use std::time::Duration;

use super::budget::BUDGET_TOOL;
use super::turn::{Turn, TurnEnd};
use crate::protocol::{
    ApprovalRequest, ApprovalRequestBody, Decision, GateKind, GateReason, TimeoutOutcome, ToolClass,
};
use crate::server::gate::request;
use crate::server::provider::ToolCallRequest;

impl Turn {
    /// Suspends the turn on a budget card; returns when the person lets it continue.
    pub(super) async fn budget_gate(&self, why: &str) -> Result<(), TurnEnd> {
        let approval_id = uuid::Uuid::new_v4().to_string();
        let call = ToolCallRequest {
            id: format!("budget-{approval_id}").into(),
            name: BUDGET_TOOL.to_owned(),
            args: serde_json::json!({ "used": why }),
        };
        let common = request::Common {
            approval_id: approval_id.into(),
            session_id: self.session_id.as_str().into(),
            reason: GateReason::Budget,
            reason_detail: format!("This turn reached its budget: {why}"),
            created_at: crate::protocol::Timestamp::now(),
            timeout: Duration::from_secs(self.deps.config().config.approvals.timeout_secs),
            agent_says: None,
        };
        let gate = ApprovalRequest {
            reviewer_concern: None,
            route_state: None,
            turn_id: self.turn_id.clone(),
            body: budget_card(common, &call, why),
        };
        let resolution = self.wait_for_gate(None, &gate).await?;
        if resolution.decision.lets_it_run() {
            Ok(())
        } else if resolution.decision == Decision::Cancelled {
            Err(TurnEnd::Cancelled)
        } else {
            Err(TurnEnd::Stopped)
        }
    }
}

fn budget_card(common: request::Common, call: &ToolCallRequest, why: &str) -> ApprovalRequestBody {
    let checkpoint = crate::server::tools::Checkpoint {
        // Only the card's text: a budget card carries no decision kind (cleared below).
        kind: crate::protocol::DecisionKind::Other,
        title: "Budget reached".into(),
        proposal: format!(
            "This turn has reached a ceiling ({why}). **Continue** grants a fresh allowance; **Stop** ends the turn."
        ),
    };
    let mut body = request::decision_card(
        common,
        call,
        &checkpoint,
        format!("Budget reached: {why}"),
        TimeoutOutcome::Deny,
        None,
    );
    body.kind = GateKind::Budget;
    body.class = ToolClass::Decision;
    body.decision_kind = None;
    body.allowed_decisions = vec![Decision::Approve, Decision::Deny];
    body
}
