//! `countersign hook claude-code`: Claude Code's `PermissionRequest` and `PreToolUse` hook input
//! in, its `hookSpecificOutput` out.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::external::gates_client::OpenGate;
use crate::external::hook::claude_dialog::{answered_in_dialog, ask_reason, races_the_dialog};
use crate::external::hook::{
    AgentAsk, Asked, GateHookArgs, GateKey, HookContext, HookOutcome, Opened, PendingCard, Stop,
    decide, fallback, hook_gate, open_card, parse_input, wait,
};
use crate::external::key::idempotency_key;
use crate::external::transcript;
use crate::external::verdict::Verdict;
use crate::protocol::canonical_json;

pub const SOURCE: &str = "claude-code";

/// The fields of Claude Code's hook input this hook reads (the rest is ignored).
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct ClaudeHookInput {
    pub session_id: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub cwd: String,
    pub hook_event_name: String,
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    /// The conversation so far, as JSON lines; its last assistant words head the card.
    #[serde(default, deserialize_with = "crate::external::hook::null_as_default")]
    pub transcript_path: String,
    /// PreToolUse only; PermissionRequest has none.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// Claude Code 2.1.196+, once the person has typed something.
    #[serde(default)]
    pub prompt_id: Option<String>,
    /// PermissionRequest: the "always allow" options the dialog would offer.
    #[serde(default)]
    pub permission_suggestions: Option<Vec<Value>>,
    /// `default`, `acceptEdits`, `plan`, `auto`, `bypassPermissions`, `dontAsk`: whether Claude
    /// shows its own dialog (see [`super::claude_dialog`]).
    #[serde(default)]
    pub permission_mode: Option<String>,
}

/// The two hook events that can carry a permission decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaudeEvent {
    PreToolUse,
    PermissionRequest,
}

impl ClaudeEvent {
    pub fn parse(name: &str) -> Option<ClaudeEvent> {
        match name {
            "PreToolUse" => Some(ClaudeEvent::PreToolUse),
            "PermissionRequest" => Some(ClaudeEvent::PermissionRequest),
            _ => None,
        }
    }
}

/// Runs the hook: parse, open a gate, wait, answer.
pub async fn answer(flags: &GateHookArgs, stdin: &[u8], ctx: &HookContext) -> HookOutcome {
    let input: ClaudeHookInput = match parse_input(stdin, "Claude Code", ctx) {
        Ok(input) => input,
        Err(outcome) => return outcome,
    };
    let mut out = HookOutcome::new(ctx);
    let Some(event) = ClaudeEvent::parse(&input.hook_event_name) else {
        out.say(format!(
            "`{}` is not a permission hook (use PermissionRequest or PreToolUse); no decision",
            input.hook_event_name
        ));
        return out;
    };
    let mut gate = open_gate(&input, ctx, flags.timeout);
    if !flags.no_transcript {
        gate.agent_says = transcript::last_words(&input.transcript_path).await;
    }
    let race = races_the_dialog(input.permission_mode.as_deref(), ctx);
    match event {
        ClaudeEvent::PreToolUse if race => {
            ask_beside_the_dialog(flags, &gate, &input, ctx, out).await
        }
        ClaudeEvent::PermissionRequest => {
            beside_the_dialog(flags, &gate, &input, ctx, out, race).await
        }
        ClaudeEvent::PreToolUse => {
            let key = key(&input, event);
            let asked = decide(flags, &gate, &key, ctx, &mut out, None).await;
            // No dialog here: Claude's own "ask" would be a refusal (`-p`, the SDK) or run the
            // call with nobody asked (`bypassPermissions`, `auto`'s classifier, `dontAsk`'s
            // rules), so it is never what an unreachable Countersign is answered with.
            let ask = AgentAsk::MayRun(no_dialog_here(&input, ctx));
            let verdict = match asked {
                Asked::Answered(verdict) => Some(verdict),
                Asked::Unreachable(why) => fallback(flags, &why, &ask),
                Asked::Gone => None,
            };
            if let Some(verdict) = verdict {
                out.stdout = render(event, &verdict, &input).to_string();
            }
            out
        }
    }
}

