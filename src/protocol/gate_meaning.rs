//! What a gate's kind (and, for an outside agent's, its tool class) means, decided here once:
//! the server, the notifications, the cards, the transcript and the CLI ask these rather than
//! each matching `GateKind` and `ToolClass` again and drifting apart.

use super::{ApprovalRequestBody, GateKind, ToolClass};

impl GateKind {
    /// The built-in agent's tool call: Countersign runs it after the answer, so the call has
    /// a row in the transcript, an edit is that tool's arguments, and an answer may start it.
    pub fn is_our_tool_call(self) -> bool {
        self == GateKind::Tool
    }

    /// The built-in agent's own question (`request_approval`, `exit_plan`): nothing runs; the
    /// agent is told the answer.
    pub fn is_our_question(self) -> bool {
        self == GateKind::Decision
    }

    /// An outside agent's call (Claude Code, Codex, opencode, an MCP host): the agent acts on
    /// the answer itself, and the card names the agent's own tool and title.
    pub fn is_outside_call(self) -> bool {
        self == GateKind::External
    }

    /// A turn that reached its budget: the answer continues or stops the turn (`stops` at
    /// zero), there is no call to show and nothing to edit.
    pub fn is_budget_stop(self) -> bool {
        self == GateKind::Budget
    }

    /// Whether the card has a call whose arguments it shows (every kind but a budget stop,
    /// whose proposal says what ran out).
    pub fn has_call_to_show(self) -> bool {
        !self.is_budget_stop()
    }
}

/// What an Edit answer replaces on a card, which decides how it is checked and recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditTarget {
    /// The proposal's text (a question: the agent is told the revised text).
    Proposal,
    /// The built-in tool's arguments, checked by that tool and the safety floor.
    OurToolArguments,
    /// An outside agent's whole tool input, checked against the safety floor.
    OutsideInput,
    /// Nothing: a budget stop cannot be edited.
    Nothing,
}

impl ApprovalRequestBody {
    /// An outside agent's `request_approval` (Countersign's MCP server): a question in
    /// words, like the built-in agent's, though it reaches us as an outside call.
    pub fn is_outside_question(&self) -> bool {
        self.kind.is_outside_call() && self.class == ToolClass::Decision
    }

    /// A question with a proposal in words and nothing to run (the built-in agent's checkpoint
    /// or plan, an outside `request_approval`): Edit revises its text, and a notification
    /// never answers it (its words are the point).
    pub fn is_proposal(&self) -> bool {
        self.kind.is_our_question() || self.is_outside_question()
    }

    /// A call someone will run on this answer (ours or an outside agent's), not a question or
    /// a budget stop: what a notification's buttons may answer when it shows all of it.
    pub fn asks_to_run_a_call(&self) -> bool {
        !self.is_proposal() && (self.kind.is_our_tool_call() || self.kind.is_outside_call())
    }

    /// What an Edit answer to this card replaces.
    pub fn edit_target(&self) -> EditTarget {
        match self.kind {
            GateKind::Decision => EditTarget::Proposal,
            GateKind::External if self.is_outside_question() => EditTarget::Proposal,
            GateKind::Tool => EditTarget::OurToolArguments,
            GateKind::External => EditTarget::OutsideInput,
            GateKind::Budget => EditTarget::Nothing,
        }
    }

