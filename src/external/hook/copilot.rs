//! `countersign hook copilot`: GitHub Copilot CLI's `preToolUse` hook. An allow skips Copilot's
//! own prompt, a deny's reason reaches the model, and `modifiedArgs` runs edited arguments.
//! Copilot runs the tool when a hook times out (its default is 30 s: `hook install copilot`
//! writes the gate's window instead), so this hook answers in time.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::external::gates_client::OpenGate;
use crate::external::hook::{AgentAsk, AlwaysAnswer, GateKey, HookContext, hook_gate};
use crate::external::key::idempotency_key;
use crate::external::verdict::Verdict;
use crate::protocol::canonical_json;

pub const SOURCE: &str = "copilot-cli";

/// The fields of Copilot CLI's `preToolUse` input this hook reads (camelCase; it names no
/// event).
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CopilotHookInput {
    pub session_id: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub cwd: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub tool_name: String,
    /// An object; a JSON string of one is read too.
    #[serde(default)]
    pub tool_args: Value,
    /// Epoch milliseconds: one call's own mark (Copilot names no tool-use id).
    #[serde(default)]
    pub timestamp: Option<Value>,
}

impl CopilotHookInput {
    /// The arguments as an object, whichever way Copilot sent them (a string is read as
    /// JavaScript wrote it: a lone surrogate escape is not an error there); `Err` says why
    /// they cannot be read, and the call is then refused rather than shown as something else.
    fn parsed_args(&self) -> Result<Value, String> {
        let args = match &self.tool_args {
            Value::String(text) => serde_json::from_str(text)
                .or_else(|_| {
                    serde_json::from_str(&crate::external::hook::without_lone_surrogates(text))
                })
                .map_err(|e| format!("its toolArgs string is not JSON ({e})"))?,
            Value::Null => json!({}),
            other => other.clone(),
        };
        if args.is_object() {
            Ok(args)
        } else {
            Err("its toolArgs are not an object".to_owned())
        }
    }

    fn args(&self) -> Value {
        self.parsed_args().unwrap_or_else(|_| json!({}))
    }
}

impl AlwaysAnswer for CopilotHookInput {
    const AGENT: &'static str = "Copilot CLI";

    /// Copilot's `preToolUse` input names no event.
    fn other_event(&self) -> Option<&str> {
        None
    }

    fn gate(&self, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
        open_gate(self, ctx, timeout_secs)
    }

    fn key(&self) -> GateKey {
        key(self)
    }

    fn unreadable(&self) -> Option<String> {
        self.parsed_args().err()
    }

    /// Copilot runs a call its hook says "ask" about, unasked, under `--allow-all-tools`
    /// (`--allow-all`, `--yolo`, `/allow-all` in its terminal), which its hook input does not
    /// show: its "ask" is never the answer to an unreachable Countersign.
    fn agent_ask(&self) -> AgentAsk {
        AgentAsk::MayRun(
            "Copilot CLI runs an \"ask\" unasked under --allow-all-tools, --yolo or /allow-all, \
             which its hook cannot see"
                .into(),
        )
    }

    fn render(verdict: Option<&Verdict>) -> Value {
        render(verdict)
    }
}

/// The gate for this call: Copilot runs changed arguments, so the card offers Edit.
pub fn open_gate(input: &CopilotHookInput, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
    let args = input.args();
    hook_gate(
        SOURCE,
        &input.session_id,
        &input.cwd,
        (input.tool_name.as_str(), &args),
        true,
        ctx,
        timeout_secs,
    )
}

/// The session, the moment Copilot fired the hook, and the call: one call's key.
pub fn key(input: &CopilotHookInput) -> GateKey {
    let stamp = match &input.timestamp {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    GateKey {
        key: idempotency_key(&[
            SOURCE,
            &input.session_id,
            &stamp,
            &input.tool_name,
            &canonical_json(&input.args()),
        ]),
        names_one_call: !stamp.is_empty(),
    }
}

/// Copilot's answer for a verdict; `None` (no decision from Countersign) asks in Copilot.
pub fn render(verdict: Option<&Verdict>) -> Value {
    match verdict.map(Verdict::for_object_input).as_ref() {
        Some(Verdict::Allow {
            updated_input: Some(args),
            ..
        }) => json!({
            "permissionDecision": "allow",
            "permissionDecisionReason": "Approved with edits in Countersign",
            "modifiedArgs": args,
        }),
        Some(Verdict::Allow { .. }) => json!({
            "permissionDecision": "allow",
            "permissionDecisionReason": "Approved in Countersign",
        }),
        Some(Verdict::Deny { message }) => json!({
            "permissionDecision": "deny",
            "permissionDecisionReason": message,
        }),
        None => json!({
            "permissionDecision": "ask",
            "permissionDecisionReason": "Countersign gave no answer; Copilot CLI asks instead",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_is_copilot_s_own_answer() {
        let edit = Verdict::Allow {
            updated_input: Some(json!({"command": "ls", "description": "list"})),
            always: false,
        };
        assert_eq!(
            render(Some(&edit)),
            json!({"permissionDecision": "allow",
                   "permissionDecisionReason": "Approved with edits in Countersign",
                   "modifiedArgs": {"command": "ls", "description": "list"}})
        );
        let deny = Verdict::Deny {
            message: "no".into(),
        };
        assert_eq!(render(Some(&deny))["permissionDecision"], "deny");
        assert_eq!(render(None)["permissionDecision"], "ask");
        let text = Verdict::Allow {
            updated_input: Some(json!("revised")),
            always: false,
        };
        assert_eq!(render(Some(&text))["permissionDecision"], "deny");
    }

    #[test]
    fn arguments_sent_as_a_json_string_are_read_as_the_object() {
        let input: CopilotHookInput = serde_json::from_value(json!({
            "sessionId": "s", "timestamp": 1796165385014u64, "cwd": "/w",
            "toolName": "bash", "toolArgs": "{\"command\":\"rm -rf build\"}"
        }))
        .unwrap();
        assert_eq!(input.args(), json!({"command": "rm -rf build"}));
        assert!(key(&input).names_one_call);
        // A lone surrogate (which JavaScript writes) is repaired, not read as no arguments.
        let lone: CopilotHookInput = serde_json::from_value(json!({
            "sessionId": "s", "cwd": "/w", "toolName": "bash",
            "toolArgs": "{\"command\":\"rm -rf build \\ud800\"}"
        }))
        .unwrap();
        assert_eq!(lone.unreadable(), None);
        assert!(
            lone.args()["command"]
                .as_str()
                .unwrap()
                .starts_with("rm -rf build")
        );
        // What cannot be read is refused, never shown as an empty call.
        for bad in [json!("{not json"), json!("[1, 2]"), json!(7)] {
            let input: CopilotHookInput = serde_json::from_value(json!({
                "sessionId": "s", "cwd": "/w", "toolName": "bash", "toolArgs": bad
            }))
            .unwrap();
            assert!(input.unreadable().is_some(), "{bad}");
        }
    }
}
