//! One meaning for every adapter: a resolved gate becomes allow (maybe with edited input, maybe
//! "always") or deny with a sentence the agent and the person can read.

use serde_json::Value;

use crate::external::gates_client::{Decision, GateState, GateStatus, Stored};
use crate::text::truncate;

/// The longest deny message passed on (Claude Code caps hook output strings at 10,000).
const MAX_MESSAGE: usize = 2_000;

/// What the agent is told.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Allow {
        /// The replacement input of an `edit` decision.
        updated_input: Option<Value>,
        /// `allow_always`: Countersign now has a standing rule for calls like this.
        always: bool,
    },
    Deny {
        message: String,
    },
}

impl Verdict {
    /// The verdict of a gate. A gate still pending is a deny: the caller has given up on it.
    pub fn from_state(state: &GateState) -> Verdict {
        match state.status {
            // A decision this build does not know, under `approved`, runs the call as proposed
            // (never edited, never as a rule).
            GateStatus::Approved => match state.decision.as_ref().and_then(Stored::known) {
                // An object replaces a tool's input; a string is a decision's revised text. An
                // edit without one is not run as proposed: the person wanted it changed.
                Some(Decision::Edit) => match state
                    .updated_input
                    .clone()
                    .filter(|v| v.is_object() || v.is_string())
                {
                    Some(input) => Verdict::Allow {
                        updated_input: Some(input),
                        always: false,
                    },
                    None => deny(
                        "Denied in Countersign: the call was edited, but the edit could not be \
                         read; ask again"
                            .to_owned(),
                    ),
                },
                // An answer that contradicts its status is not taken as a yes.
                Some(Decision::Deny | Decision::Timeout | Decision::Cancelled) => deny(
                    "Denied in Countersign: the answer contradicted itself (approved, with a \
                     decision that runs nothing)"
                        .to_owned(),
                ),
                Some(Decision::AllowAlways) => Verdict::Allow {
                    updated_input: None,
                    always: true,
                },
                _ => Verdict::Allow {
                    updated_input: None,
                    always: false,
                },
            },
            // The person's reason is the message, word for word: it is addressed to the agent.
            GateStatus::Denied => deny(match non_empty(&state.reason) {
                Some(reason) => reason.to_owned(),
                None => "Denied in Countersign.".to_owned(),
            }),
            GateStatus::Expired => {
                deny("Denied in Countersign: the request expired with no answer.".to_owned())
            }
            GateStatus::Cancelled => deny(match non_empty(&state.reason) {
                Some(why) => format!("Denied in Countersign: the request was cancelled ({why})."),
                None => "Denied in Countersign: the request was cancelled.".to_owned(),
            }),
            GateStatus::Pending => deny("Denied in Countersign: no answer came.".to_owned()),
            GateStatus::Unknown => deny(
                "Denied in Countersign: the gate ended in a state this client does not know."
                    .to_owned(),
            ),
        }
    }

    /// The adapter's own deadline passed before anyone answered.
    pub fn timed_out(secs: u64) -> Verdict {
        deny(format!(
            "Denied in Countersign: timed out after {} with no answer.",
            crate::text::duration_words(secs)
        ))
    }

    /// Countersign could not be asked (used where an answer is mandatory, e.g. MCP).
    pub fn unreachable(detail: &str) -> Verdict {
        deny(format!(
            "Denied: Countersign could not be asked ({detail})."
        ))
    }

    /// Countersign answered, but not with a decision on this call (it refused the token, had too
    /// many cards waiting, could not store the card, lost it, or failed): without its answer the
    /// call is not allowed, in every mode of every agent.
    pub fn refused(detail: &str) -> Verdict {
        deny(format!(
            "Denied: Countersign gave no decision on this call ({detail}), and without one it \
             is not allowed."
        ))
    }

    /// The verdict as an agent that takes a replacement input only as an object (a tool's
    /// arguments) must read it: an edit that is not one (a decision's revised text) cannot be
    /// passed on, so it is a deny, never the call as proposed.
    pub fn for_object_input(&self) -> Verdict {
        match self {
            Verdict::Allow {
                updated_input: Some(input),
                ..
            } if !input.is_object() => deny(
                "Denied in Countersign: the call was edited as text, which this agent cannot \
                 apply to a tool's arguments; propose the edited call again"
                    .to_owned(),
            ),
            other => other.clone(),
        }
    }
}

fn deny(message: String) -> Verdict {
    Verdict::Deny {
        message: truncate(&message, MAX_MESSAGE),
    }
}

