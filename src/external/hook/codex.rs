//! `countersign hook codex`: Codex's `PermissionRequest` hook. Codex parses the answer with
//! `deny_unknown_fields` and rejects edited input or permission updates, so the output has
//! exactly `hookEventName` and `decision {behavior, message?}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::external::gates_client::OpenGate;
use crate::external::hook::{
    GateHookArgs, GateKey, HookContext, HookOutcome, decide, hook_gate, parse_input,
};
use crate::external::key::{canonical_json, idempotency_key};
use crate::external::transcript;
use crate::external::verdict::Verdict;

pub const SOURCE: &str = "codex";
const EVENT: &str = "PermissionRequest";

/// The fields of Codex's hook input this hook reads.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct CodexHookInput {
    pub session_id: String,
    #[serde(default)]
    pub turn_id: Option<String>,
    #[serde(default)]
    pub cwd: String,
    pub hook_event_name: String,
    #[serde(default)]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    /// The conversation so far, as JSON lines; its last assistant words head the card.
    #[serde(default)]
    pub transcript_path: String,
}

/// Runs the hook: parse, open a gate, wait, answer.
pub async fn answer(flags: &GateHookArgs, stdin: &[u8], ctx: &HookContext) -> HookOutcome {
    let input: CodexHookInput = match parse_input(stdin, "Codex", ctx) {
        Ok(input) => input,
        Err(outcome) => return outcome,
    };
    let mut out = HookOutcome::new(ctx);
    if input.hook_event_name != EVENT {
        out.say(format!(
            "`{}` is not Codex's PermissionRequest hook; no decision",
            input.hook_event_name
        ));
        return out;
    }
    let mut gate = open_gate(&input, ctx, flags.timeout);
    if !flags.no_transcript {
        gate.agent_says = transcript::last_words(&input.transcript_path).await;
    }
    let key = key(&input);
    if let Some(verdict) = decide(flags, &gate, &key, ctx, &mut out).await {
        out.stdout = render(&verdict).to_string();
    }
    out
}

/// The gate for this request: no edit, since Codex cannot take edited input.
pub fn open_gate(input: &CodexHookInput, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
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

/// Codex gives no tool-use id, so (as for Claude Code's PermissionRequest) the key is a hash
/// of the request: it finds the same gate while it is pending (see [`decide`]).
pub fn key(input: &CodexHookInput) -> GateKey {
    GateKey {
        key: idempotency_key(&[
            SOURCE,
            &input.session_id,
            input.turn_id.as_deref().unwrap_or(""),
            &input.tool_name,
            &canonical_json(&input.tool_input),
        ]),
        names_one_call: false,
    }
}

/// Codex's `PermissionRequestCommandOutputWire`, and nothing more.
#[derive(Serialize)]
struct Output {
    #[serde(rename = "hookSpecificOutput")]
    hook_specific_output: SpecificOutput,
}

#[derive(Serialize)]
struct SpecificOutput {
    #[serde(rename = "hookEventName")]
    hook_event_name: &'static str,
    decision: Decision,
}

#[derive(Serialize)]
struct Decision {
    behavior: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// The answer for a verdict. "Always" becomes a plain allow (Countersign's own rule remembers);
/// an edit cannot be applied by Codex, so it becomes a deny that says so.
pub fn render(verdict: &Verdict) -> Value {
    let decision = match verdict {
        Verdict::Allow {
            updated_input: None,
            ..
        } => Decision {
            behavior: "allow",
            message: None,
        },
        Verdict::Allow {
            updated_input: Some(_),
            ..
        } => Decision {
            behavior: "deny",
            message: Some(
                "Denied: Countersign answered with edited input, which Codex cannot apply; \
                 propose the edited call again."
                    .into(),
            ),
        },
        Verdict::Deny { message } => Decision {
            behavior: "deny",
            message: Some(message.clone()),
        },
    };
    let output = Output {
        hook_specific_output: SpecificOutput {
            hook_event_name: EVENT,
            decision,
        },
    };
    serde_json::to_value(output).unwrap_or_default()
}