    /// The card's look (its `kind-…` class): a budget stop, a question, or the class of what
    /// would run (`edit`, `exec`, …), so a person tells a command from an edit at a glance.
    pub fn look(&self) -> &'static str {
        if self.kind.is_budget_stop() {
            "budget"
        } else if self.is_proposal() || self.class == ToolClass::Decision {
            "decision"
        } else {
            self.class.as_str()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::*;
    use super::EditTarget;

    fn card(kind: GateKind, class: ToolClass) -> ApprovalRequestBody {
        let text = |s: &str| s.to_owned();
        ApprovalRequestBody {
            route: None,
            cwd: None,
            source: None,
            approval_id: "a".into(),
            session_id: "s".into(),
            call_id: "c".into(),
            kind,
            tool: text("shell"),
            class,
            args: json!({}),
            decision_kind: None,
            title: text("t"),
            summary: text("s"),
            proposal_md: String::new(),
            proposal_html: String::new(),
            diff: None,
            reason: GateReason::Mode,
            reason_detail: String::new(),
            allowed_decisions: Vec::new(),
            digest: String::new(),
            created_at: Timestamp::default(),
            expires_at: Timestamp::default(),
            timeout_outcome: TimeoutOutcome::Deny,
            suggested_rule: None,
            execution_mode: None,
            agent_says: None,
        }
    }

    #[test]
    fn each_kind_is_exactly_one_thing() {
        for kind in GateKind::ALL {
            let said = [
                kind.is_our_tool_call(),
                kind.is_our_question(),
                kind.is_outside_call(),
                kind.is_budget_stop(),
            ];
            assert_eq!(said.iter().filter(|s| **s).count(), 1, "{kind:?}");
            assert_eq!(kind.has_call_to_show(), kind != GateKind::Budget);
        }
    }

    /// The whole table, kind by class: what each card is and what its Edit replaces.
    #[test]
    fn questions_calls_and_edits_by_kind_and_class() {
        use EditTarget as E;
        for class in ToolClass::ALL {
            let question = class == ToolClass::Decision;
            let ours = card(GateKind::Tool, class);
            assert!(!ours.is_proposal() && !ours.is_outside_question());
            assert!(ours.asks_to_run_a_call());
            assert_eq!(ours.edit_target(), E::OurToolArguments);

            let asked = card(GateKind::Decision, class);
            assert!(asked.is_proposal() && !asked.asks_to_run_a_call());
            assert_eq!(asked.edit_target(), E::Proposal);

            let outside = card(GateKind::External, class);
            assert_eq!(outside.is_outside_question(), question, "{class:?}");
            assert_eq!(outside.is_proposal(), question, "{class:?}");
            assert_eq!(outside.asks_to_run_a_call(), !question, "{class:?}");
            let target = if question {
                E::Proposal
            } else {
                E::OutsideInput
            };
            assert_eq!(outside.edit_target(), target, "{class:?}");

            let budget = card(GateKind::Budget, class);
            assert!(!budget.is_proposal() && !budget.asks_to_run_a_call());
            assert_eq!(budget.edit_target(), E::Nothing);
        }
    }

    /// The meanings agree with what each place computed for itself before they were gathered
    /// here (commit 01d29a6: `card/parts.rs::kind_class`, `card/panels.rs`, the push
    /// payload's `answerable_from_notification`, `core/decisions.rs`'s `edit_diff_of` and
    /// `check_edits`), for every kind and class: no card became editable another way, no
    /// question gained a notification's Approve button.
    #[test]
    fn every_meaning_is_what_its_old_place_computed() {
        use EditTarget as E;
        for kind in GateKind::ALL {
            for class in ToolClass::ALL {
                let gate = card(kind, class);
                let was_proposal = kind == GateKind::Decision
                    || (kind == GateKind::External && class == ToolClass::Decision);
                assert_eq!(gate.is_proposal(), was_proposal, "{kind:?} {class:?}");
                let was_answerable_call =
                    !was_proposal && matches!(kind, GateKind::Tool | GateKind::External);
                assert_eq!(
                    gate.asks_to_run_a_call(),
                    was_answerable_call,
                    "{kind:?} {class:?}"
                );
                let was_target = match kind {
                    GateKind::Decision => E::Proposal,
                    GateKind::External if class == ToolClass::Decision => E::Proposal,
                    GateKind::Tool => E::OurToolArguments,
                    GateKind::External => E::OutsideInput,
                    GateKind::Budget => E::Nothing,
                };
                assert_eq!(gate.edit_target(), was_target, "{kind:?} {class:?}");
                let was_look = match (kind, class) {
                    (GateKind::Budget, _) => "budget",
                    (GateKind::Decision, _) | (_, ToolClass::Decision) => "decision",
                    (_, other) => other.as_str(),
                };
                assert_eq!(gate.look(), was_look, "{kind:?} {class:?}");
                assert_eq!(kind.is_our_tool_call(), kind == GateKind::Tool);
            }
        }
    }

    #[test]
    fn a_card_looks_like_what_it_asks() {
        for kind in [GateKind::Tool, GateKind::Decision, GateKind::External] {
            assert_eq!(
                card(kind, ToolClass::Decision).look(),
                "decision",
                "{kind:?}"
            );
        }
        for class in ToolClass::ALL {
            assert_eq!(card(GateKind::Budget, class).look(), "budget");
            assert_eq!(card(GateKind::Decision, class).look(), "decision");
        }
        for (class, look) in [
            (ToolClass::Read, "read"),
            (ToolClass::Edit, "edit"),
            (ToolClass::Exec, "exec"),
            (ToolClass::Config, "config"),
            (ToolClass::Network, "network"),
        ] {
            assert_eq!(card(GateKind::Tool, class).look(), look);
            assert_eq!(card(GateKind::External, class).look(), look);
        }
    }
}
