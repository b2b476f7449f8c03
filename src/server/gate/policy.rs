//! The policy: mode × tool class × safety floor × standing rule → run / ask / refuse.
//!
//! One pure function, so the whole table of product.md is tested cell by cell. The server
//! alone decides; the browser only displays what was decided.

use crate::protocol::{GateReason, Mode, RuleId, ToolClass};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Run now; `rule_id` names the standing rule that spared the question, if any.
    Run {
        rule_id: Option<RuleId>,
    },
    Ask {
        reason: GateReason,
    },
    /// Do not run; the agent gets this sentence as the tool result.
    Refuse {
        why: String,
    },
}

/// What the policy looks at for one call.
pub struct Call<'a> {
    pub mode: Mode,
    pub class: ToolClass,
    /// The safety floor's reason in words, when the call hits it.
    pub floor: Option<&'a str>,
    /// A standing rule that matches the call, if any.
    pub rule_id: Option<&'a RuleId>,
}

pub fn decide(call: &Call<'_>) -> Outcome {
    if let Some(floor) = call.floor {
        return match call.mode {
            Mode::Plan => Outcome::Refuse {
                why: format!("refused in plan mode: this {floor}; plan mode changes nothing"),
            },
            _ => Outcome::Ask {
                reason: GateReason::SafetyFloor,
            },
        };
    }
    let ask_or_rule = || match call.rule_id {
        Some(rule) => Outcome::Run {
            rule_id: Some(rule.clone()),
        },
        None => Outcome::Ask {
            reason: GateReason::Mode,
        },
    };
    let run = Outcome::Run { rule_id: None };
    match (call.class, call.mode) {
        (ToolClass::Read, _) => run,
        (ToolClass::Decision, Mode::Yolo) => Outcome::Refuse {
            why: "checkpoints are not offered in yolo mode; proceed on your own judgement".into(),
        },
        (ToolClass::Decision, _) => Outcome::Ask {
            reason: GateReason::AgentCheckpoint,
        },
        // Changes nothing here, so plan mode may ask for it, but a rule never spares it there.
        (ToolClass::Network, Mode::Plan) => Outcome::Ask {
            reason: GateReason::Mode,
        },
        (_, Mode::Plan) => Outcome::Refuse {
            why: "refused in plan mode: plan mode only reads; propose your plan instead".into(),
        },
        (_, Mode::Yolo) => run,
        (ToolClass::Edit, Mode::AutoEdit) => run,
        (
            ToolClass::Edit | ToolClass::Exec | ToolClass::Config | ToolClass::Network,
            Mode::Ask | Mode::AutoEdit,
        ) => ask_or_rule(),
    }
}

/// The card's "why it was gated", in words.
pub fn reason_detail(
    reason: GateReason,
    mode: Mode,
    class: ToolClass,
    floor: Option<&str>,
) -> String {
    match reason {
        GateReason::SafetyFloor => format!(
            "{} — always asks, even in Yolo",
            floor.unwrap_or("touches something sensitive")
        ),
        GateReason::AgentCheckpoint => "The agent asked for your decision before going on".into(),
        GateReason::Budget => "This turn reached its budget".into(),
        GateReason::Mode => {
            let what = match class {
                ToolClass::Edit => "file changes",
                ToolClass::Exec => "commands",
                ToolClass::Config => "configuration changes",
                ToolClass::Network => "network requests",
                ToolClass::Read | ToolClass::Decision => "this action",
            };
            format!("{} mode — {what} need your approval", mode.label())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mode: Mode, class: ToolClass, floor: bool, rule: bool) -> &'static str {
        let r1 = RuleId::from("r1");
        let outcome = decide(&Call {
            mode,
            class,
            floor: floor.then_some("touches .env"),
            rule_id: rule.then_some(&r1),
        });
        match outcome {
            Outcome::Run { rule_id: None } => "run",
            Outcome::Run { rule_id: Some(_) } => "rule",
            Outcome::Ask {
                reason: GateReason::SafetyFloor,
            } => "ask-floor",
            Outcome::Ask {
                reason: GateReason::AgentCheckpoint,
            } => "ask-checkpoint",
            Outcome::Ask { .. } => "ask",
            Outcome::Refuse { .. } => "refuse",
        }
    }

    /// product.md's table, every cell, without and with a matching standing rule.
    #[test]
    fn the_whole_table() {
        use Mode::*;
        use ToolClass::*;
        let modes = [Plan, Ask, AutoEdit, Yolo];
        let expected: [(ToolClass, [&str; 4], [&str; 4]); 6] = [
            (
                Read,
                ["run", "run", "run", "run"],
                ["run", "run", "run", "run"],
            ),
            (
                Edit,
                ["refuse", "ask", "run", "run"],
                ["refuse", "rule", "run", "run"],
            ),
            (
                Exec,
                ["refuse", "ask", "ask", "run"],
                ["refuse", "rule", "rule", "run"],
            ),
            (
                Config,
                ["refuse", "ask", "ask", "run"],
                ["refuse", "rule", "rule", "run"],
            ),
            (
                Network,
                ["ask", "ask", "ask", "run"],
                ["ask", "rule", "rule", "run"],
            ),
            (
                Decision,
                [
                    "ask-checkpoint",
                    "ask-checkpoint",
                    "ask-checkpoint",
                    "refuse",
                ],
                [
                    "ask-checkpoint",
                    "ask-checkpoint",
                    "ask-checkpoint",
                    "refuse",
                ],
            ),
        ];
        for (class, plain, with_rule) in expected {
            for (i, mode) in modes.into_iter().enumerate() {
                assert_eq!(
                    cell(mode, class, false, false),
                    plain[i],
                    "{class:?} in {mode:?}"
                );
                assert_eq!(
                    cell(mode, class, false, true),
                    with_rule[i],
                    "{class:?} in {mode:?} with rule"
                );
            }
        }
    }

    /// The floor row: refuse in plan, ask everywhere else, and no rule covers it.
    #[test]
    fn the_safety_floor_row() {
        for class in [
            ToolClass::Read,
            ToolClass::Edit,
            ToolClass::Exec,
            ToolClass::Config,
            ToolClass::Network,
        ] {
            for rule in [false, true] {
                assert_eq!(cell(Mode::Plan, class, true, rule), "refuse");
                for mode in [Mode::Ask, Mode::AutoEdit, Mode::Yolo] {
                    assert_eq!(
                        cell(mode, class, true, rule),
                        "ask-floor",
                        "{class:?} {mode:?} rule={rule}"
                    );
                }
            }
        }
    }

    #[test]
    fn reasons_read_as_sentences() {
        assert_eq!(
            reason_detail(GateReason::Mode, Mode::Ask, ToolClass::Edit, None),
            "Ask mode — file changes need your approval"
        );
        assert!(
            reason_detail(
                GateReason::SafetyFloor,
                Mode::Yolo,
                ToolClass::Edit,
                Some("touches .env")
            )
            .contains("always asks, even in Yolo")
        );
    }
}
