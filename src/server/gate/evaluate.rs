//! The one decision pipeline: the step-up's mode → the safety floor → the mode's table → a
//! standing rule → why. The built-in agent's turn and the outside agents' gates both call
//! [`evaluate`]; what differs between them is what they bring in [`Input`], never the logic.
//!
//! The table itself is [`policy::decide`], a pure function tested cell by cell; this module
//! is the order in which its inputs are found, so that no caller can look a rule up where
//! the floor or the step-up forbids one, or forget that an unknown tool asks.

use std::future::Future;

use super::policy::{self, Outcome};
use crate::protocol::{GateReason, Mode, Rule, RuleId, ToolClass};
use crate::server::config::RequirePasskey;

/// What an agent checkpoint (a `Decision` call) becomes in yolo, where the mode offers none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointInYolo {
    /// The built-in agent is told to go on by its own judgement (the call is refused).
    Refuse,
    /// An outside agent's own approval request is approved: it asked to go on, and yolo says go.
    Proceed,
}

/// What the caller knows of one call before the pipeline runs.
pub struct Input {
    /// The session's stored mode; the step-up may make it stricter.
    pub stored_mode: Mode,
    pub step_up: RequirePasskey,
    pub class: ToolClass,
    /// The safety floor's reason in words, when the call hits it.
    pub floor: Option<String>,
    /// Set when the catalog does not know the tool: it asks in every mode, as the floor does,
    /// unless the person's standing rule for that very tool answers it.
    pub unknown_tool: Option<String>,
    pub checkpoint_in_yolo: CheckpointInYolo,
    /// The call's `[[approvals.route]]` asks more than one person (issue 41): no rule, grant
    /// or mode answers it; it always goes to a card (`route::held_for_people`).
    pub held_for_people: bool,
}

/// What the pipeline decided, and everything a card or a record needs to say why.
#[derive(Debug)]
pub struct Verdict {
    /// The mode the call was decided under (the stored one, or stricter under the step-up).
    pub mode: Mode,
    pub outcome: Outcome,
    /// Why the call was (or would have been) put to the person.
    pub reason: GateReason,
    /// The floor's reason (an unknown tool's included), as the card states it.
    pub floor: Option<String>,
    /// The standing rule that answered, if one did.
    pub rule: Option<Rule>,
    /// The card asks only because the tool is unknown (no floor path or command was named).
    pub unknown_only: bool,
}

impl Input {
    /// Whether a standing rule may change the outcome: never on the floor or under a step-up
    /// that allows none; for an unknown tool always (its rule is what answers it); otherwise
    /// only where the mode would ask.
    fn rule_may_answer(&self, mode: Mode) -> bool {
        if self.floor.is_some() || !self.step_up.allows_rules() || self.held_for_people {
            return false;
        }
        self.unknown_tool.is_some()
            || decide(mode, self.class, None, None)
                == (Outcome::Ask {
                    reason: GateReason::Mode,
                })
    }
}

/// Decides run / ask / refuse for one call. `find_rule` is called at most once, and only
/// where a rule may answer; it returns the standing rule in force that covers the call.
pub async fn evaluate<F, Fut, E>(input: Input, find_rule: F) -> Result<Verdict, E>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Option<Rule>, E>>,
{
    let mode = input.step_up.effective_mode(input.stored_mode);
    let rule = match input.rule_may_answer(mode) {
        true => find_rule().await?,
        false => None,
    };
    let unknown_only = input.floor.is_none() && rule.is_none() && input.unknown_tool.is_some();
    let floor = match (input.floor, &rule) {
        (None, None) => input.unknown_tool,
        (floor, _) => floor,
    };
    let decided = decide(
        mode,
        input.class,
        floor.as_deref(),
        rule.as_ref().map(|r| &r.id),
    );
    let on_floor = floor.is_some();
    let outcome = checkpoint_in_yolo(input.class, input.checkpoint_in_yolo, on_floor, decided);
    let outcome = held_for_people(input.held_for_people, input.class, on_floor, outcome);
    let reason = match &outcome {
        Outcome::Ask { reason } => *reason,
        _ if floor.is_some() => GateReason::SafetyFloor,
        _ => GateReason::Mode,
    };
    Ok(Verdict {
        mode,
        outcome,
        reason,
        floor,
        rule,
        unknown_only,
    })
}

/// A checkpoint the mode refused in yolo runs instead where the configuration says the agent
/// proceeds on its own judgement (never on the floor).
fn checkpoint_in_yolo(
    class: ToolClass,
    in_yolo: CheckpointInYolo,
    on_floor: bool,
    outcome: Outcome,
) -> Outcome {
    match outcome {
        Outcome::Refuse { .. }
            if class == ToolClass::Decision
                && !on_floor
                && in_yolo == CheckpointInYolo::Proceed =>
        {
            Outcome::Run { rule_id: None }
        }
        other => other,
    }
}