/// Where Claude shows no dialog of its own, in words for a deny.
fn no_dialog_here(input: &ClaudeHookInput, ctx: &HookContext) -> String {
    let mode = input.permission_mode.as_deref().unwrap_or("not given");
    if ctx.agent_attended {
        format!("Claude Code's permission mode `{mode}` shows no permission dialog")
    } else {
        format!(
            "an unattended Claude Code session (`claude -p`, the SDK) in permission mode \
             `{mode}` has nobody to ask"
        )
    }
}

/// `PreToolUse` where Claude shows its own dialog: the card is opened (a rule, the mode or the
/// floor may answer it at once, and that answer is given), and while it waits Claude is told
/// "ask", so its dialog shows beside the card. The `PermissionRequest` hook Claude runs then
/// finds the same card under the same key and waits on it. One poll marks the card watched:
/// if no such hook ever comes to wait on it, it closes (`agent_gone`) when the watch lapses.
async fn ask_beside_the_dialog(
    flags: &GateHookArgs,
    gate: &OpenGate,
    input: &ClaudeHookInput,
    ctx: &HookContext,
    mut out: HookOutcome,
) -> HookOutcome {
    let mut stop = Stop::listen();
    let asked = match open_card(flags, gate, &request_key(input), ctx, &mut out).await {
        Opened::Answered(verdict) => Asked::Answered(verdict),
        Opened::Unreachable(why) => {
            // Claude's dialog is a person's prompt here: `--if-unreachable ask` puts the call
            // in it, even where Claude would let the call run unasked (a read, an edit in
            // `acceptEdits`).
            match fallback(flags, &why, &AgentAsk::Prompts) {
                Some(verdict) => Asked::Answered(verdict),
                None => {
                    out.stdout = render_ask(&unreachable_reason(&why)).to_string();
                    return out;
                }
            }
        }
        // A floor card, or one a passkey must confirm, is answered on the card alone: Claude's
        // dialog is not shown beside it, and the hook waits on this very card as in any other
        // mode. Losing it then is a deny, never the dialog.
        Opened::Pending(card) if !card.state.dialog_may_answer => {
            wait(&card, (&mut stop, None), &mut out).await
        }
        Opened::Pending(card) => {
            if let Err(e) = card.client.poll(&card.state.approval_id, 0).await {
                out.say(format!("could not mark the card watched: {e}"));
            }
            out.stdout = render_ask(&ask_reason(&card.state.url)).to_string();
            return out;
        }
    };
    if let Asked::Answered(verdict) = asked {
        out.stdout = render(ClaudeEvent::PreToolUse, &verdict, input).to_string();
    }
    out
}

/// `PermissionRequest`, which Claude runs while its dialog is up (its first answer wins): the
/// hook finds the card (a `PreToolUse` hook may have opened it) and, where Claude's dialog may
/// answer it, waits on it while watching for the dialog's Yes (`race`: an attended session in a
/// dialog mode). A card only Countersign may answer (on the floor, or one a passkey must
/// confirm) is not raced: the dialog could approve it, so Claude is answered deny at once and
/// its dialog closes; the card stays open (watched, so it closes if nobody waits on it) and the
/// call made again waits on it.
async fn beside_the_dialog(
    flags: &GateHookArgs,
    gate: &OpenGate,
    input: &ClaudeHookInput,
    ctx: &HookContext,
    mut out: HookOutcome,
    race: bool,
) -> HookOutcome {
    let mut stop = Stop::listen();
    let asked = match open_card(flags, gate, &request_key(input), ctx, &mut out).await {
        Opened::Answered(verdict) => Asked::Answered(verdict),
        Opened::Unreachable(why) => Asked::Unreachable(why),
        Opened::Pending(card) if !card.state.dialog_may_answer => {
            Asked::Answered(leave_to_the_card(&card, &mut out).await)
        }
        Opened::Pending(card) => {
            let answered = race.then(|| {
                answered_in_dialog(&input.transcript_path, &input.tool_name, &input.tool_input)
            });
            wait(&card, (&mut stop, answered), &mut out).await
        }
    };
    let verdict = match asked {
        Asked::Answered(verdict) => Some(verdict),
        // The dialog is up: it is the person's prompt.
        Asked::Unreachable(why) => fallback(flags, &why, &AgentAsk::Prompts),
        Asked::Gone => None,
    };
    if let Some(verdict) = verdict {
        out.stdout = render(ClaudeEvent::PermissionRequest, &verdict, input).to_string();
    }
    out
}

