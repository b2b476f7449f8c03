//! Which cards a reviewer may be shown at all: never a floor card, a config card, a card that
//! needs a passkey, a budget card (or a budget checkpoint asked as a decision, `expensive_run`)
//! or a plan card — the calls no second opinion may judge.

use crate::protocol::{
    ApprovalRequestBody, DecisionKind, GateKind, GateReason, ReviewMode, ToolClass,
};
use crate::server::config::Config;

/// Whether `card` may be shown to the reviewer under `config`.
pub fn reviewable(card: &ApprovalRequestBody, config: &Config) -> bool {
    config.review.mode != ReviewMode::Off
        && !never_reviewed(card)
        && !config.approvals.require_passkey.applies_to(card.reason)
}

/// Whether `card` is of a kind no reviewer is ever shown, whatever the config: also left out
/// of the history reviewer's evidence (what it may never see, it may not learn from either).
pub fn never_reviewed(card: &ApprovalRequestBody) -> bool {
    card.reason == GateReason::SafetyFloor
        || card.reason == GateReason::Budget
        || card.kind == GateKind::Budget
        || card.class == ToolClass::Config
        || matches!(
            card.decision_kind,
            Some(DecisionKind::Plan | DecisionKind::ExpensiveRun)
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{ReviewMode, ToolClass};
    use crate::server::config::RequirePasskey;
    use crate::server::review::test_cards::{card, shell};

    fn shadow() -> Config {
        let mut config = Config::default();
        config.review.mode = ReviewMode::Shadow;
        config
    }

    #[test]
    fn an_ordinary_card_is_reviewed_once_the_reviewer_runs() {
        assert!(reviewable(&shell("ls"), &shadow()));
        assert!(!reviewable(&shell("ls"), &Config::default()), "off");
    }

    #[test]
    fn a_floor_card_is_never_reviewed() {
        let mut floor = shell("cat .env");
        floor.reason = GateReason::SafetyFloor;
        assert!(!reviewable(&floor, &shadow()));
    }

    #[test]
    fn a_config_card_is_never_reviewed() {
        let config = card(
            "config_set",
            ToolClass::Config,
            json!({"key": "a", "value": 1}),
        );
        assert!(!reviewable(&config, &shadow()));
    }

    #[test]
    fn a_card_that_needs_a_passkey_is_never_reviewed() {
        let mut all = shadow();
        all.approvals.require_passkey = RequirePasskey::All;
        assert!(!reviewable(&shell("ls"), &all));
        let mut floor_only = shadow();
        floor_only.approvals.require_passkey = RequirePasskey::Floor;
        assert!(reviewable(&shell("ls"), &floor_only));
    }

    #[test]
    fn budget_and_plan_cards_are_never_reviewed() {
        let mut budget = shell("ls");
        budget.kind = GateKind::Budget;
        budget.reason = GateReason::Budget;
        assert!(!reviewable(&budget, &shadow()));
        let mut plan = card("exit_plan", ToolClass::Decision, json!({"plan": "p"}));
        plan.kind = GateKind::Decision;
        plan.decision_kind = Some(DecisionKind::Plan);
        assert!(!reviewable(&plan, &shadow()));
        // A budget checkpoint the agent asks as a decision is a budget card too.
        let mut checkpoint = card("request_approval", ToolClass::Decision, json!({}));
        checkpoint.kind = GateKind::Decision;
        checkpoint.decision_kind = Some(DecisionKind::ExpensiveRun);
        assert!(!reviewable(&checkpoint, &shadow()));
        assert!(never_reviewed(&checkpoint) && never_reviewed(&budget) && never_reviewed(&plan));
        checkpoint.decision_kind = Some(DecisionKind::Other);
        assert!(reviewable(&checkpoint, &shadow()));
        assert!(!never_reviewed(&checkpoint));
    }
}