/// A route that asks several people is answered by them, whatever the mode says.
fn held_for_people(held: bool, class: ToolClass, on_floor: bool, outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Run { .. } if held => Outcome::Ask {
            reason: GateReason::Mode,
        },
        // The built-in agent's checkpoint in yolo is refused so that it goes on by its own
        // judgement: that too is the mode answering, so a held checkpoint goes to its people.
        Outcome::Refuse { .. } if held && class == ToolClass::Decision && !on_floor => {
            Outcome::Ask {
                reason: GateReason::AgentCheckpoint,
            }
        }
        other => other,
    }
}

/// Whether a call the pipeline let run unasked still runs now (when it finally has a slot, or
/// after a restart): the step-up may have been turned on meanwhile, making its mode stricter
/// or its rule void.
pub fn still_runs(
    stored_mode: Mode,
    step_up: RequirePasskey,
    class: ToolClass,
    rule_id: Option<&RuleId>,
) -> bool {
    let mode = step_up.effective_mode(stored_mode);
    let rule_id = rule_id.filter(|_| step_up.allows_rules());
    matches!(decide(mode, class, None, rule_id), Outcome::Run { .. })
}

fn decide(mode: Mode, class: ToolClass, floor: Option<&str>, rule_id: Option<&RuleId>) -> Outcome {
    policy::decide(&policy::Call {
        mode,
        class,
        floor,
        rule_id,
    })
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::protocol::{RuleScope, Timestamp};

    fn rule() -> Rule {
        Rule {
            id: RuleId::from("r1"),
            tool: "shell".into(),
            pattern: "echo *".into(),
            scope: RuleScope::Workspace,
            session_id: None,
            created_at: Timestamp::now(),
            created_by_approval: None,
            uses: 0,
            last_used_at: None,
            expires_at: None,
            max_uses: None,
            lapsed: None,
            source: None,
        }
    }

    fn input(mode: Mode, class: ToolClass) -> Input {
        Input {
            stored_mode: mode,
            step_up: RequirePasskey::Off,
            class,
            floor: None,
            unknown_tool: None,
            checkpoint_in_yolo: CheckpointInYolo::Refuse,
            held_for_people: false,
        }
    }

    /// Runs the pipeline with a rule finder that counts its calls.
    fn run(input: Input, found: Option<Rule>) -> (Verdict, u32) {
        let asked = Cell::new(0);
        let verdict = futures::executor::block_on(evaluate(input, || {
            asked.set(asked.get() + 1);
            std::future::ready(Ok::<_, ()>(found))
        }))
        .unwrap();
        (verdict, asked.get())
    }

    /// A call whose route asks several people goes to a card in every mode, and no rule is
    /// looked up for it (none is spent either).
    #[test]
    fn a_quorum_route_is_answered_by_people_only() {
        for mode in [Mode::Ask, Mode::AutoEdit, Mode::Yolo] {
            for class in [ToolClass::Exec, ToolClass::Edit, ToolClass::Read] {
                let held = Input {
                    held_for_people: true,
                    checkpoint_in_yolo: CheckpointInYolo::Proceed,
                    ..input(mode, class)
                };
                let (v, asked) = run(held, Some(rule()));
                assert_eq!(asked, 0, "{mode:?} {class:?}");
                assert!(
                    matches!(v.outcome, Outcome::Ask { .. }),
                    "{mode:?} {class:?}"
                );
            }
        }
        let checkpoint = Input {
            held_for_people: true,
            checkpoint_in_yolo: CheckpointInYolo::Proceed,
            ..input(Mode::Yolo, ToolClass::Decision)
        };
        assert!(matches!(
            run(checkpoint, None).0.outcome,
            Outcome::Ask { .. }
        ));
    }

    #[test]
    fn a_rule_is_looked_up_only_where_the_mode_would_ask() {
        let (v, asked) = run(input(Mode::Ask, ToolClass::Exec), Some(rule()));
        assert_eq!(asked, 1);
        assert!(matches!(v.outcome, Outcome::Run { rule_id: Some(_) }));
        for (mode, class) in [
            (Mode::Yolo, ToolClass::Exec),
            (Mode::Ask, ToolClass::Read),
            (Mode::AutoEdit, ToolClass::Edit),
            (Mode::Plan, ToolClass::Exec),
            (Mode::Ask, ToolClass::Decision),
        ] {
            let (_, asked) = run(input(mode, class), Some(rule()));
            assert_eq!(asked, 0, "{mode:?} {class:?}");
        }
    }

    /// One pipeline, one answer: a network call (an outside agent's fetch; none of the built-in
    /// tools is one today) is answered by a standing rule where the mode would ask, for any
    /// agent, and never in plan mode, where it asks whatever the rules say.
    #[test]
    fn a_network_call_is_answered_by_its_rule_where_the_mode_would_ask() {
        for mode in [Mode::Ask, Mode::AutoEdit] {
            let (v, asked) = run(input(mode, ToolClass::Network), Some(rule()));
            assert_eq!(asked, 1, "{mode:?}");
            assert!(
                matches!(v.outcome, Outcome::Run { rule_id: Some(_) }),
                "{mode:?}"
            );
        }
        let (v, _) = run(input(Mode::Plan, ToolClass::Network), Some(rule()));
        assert!(matches!(v.outcome, Outcome::Ask { .. }));
    }

    #[test]
    fn the_floor_and_the_step_up_leave_no_room_for_a_rule() {
        let mut on_floor = input(Mode::Yolo, ToolClass::Exec);
        on_floor.floor = Some("touches .env".into());
        let (v, asked) = run(on_floor, Some(rule()));
        assert_eq!(asked, 0);
        assert_eq!(v.reason, GateReason::SafetyFloor);
        assert!(matches!(v.outcome, Outcome::Ask { .. }));

        let mut stepped = input(Mode::Yolo, ToolClass::Exec);
        stepped.step_up = RequirePasskey::All;
        let (v, asked) = run(stepped, Some(rule()));
        assert_eq!(asked, 0);
        assert_eq!(v.mode, Mode::Ask, "yolo acts as ask under the step-up");
        assert!(matches!(v.outcome, Outcome::Ask { .. }));
    }

    #[test]
    fn an_unknown_tool_asks_in_every_mode_unless_its_rule_answers() {
        for mode in [Mode::Ask, Mode::AutoEdit, Mode::Yolo] {
            let mut unknown = input(mode, ToolClass::Exec);
            unknown.unknown_tool = Some("an unknown tool".into());
            let (v, _) = run(unknown, None);
            assert!(v.unknown_only);
            assert_eq!(v.reason, GateReason::SafetyFloor, "{mode:?}");
            assert!(matches!(v.outcome, Outcome::Ask { .. }));
        }
        let mut answered = input(Mode::Ask, ToolClass::Exec);
        answered.unknown_tool = Some("an unknown tool".into());
        let (v, asked) = run(answered, Some(rule()));
        assert_eq!(asked, 1);
        assert!(!v.unknown_only && v.floor.is_none());
        assert!(matches!(v.outcome, Outcome::Run { rule_id: Some(_) }));
    }

    #[test]
    fn a_checkpoint_in_yolo_is_refused_or_let_go_as_the_input_says() {
        let (v, _) = run(input(Mode::Yolo, ToolClass::Decision), None);
        assert!(matches!(v.outcome, Outcome::Refuse { .. }));
        let mut outside = input(Mode::Yolo, ToolClass::Decision);
        outside.checkpoint_in_yolo = CheckpointInYolo::Proceed;
        let (v, _) = run(outside, None);
        assert_eq!(v.outcome, Outcome::Run { rule_id: None });
        let mut on_floor = input(Mode::Yolo, ToolClass::Decision);
        on_floor.checkpoint_in_yolo = CheckpointInYolo::Proceed;
        on_floor.floor = Some("names .env".into());
        let (v, _) = run(on_floor, None);
        assert!(matches!(v.outcome, Outcome::Ask { .. }));
    }

    #[test]
    fn a_run_decided_earlier_is_checked_again_against_the_step_up() {
        let id = RuleId::from("r1");
        assert!(still_runs(
            Mode::Yolo,
            RequirePasskey::Off,
            ToolClass::Exec,
            None
        ));
        assert!(!still_runs(
            Mode::Yolo,
            RequirePasskey::All,
            ToolClass::Exec,
            None
        ));
        assert!(still_runs(
            Mode::Ask,
            RequirePasskey::Off,
            ToolClass::Exec,
            Some(&id)
        ));
        assert!(!still_runs(
            Mode::Ask,
            RequirePasskey::All,
            ToolClass::Exec,
            Some(&id)
        ));
        assert!(still_runs(
            Mode::Ask,
            RequirePasskey::All,
            ToolClass::Read,
            None
        ));
    }

    /// Red-team finding 1 (fixed): the built-in agent's checkpoint in yolo, on a route that asks
    /// several people (`when = "decision"`, quorum 2), must go to those people. The pipeline
    /// turns only `Run` into `Ask` for a held call; the built-in agent's yolo checkpoint is
    /// `Refuse` ("proceed on your own judgement"), so the agent goes on and nobody is asked:
    /// the mode answered a call the route gives to two people.
    #[test]
    fn rt_builtin_checkpoint_in_yolo_is_not_skipped_past_a_quorum() {
        let checkpoint = Input {
            held_for_people: true,
            checkpoint_in_yolo: CheckpointInYolo::Refuse,
            ..input(Mode::Yolo, ToolClass::Decision)
        };
        let (v, _) = run(checkpoint, None);
        assert!(
            matches!(v.outcome, Outcome::Ask { .. }),
            "a checkpoint two people must answer was decided by yolo: {:?}",
            v.outcome
        );
    }
}