fn non_empty(text: &Option<String>) -> Option<&str> {
    text.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_an_object_only_agent_cannot_apply_is_a_deny() {
        let text = Verdict::Allow {
            updated_input: Some(json!("revised wording")),
            always: false,
        };
        assert!(matches!(text.for_object_input(), Verdict::Deny { .. }));
        let object = Verdict::Allow {
            updated_input: Some(json!({"command": "ls"})),
            always: false,
        };
        assert_eq!(object.for_object_input(), object);
        let plain = Verdict::Allow {
            updated_input: None,
            always: true,
        };
        assert_eq!(plain.for_object_input(), plain);
    }

    /// A gate's state: `value`'s fields over what the server always sends.
    fn state(value: Value) -> GateState {
        let mut full = json!({"session_id": "s", "url": "http://x/a/a",
            "expires_at": "2026-11-30T10:30:00Z"});
        full.as_object_mut()
            .unwrap()
            .extend(value.as_object().unwrap().clone());
        serde_json::from_value(full).unwrap()
    }

    #[test]
    fn approvals_allow() {
        let v = Verdict::from_state(&state(
            json!({"approval_id":"a","status":"approved","decision":"approve"}),
        ));
        assert_eq!(
            v,
            Verdict::Allow {
                updated_input: None,
                always: false
            }
        );
    }

    #[test]
    fn edits_carry_the_replacement_input() {
        let v = Verdict::from_state(&state(json!({"approval_id":"a","status":"approved",
            "decision":"edit","updated_input":{"command":"ls"}})));
        assert_eq!(
            v,
            Verdict::Allow {
                updated_input: Some(json!({"command":"ls"})),
                always: false
            }
        );
    }

    #[test]
    fn allow_always_is_marked() {
        let v = Verdict::from_state(&state(json!({"approval_id":"a","status":"approved",
            "decision":"allow_always","rule":{"id":"r"}})));
        assert_eq!(
            v,
            Verdict::Allow {
                updated_input: None,
                always: true
            }
        );
    }

    #[test]
    fn denials_expiry_and_cancellation_say_so() {
        let message = |v: Value| match Verdict::from_state(&state(v)) {
            Verdict::Deny { message } => message,
            other => panic!("not a deny: {other:?}"),
        };
        assert_eq!(
            message(
                json!({"approval_id":"a","status":"denied","decision":"deny","reason":"not on main"})
            ),
            "not on main"
        );
        assert_eq!(
            message(json!({"approval_id":"a","status":"denied","decision":"deny"})),
            "Denied in Countersign."
        );
        assert!(message(json!({"approval_id":"a","status":"expired"})).contains("expired"));
        assert!(message(json!({"approval_id":"a","status":"cancelled"})).contains("cancelled"));
        assert_eq!(
            Verdict::timed_out(1800),
            Verdict::Deny {
                message: "Denied in Countersign: timed out after 30 min with no answer.".into()
            }
        );
    }

    /// An approved gate runs only what was approved: an edit that cannot be read, or an
    /// answer that contradicts its status, is a no; a decision this build does not know runs
    /// the call as proposed, never edited and never as a rule.
    #[test]
    fn an_approval_that_cannot_be_read_whole_runs_nothing_changed() {
        let is_deny = |v: Verdict| matches!(v, Verdict::Deny { .. });
        for updated in [json!(null), json!([1, 2]), json!(7), json!(true)] {
            let v = Verdict::from_state(&state(json!({"approval_id":"a","status":"approved",
                "decision":"edit","updated_input": updated})));
            assert!(is_deny(v), "edit with {updated}");
        }
        let v = Verdict::from_state(&state(
            json!({"approval_id":"a","status":"approved","decision":"edit"}),
        ));
        assert!(is_deny(v), "edit with no input");
        for contradiction in ["deny", "timeout", "cancelled"] {
            let v = Verdict::from_state(&state(
                json!({"approval_id":"a","status":"approved","decision": contradiction}),
            ));
            assert!(is_deny(v), "approved + {contradiction}");
        }
        let v = Verdict::from_state(&state(json!({"approval_id":"a","status":"approved",
            "decision":"approve_with_conditions","updated_input":{"command":"rm -rf /"}})));
        assert_eq!(
            v,
            Verdict::Allow {
                updated_input: None,
                always: false
            }
        );
        let v = Verdict::from_state(&state(
            json!({"approval_id":"a","status":"vaporised","decision":"approve"}),
        ));
        assert!(is_deny(v), "an unknown status");
    }

    #[test]
    fn long_reasons_are_cut() {
        let long = "x".repeat(5_000);
        match Verdict::from_state(&state(
            json!({"approval_id":"a","status":"denied","reason": long}),
        )) {
            Verdict::Deny { message } => assert_eq!(message.chars().count(), MAX_MESSAGE),
            other => panic!("not a deny: {other:?}"),
        }
    }
}
