//! `countersign hook gemini`: Gemini CLI's `BeforeTool` hook. Gemini's hook can deny, ask, or
//! allow with changed arguments (`hookSpecificOutput.tool_input`), but an allow does not
//! skip Gemini's own policy: run Gemini with `--approval-mode yolo` so Countersign is the one
//! prompt. Gemini runs the tool when a hook times out, says nothing, or exits 1, so this hook
//! always answers, and answers in time.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::external::gates_client::OpenGate;
use crate::external::hook::{AlwaysAnswer, Dropped, GateKey, HookContext, Why, hook_gate};
use crate::external::key::idempotency_key;
use crate::external::transcript;
use crate::external::verdict::Verdict;
use crate::protocol::canonical_json;

pub const SOURCE: &str = "gemini-cli";
pub const EVENT: &str = "BeforeTool";

/// The fields of Gemini CLI's hook input this hook reads.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct GeminiHookInput {
    pub session_id: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub cwd: String,
    pub hook_event_name: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    /// When Gemini fired the hook: one call's own mark (Gemini names no tool-use id).
    #[serde(default)]
    pub timestamp: Option<String>,
    /// Gemini's chat log (JSON lines); the hook watches it for the call being cancelled.
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub transcript_path: String,
}

/// A line of Gemini's chat log that ends the call the hook waits on: the request cancelled
/// (Esc). Only that: a `user` line may be a subagent's or a notice.
fn cancelled(line: &Value) -> bool {
    line["type"] == "info" && line["content"] == "Request cancelled."
}

impl AlwaysAnswer for GeminiHookInput {
    const AGENT: &'static str = "Gemini CLI";

    fn other_event(&self) -> Option<&str> {
        (self.hook_event_name != EVENT).then_some(self.hook_event_name.as_str())
    }

    fn gate(&self, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
        open_gate(self, ctx, timeout_secs)
    }

    fn key(&self) -> GateKey {
        key(self)
    }

    /// Esc in Gemini cancels the request but leaves its hook running; Gemini says so in its
    /// chat log.
    fn dropped(&self) -> Option<Dropped> {
        let path = self.transcript_path.clone();
        Some(Box::pin(async move {
            transcript::dropped(&path, cancelled).await;
            Why::DROPPED
        }))
    }

    fn render(verdict: Option<&Verdict>) -> Value {
        render(verdict)
    }
}

/// The gate for this call: Gemini runs changed arguments, so the card offers Edit.
pub fn open_gate(input: &GeminiHookInput, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
    let tool = (input.tool_name.as_str(), &input.tool_input);
    hook_gate(
        SOURCE,
        &input.session_id,
        &input.cwd,
        tool,
        true,
        ctx,
        timeout_secs,
    )
}

/// The session, the moment Gemini fired the hook, and the call: one call's key.
pub fn key(input: &GeminiHookInput) -> GateKey {
    GateKey {
        key: idempotency_key(&[
            SOURCE,
            &input.session_id,
            input.timestamp.as_deref().unwrap_or(""),
            &input.tool_name,
            &canonical_json(&input.tool_input),
        ]),
        names_one_call: input.timestamp.as_deref().is_some_and(|t| !t.is_empty()),
    }
}

/// Gemini's answer for a verdict; `None` (no decision from Countersign) asks in Gemini.
pub fn render(verdict: Option<&Verdict>) -> Value {
    match verdict.map(Verdict::for_object_input).as_ref() {
        Some(Verdict::Allow {
            updated_input: Some(input),
            ..
        }) => json!({
            "decision": "allow",
            "reason": "Approved with edits in Countersign",
            "hookSpecificOutput": {"hookEventName": EVENT, "tool_input": input},
        }),
        Some(Verdict::Allow { .. }) => json!({
            "decision": "allow",
            "reason": "Approved in Countersign",
        }),
        Some(Verdict::Deny { message }) => json!({"decision": "deny", "reason": message}),
        None => json!({
            "decision": "ask",
            "reason": "Countersign gave no answer; Gemini CLI asks instead",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_is_gemini_s_own_answer() {
        let deny = Verdict::Deny {
            message: "not today".into(),
        };
        assert_eq!(
            render(Some(&deny)),
            json!({"decision": "deny", "reason": "not today"})
        );
        let edit = Verdict::Allow {
            updated_input: Some(json!({"command": "ls"})),
            always: false,
        };
        assert_eq!(
            render(Some(&edit))["hookSpecificOutput"]["tool_input"],
            json!({"command": "ls"})
        );
        // No answer from Countersign is never silence (Gemini would run the call): it asks.
        assert_eq!(render(None)["decision"], "ask");
        // An edit Gemini cannot apply (text, not arguments) is a no, not the call as proposed.
        let text = Verdict::Allow {
            updated_input: Some(json!("revised")),
            always: false,
        };
        assert_eq!(render(Some(&text))["decision"], "deny");
    }

    #[test]
    fn two_calls_of_one_command_are_two_cards() {
        let input = |at: &str| GeminiHookInput {
            session_id: "s".into(),
            cwd: "/w".into(),
            hook_event_name: EVENT.into(),
            tool_name: "run_shell_command".into(),
            tool_input: json!({"command": "ls"}),
            timestamp: Some(at.into()),
            transcript_path: String::new(),
        };
        let (a, b) = (key(&input("t1")), key(&input("t2")));
        assert_ne!(a.key, b.key);
        assert!(a.names_one_call);
    }
}
