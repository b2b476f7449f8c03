//! `countersign hook qwen`: Qwen Code's `PreToolUse` hook. Qwen fires it when the tool is about
//! to run — after its own approval step, so run Qwen with `--approval-mode yolo` to make
//! Countersign the one prompt — and ignores changed input there, so the card offers no Edit.
//! Qwen runs the tool when a hook fails in any way (a timeout, no output, a bad exit), so this
//! hook always answers, and answers in time.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::external::gates_client::OpenGate;
use crate::external::hook::{AlwaysAnswer, Dropped, GateKey, HookContext, Why, hook_gate};
use crate::external::key::idempotency_key;
use crate::external::transcript;
use crate::external::verdict::Verdict;
use crate::protocol::canonical_json;

pub const SOURCE: &str = "qwen-code";
pub const EVENT: &str = "PreToolUse";

/// The fields of Qwen Code's hook input this hook reads.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct QwenHookInput {
    pub session_id: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub cwd: String,
    pub hook_event_name: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    /// The model's id for this call (`call_…`), or Qwen's own (`toolu_…`).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// Qwen's transcript (JSON lines); the hook watches it for this call's result.
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub transcript_path: String,
}

/// Whether a transcript line settles the call `call_id`: its result (Qwen writes one, status
/// `cancelled`, when the person presses Esc). Nothing else: Qwen writes `user` lines for its
/// own notices too, and background subagents share the transcript.
fn settles(line: &Value, call_id: &str) -> bool {
    line["type"] == "tool_result"
        && !call_id.is_empty()
        && line["toolCallResult"]["callId"] == call_id
}

impl AlwaysAnswer for QwenHookInput {
    const AGENT: &'static str = "Qwen Code";

    fn other_event(&self) -> Option<&str> {
        (self.hook_event_name != EVENT).then_some(self.hook_event_name.as_str())
    }

    fn gate(&self, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
        open_gate(self, ctx, timeout_secs)
    }

    fn key(&self) -> GateKey {
        key(self)
    }

    /// Esc in Qwen cancels the call but leaves its hook running; Qwen writes the call's
    /// result to its transcript.
    fn dropped(&self) -> Option<Dropped> {
        let path = self.transcript_path.clone();
        let call_id = self.tool_call_id.clone().unwrap_or_default();
        Some(Box::pin(async move {
            transcript::dropped(&path, |line| settles(line, &call_id)).await;
            Why::DROPPED
        }))
    }

    fn render(verdict: Option<&Verdict>) -> Value {
        render(verdict)
    }
}

/// The gate for this call: no Edit (Qwen's PreToolUse ignores changed input).
pub fn open_gate(input: &QwenHookInput, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
    let tool = (input.tool_name.as_str(), &input.tool_input);
    hook_gate(
        SOURCE,
        &input.session_id,
        &input.cwd,
        tool,
        false,
        ctx,
        timeout_secs,
    )
}

/// The session and the call's ids when Qwen names them (it always has): the model's
/// `tool_call_id` and Qwen's own per-run `tool_use_id` together, since a provider may reuse its
/// ids; else the request.
pub fn key(input: &QwenHookInput) -> GateKey {
    let ids: Vec<&str> = [&input.tool_call_id, &input.tool_use_id]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .filter(|id| !id.is_empty())
        .collect();
    match ids.as_slice() {
        [_, ..] => GateKey {
            key: idempotency_key(&[&[SOURCE, &input.session_id][..], &ids[..]].concat()),
            names_one_call: true,
        },
        [] => GateKey {
            key: idempotency_key(&[
                SOURCE,
                &input.session_id,
                &input.tool_name,
                &canonical_json(&input.tool_input),
            ]),
            names_one_call: false,
        },
    }
}

/// Qwen's answer for a verdict; `None` (no decision from Countersign) asks in Qwen. An edit
/// cannot be applied here, so it is a deny that says so.
pub fn render(verdict: Option<&Verdict>) -> Value {
    let (decision, reason) = match verdict {
        Some(Verdict::Allow {
            updated_input: Some(_),
            ..
        }) => (
            "deny",
            "Denied: Countersign answered with edited input, which Qwen Code cannot apply; \
             propose the edited call again."
                .to_owned(),
        ),
        Some(Verdict::Allow { .. }) => ("allow", "Approved in Countersign".to_owned()),
        Some(Verdict::Deny { message }) => ("deny", message.clone()),
        None => (
            "ask",
            "Countersign gave no answer; Qwen Code asks instead".to_owned(),
        ),
    };
    json!({"hookSpecificOutput": {
        "hookEventName": EVENT,
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_is_qwen_s_own_answer() {
        let out = |v: Option<&Verdict>| render(v)["hookSpecificOutput"].clone();
        let deny = Verdict::Deny {
            message: "no".into(),
        };
        assert_eq!(out(Some(&deny))["permissionDecision"], "deny");
        assert_eq!(out(Some(&deny))["permissionDecisionReason"], "no");
        // Qwen cannot apply an edit: a deny that says so, never an allow of the original.
        let edit = Verdict::Allow {
            updated_input: Some(json!({"command": "ls"})),
            always: false,
        };
        assert_eq!(out(Some(&edit))["permissionDecision"], "deny");
        // Qwen runs a call whose hook says nothing: no answer asks instead.
        assert_eq!(out(None)["permissionDecision"], "ask");
    }

    #[test]
    fn only_this_call_s_result_or_a_new_message_settles_it() {
        let result = |id: &str| json!({"type": "tool_result", "toolCallResult": {"callId": id, "status": "cancelled"}});
        assert!(settles(&result("call_1"), "call_1"));
        assert!(
            !settles(&result("call_2"), "call_1"),
            "another call's result"
        );
        assert!(!settles(&result(""), ""), "no id names no call");
        assert!(
            !settles(&json!({"type": "user"}), "call_1"),
            "a notice is no result"
        );
        assert!(!settles(&json!({"type": "system"}), "call_1"));
    }
}