/// Claude's dialog is up for a card only Countersign may answer: a deny, so the dialog closes
/// before anyone can approve the call in it. The card is marked watched (one poll), so it
/// closes if no hook comes to wait on it.
async fn leave_to_the_card(card: &PendingCard, out: &mut HookOutcome) -> Verdict {
    if let Err(e) = card.client.poll(&card.state.approval_id, 0).await {
        out.say(format!("could not mark the card watched: {e}"));
    }
    out.say("only Countersign's card may answer this call; Claude's dialog is answered deny");
    Verdict::Deny {
        message: card_only_message(&card.state.url),
    }
}

/// Why Claude's dialog was answered deny for a card only Countersign may answer.
pub fn card_only_message(url: &str) -> String {
    let at = if url.is_empty() {
        String::new()
    } else {
        format!(" ({url})")
    };
    format!(
        "This call needs Countersign's card{at}, not this dialog: it is on the safety floor or \
         needs a passkey. It waits there; make the same call again to wait for that answer."
    )
}

/// What Claude's dialog says when Countersign could not be reached.
fn unreachable_reason(why: &str) -> String {
    format!("Countersign could not be reached ({why}): answer here")
}

/// The gate for this request: Claude Code can run an edited input.
pub fn open_gate(input: &ClaudeHookInput, ctx: &HookContext, timeout_secs: u64) -> OpenGate {
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

/// The key of this call: the session and the tool use when the hook names it (a re-run of
/// the same hook finds the same gate, answered or not), else [`request_key`].
pub fn key(input: &ClaudeHookInput, event: ClaudeEvent) -> GateKey {
    match (event, input.tool_use_id.as_deref()) {
        (ClaudeEvent::PreToolUse, Some(tool_use_id)) if !tool_use_id.is_empty() => GateKey {
            key: idempotency_key(&[SOURCE, &input.session_id, tool_use_id]),
            names_one_call: true,
        },
        _ => request_key(input),
    }
}

/// A hash of the request (the session, the prompt, the tool and its input), which finds the
/// same gate only while it is pending (see [`decide`]): what a `PermissionRequest` hook, which
/// names no tool use, can compute — and so the key of a card it must find that a `PreToolUse`
/// hook opened (see [`super::claude_dialog`]).
pub fn request_key(input: &ClaudeHookInput) -> GateKey {
    GateKey {
        key: idempotency_key(&[
            SOURCE,
            &input.session_id,
            input.prompt_id.as_deref().unwrap_or(""),
            &input.tool_name,
            &canonical_json(&input.tool_input),
        ]),
        names_one_call: false,
    }
}

/// `{"hookSpecificOutput": …}` for a verdict.
pub fn render(event: ClaudeEvent, verdict: &Verdict, input: &ClaudeHookInput) -> Value {
    let output = match event {
        ClaudeEvent::PreToolUse => HookSpecificOutput::PreToolUse(pre_tool_use(verdict)),
        ClaudeEvent::PermissionRequest => HookSpecificOutput::PermissionRequest {
            decision: permission_decision(verdict, input.permission_suggestions.as_deref()),
        },
    };
    serde_json::json!({ "hookSpecificOutput": output })
}

/// `PreToolUse`'s "ask": Claude shows its own dialog, with `reason` in it.
pub fn render_ask(reason: &str) -> Value {
    let output = HookSpecificOutput::PreToolUse(PreToolUseOutput {
        permission_decision: "ask",
        permission_decision_reason: reason.to_owned(),
        updated_input: None,
    });
    serde_json::json!({ "hookSpecificOutput": output })
}

#[derive(Serialize)]
#[serde(tag = "hookEventName")]
enum HookSpecificOutput {
    PreToolUse(PreToolUseOutput),
    PermissionRequest { decision: PermissionDecision },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PreToolUseOutput {
    permission_decision: &'static str,
    permission_decision_reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_input: Option<Value>,
}

#[derive(Serialize)]
#[serde(tag = "behavior", rename_all = "lowercase")]
enum PermissionDecision {
    Allow {
        #[serde(rename = "updatedInput", skip_serializing_if = "Option::is_none")]
        updated_input: Option<Value>,
        #[serde(rename = "updatedPermissions", skip_serializing_if = "Option::is_none")]
        updated_permissions: Option<Vec<Value>>,
    },
    Deny {
        message: String,
    },
}

fn pre_tool_use(verdict: &Verdict) -> PreToolUseOutput {
    match &verdict.for_object_input() {
        Verdict::Allow {
            updated_input,
            always,
        } => PreToolUseOutput {
            permission_decision: "allow",
            permission_decision_reason: match (tool_input(updated_input), always) {
                (Some(_), _) => "Approved with edits in Countersign".into(),
                (None, true) => "Approved in Countersign; a rule now allows calls like this".into(),
                (None, false) => "Approved in Countersign".into(),
            },
            updated_input: tool_input(updated_input),
        },
        Verdict::Deny { message } => PreToolUseOutput {
            permission_decision: "deny",
            permission_decision_reason: message.clone(),
            updated_input: None,
        },
    }
}

/// Claude Code's own "always allow" suggestions are never passed back: a rule Claude saved in
/// its settings would answer later calls without asking Countersign, out of reach of a
/// revoke, an expiry or the scope the person chose. Countersign's rule is the one grant.
fn permission_decision(verdict: &Verdict, _suggestions: Option<&[Value]>) -> PermissionDecision {
    match &verdict.for_object_input() {
        Verdict::Allow { updated_input, .. } => PermissionDecision::Allow {
            updated_input: tool_input(updated_input),
            updated_permissions: None,
        },
        Verdict::Deny { message } => PermissionDecision::Deny {
            message: message.clone(),
        },
    }
}

/// The "always allow" option to echo: the `addRules` suggestion that allows, as the person's
/// Allow always in Countersign means. Another kind (a mode change, a directory) is not what
/// they chose, so none is echoed then; none is ever invented.
pub fn suggestion(suggestions: &[Value]) -> Option<Value> {
    suggestions
        .iter()
        .find(|s| s["type"] == "addRules" && s["behavior"] == "allow")
        .cloned()
}

/// An edit's replacement input, when it is one (an object): Claude Code takes nothing else.
fn tool_input(updated_input: &Option<Value>) -> Option<Value> {
    updated_input.clone().filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An edit Claude Code cannot apply (text, not a tool's input) is a deny on both hook
    /// events, never an allow of the call as proposed.
    #[test]
    fn an_edit_that_is_not_a_tool_input_is_a_deny() {
        let text = Verdict::Allow {
            updated_input: Some(serde_json::json!("revised")),
            always: false,
        };
        assert_eq!(pre_tool_use(&text).permission_decision, "deny");
        assert!(matches!(
            permission_decision(&text, None),
            PermissionDecision::Deny { .. }
        ));
        let object = Verdict::Allow {
            updated_input: Some(serde_json::json!({"command": "ls"})),
            always: false,
        };
        assert_eq!(pre_tool_use(&object).permission_decision, "allow");
        assert_eq!(
            pre_tool_use(&object).updated_input,
            Some(serde_json::json!({"command": "ls"}))
        );
    }
}
