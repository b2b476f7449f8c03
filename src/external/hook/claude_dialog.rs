//! Claude Code's own permission dialog and Countersign's card, raced. Where Claude shows its
//! dialog (an attended session in `default`, `acceptEdits` or `plan`), a `PreToolUse` hook that
//! waited for the card would keep the dialog from ever showing. So there the `PreToolUse` hook
//! opens the card and answers "ask" at once; Claude shows its dialog and, while it is up, runs
//! its `PermissionRequest` hooks (Claude Code 2.1.x starts them beside the dialog, and the first
//! answer wins). That hook finds the same card (the same request key) and waits on it:
//!
//! - the card is answered first: the hook's decision answers Claude, and its dialog closes;
//! - the dialog's No (or Esc) comes first: Claude aborts the turn and stops its hooks with
//!   SIGTERM, and the hook closes the card (`agent_gone`);
//! - the dialog's Yes comes first: Claude tells its hooks nothing (it neither stops them nor
//!   fires an event; 2.1.332 lets the hook run to its own end), so the hook watches Claude's
//!   transcript for this call's result and closes the card (`answered_elsewhere`) when it is
//!   written — when the call has run, the first sign of the Yes a hook can see.
//!
//! Elsewhere (`auto`, `bypassPermissions`, `dontAsk`, any mode this does not know, and every
//! unattended session: `-p`, the SDK, where an "ask" is a refusal and no `PermissionRequest`
//! hook runs) the `PreToolUse` hook waits for the card as before: every call still reaches
//! Countersign.

use std::collections::HashSet;

use serde_json::Value;

use crate::external::hook::{Dropped, HookContext, Why};
use crate::external::transcript::{self, Start};

/// Claude Code's permission modes in which it shows its own dialog for a call it would ask
/// about.
const DIALOG_MODES: [&str; 3] = ["default", "acceptEdits", "plan"];

/// Whether Claude shows its own dialog for this call while its hooks run: an attended session
/// (`CLAUDE_CODE_SESSION_ATTENDED=1`) in a dialog mode.
pub fn races_the_dialog(permission_mode: Option<&str>, ctx: &HookContext) -> bool {
    ctx.agent_attended && permission_mode.is_some_and(|mode| DIALOG_MODES.contains(&mode))
}

/// What Claude's dialog says of the card (it shows the reason under "Hook PreToolUse requires
/// confirmation").
pub fn ask_reason(url: &str) -> String {
    if url.is_empty() {
        "Countersign asks too: answer here or on its card; the first answer counts".into()
    } else {
        format!("Countersign asks too: answer here or on its card ({url}); the first answer counts")
    }
}

/// Resolves when Claude's transcript at `path` gets the result of the call `name(input)` that
/// the `PermissionRequest` hook waits on: the person answered the dialog (and the call ran).
pub(crate) fn answered_in_dialog(path: &str, name: &str, input: &Value) -> Dropped {
    let (path, mut call) = (path.to_owned(), ThisCall::new(name, input));
    Box::pin(async move {
        transcript::watch(&path, Start::Tail, |line, fresh| {
            call.settled_by(line, fresh)
        })
        .await;
        Why::ANSWERED_IN_AGENT
    })
}

/// The tool uses in a transcript that are this call (same tool, same input) and have no
/// result yet.
struct ThisCall {
    name: String,
    input: Value,
    open: HashSet<String>,
}

impl ThisCall {
    fn new(name: &str, input: &Value) -> ThisCall {
        ThisCall {
            name: name.to_owned(),
            input: input.clone(),
            open: HashSet::new(),
        }
    }

    /// Whether `line` is this call's result, written after the watch began. A result already
    /// there when it began settled an earlier identical call, which is forgotten.
    fn settled_by(&mut self, line: &Value, fresh: bool) -> bool {
        let blocks = line["message"]["content"].as_array();
        for block in blocks.into_iter().flatten() {
            match (line["type"].as_str(), block["type"].as_str()) {
                (Some("assistant"), Some("tool_use"))
                    if block["name"] == self.name.as_str() && block["input"] == self.input =>
                {
                    if let Some(id) = block["id"].as_str() {
                        self.open.insert(id.to_owned());
                    }
                }
                (Some("user"), Some("tool_result")) => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if self.open.remove(id) && fresh {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(attended: bool) -> HookContext {
        HookContext {
            home: None,
            cwd: "/tmp".into(),
            open_budget: std::time::Duration::from_secs(1),
            live_stderr: false,
            agent_attended: attended,
        }
    }

    #[test]
    fn only_an_attended_session_in_a_dialog_mode_races() {
        for mode in ["default", "acceptEdits", "plan"] {
            assert!(races_the_dialog(Some(mode), &ctx(true)), "{mode}");
            assert!(
                !races_the_dialog(Some(mode), &ctx(false)),
                "{mode} under -p"
            );
        }
        for mode in [
            "auto",
            "bypassPermissions",
            "dontAsk",
            "Default",
            "",
            "yolo",
        ] {
            assert!(!races_the_dialog(Some(mode), &ctx(true)), "{mode}");
        }
        assert!(!races_the_dialog(None, &ctx(true)));
    }

    fn tool_use(id: &str, command: &str) -> Value {
        json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}]}})
    }

    fn result(id: &str) -> Value {
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": id, "content": "ok"}]}})
    }

    #[test]
    fn only_this_calls_result_written_after_the_watch_began_settles_it() {
        let input = json!({"command": "make"});
        let mut call = ThisCall::new("Bash", &input);
        // Before the watch: an earlier identical call and its result, then this call.
        assert!(!call.settled_by(&tool_use("t1", "make"), false));
        assert!(!call.settled_by(&result("t1"), false));
        assert!(!call.settled_by(&tool_use("t2", "make"), false));
        assert!(!call.settled_by(&tool_use("t3", "make test"), false));
        // Another call's result, a forged result for an id never used, then this call's.
        assert!(!call.settled_by(&result("t3"), true));
        assert!(!call.settled_by(&result("t9"), true));
        assert!(
            !call.settled_by(&result("t1"), true),
            "t1 was settled before"
        );
        assert!(call.settled_by(&result("t2"), true));
        // A tool use written after the watch began (the transcript lagged) counts too.
        let mut late = ThisCall::new("Bash", &input);
        assert!(!late.settled_by(&tool_use("t4", "make"), true));
        assert!(late.settled_by(&result("t4"), true));
    }
}
