//! A person's answer to a card, as the wire carries it: the one body every door sends and
//! reads — the REST route (`POST …/approvals/{aid}`), the page's `decide` server function, the
//! no-script form (which builds one), the CLI, and a passkey ceremony's options (made for the
//! answer they will confirm). The server reads it into its typed, checked form (`Answer`)
//! before anything acts on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::PasskeyAnswer;

/// The body of `POST /api/v1/sessions/{sid}/approvals/{aid}`. Every field is optional on the
/// wire so that a missing one is refused with the protocol's own code (`invalid_decision`, …),
/// not a parse error; fields left `None` are not written.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The standing rule Allow always makes, as the person shaped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRequest>,
    /// The answering browser tab (optional), so the card can say "you" or "another tab".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// For a plan card: the mode to leave plan mode for (default: the card's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<String>,
    /// A passkey assertion made for this card, where `approvals.require_passkey` covers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passkey: Option<PasskeyAnswer>,
}

impl DecisionRequest {
    /// An answer of `decision` with nothing else yet.
    pub fn of(decision: &str) -> DecisionRequest {
        DecisionRequest {
            decision: Some(decision.to_owned()),
            ..DecisionRequest::default()
        }
    }
}

/// The rule an Allow always answer asks for (`scope`: `session` or `workspace`).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The rule stops applying this many seconds after it is created (default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
    /// The rule answers at most this many calls (at least 1; default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a client writes is what the server reads back, and only the fields set are sent.
    #[test]
    fn an_answer_round_trips_and_writes_only_what_is_set() {
        let answer = DecisionRequest {
            rule: Some(RuleRequest {
                scope: Some("workspace".into()),
                ..RuleRequest::default()
            }),
            client_id: Some("cli".into()),
            ..DecisionRequest::of("allow_always")
        };
        let json = serde_json::to_value(&answer).ok();
        assert_eq!(
            json,
            Some(serde_json::json!({
                "decision": "allow_always", "rule": {"scope": "workspace"}, "client_id": "cli",
            }))
        );
        let back: Option<DecisionRequest> = json.and_then(|j| serde_json::from_value(j).ok());
        assert_eq!(back, Some(answer));
        let unknown = serde_json::from_str::<DecisionRequest>(r#"{"decision":"approve","x":1}"#);
        assert!(unknown.is_err(), "unknown fields are refused");
    }
}
