//! The budget kill-switch: per-turn ceilings on tool calls, model tokens and wall time, in
//! every mode (yolo included). Crossing one suspends the turn on a `budget` card: continue
//! with a fresh allowance, or stop (a stop or a timeout ends the turn `stopped`).

use std::time::{Duration, Instant};

use super::provider::ToolCallRequest;
use super::turn::{Turn, TurnEnd};
use crate::protocol::{
    ApprovalRequest, ApprovalRequestBody, Decision, GateKind, GateReason, TimeoutOutcome, ToolClass,
};
use crate::server::config::BudgetConfig;
use crate::server::gate::request;

/// The tool name a budget card carries (it gates the turn, not a tool).
pub const BUDGET_TOOL: &str = "budget";

/// What one allowance has used so far.
pub struct Budget {
    limits: BudgetConfig,
    tool_calls: u64,
    tokens: u64,
    since: Instant,
}

impl Budget {
    pub fn new(limits: BudgetConfig) -> Self {
        Budget {
            limits,
            tool_calls: 0,
            tokens: 0,
            since: Instant::now(),
        }
    }

    pub fn spend_tokens(&mut self, tokens: u64) {
        self.tokens = self.tokens.saturating_add(tokens);
    }

    pub fn spend_calls(&mut self, calls: usize) {
        self.tool_calls = self.tool_calls.saturating_add(calls as u64);
    }

    /// A fresh allowance, after the person chose to continue.
    pub fn refresh(&mut self) {
        self.tool_calls = 0;
        self.tokens = 0;
        self.since = Instant::now();
    }

    /// The ceiling this allowance has reached, in words; `None` while within budget.
    pub fn exceeded(&self) -> Option<String> {
        let limits = &self.limits;
        if limits.max_tool_calls > 0 && self.tool_calls >= limits.max_tool_calls {
            return Some(format!(
                "{} of {} tool calls used",
                self.tool_calls, limits.max_tool_calls
            ));
        }
        if limits.max_tokens > 0 && self.tokens >= limits.max_tokens {
            return Some(format!(
                "{} of {} model tokens used",
                self.tokens, limits.max_tokens
            ));
        }
        let elapsed = self.since.elapsed();
        if limits.max_turn_secs > 0 && elapsed >= Duration::from_secs(limits.max_turn_secs) {
            return Some(format!(
                "{} s of {} s used",
                elapsed.as_secs(),
                limits.max_turn_secs
            ));
        }
        None
    }
}

impl Turn {
    /// Suspends the turn on a budget card; returns when the person lets it continue.
    pub(super) async fn budget_gate(&self, why: &str) -> Result<(), TurnEnd> {
        let approval_id = uuid::Uuid::new_v4().to_string();
        let call = ToolCallRequest {
            id: format!("budget-{approval_id}"),
            name: BUDGET_TOOL.to_owned(),
            args: serde_json::json!({ "used": why }),
        };
        let common = request::Common {
            approval_id,
            session_id: self.session_id.clone(),
            reason: GateReason::Budget,
            reason_detail: format!("This turn reached its budget: {why}"),
            created_at: chrono::Utc::now(),
            timeout: Duration::from_secs(self.core.config().config.approvals.timeout_secs),
        };
        let gate = ApprovalRequest {
            turn_id: self.turn_id.clone(),
            body: budget_card(common, &call, why),
        };
        let resolution = self.wait_for_gate(None, gate).await?;
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
    let checkpoint = request::Checkpoint {
        kind: "budget".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(calls: u64, tokens: u64, secs: u64) -> BudgetConfig {
        BudgetConfig {
            max_tool_calls: calls,
            max_tokens: tokens,
            max_turn_secs: secs,
        }
    }

    #[test]
    fn each_ceiling_trips_and_a_refresh_resets_it() {
        let mut b = Budget::new(limits(3, 100, 600));
        b.spend_calls(2);
        assert_eq!(b.exceeded(), None);
        b.spend_calls(1);
        assert_eq!(b.exceeded().unwrap(), "3 of 3 tool calls used");
        b.refresh();
        assert_eq!(b.exceeded(), None);
        b.spend_tokens(150);
        assert!(b.exceeded().unwrap().contains("model tokens"));
        let b = Budget::new(limits(3, 100, 0));
        assert_eq!(b.exceeded(), None, "zero means no ceiling");
    }
}
