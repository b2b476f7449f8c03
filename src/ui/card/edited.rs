//! What a person's edit changed, where the call is shown after it: the "edited by" marker and
//! the diff from the proposed call to the one that ran (`Resolution::edit_diff`), for the
//! tool row and the resolved card alike.

use leptos::prelude::*;

use serde_json::Value;

use crate::protocol::{ApprovalRequestBody, Resolution};
use crate::shown;
use crate::ui::card::who_answered;
use crate::ui::gates::ClientId;
use crate::ui::when::AgoAndClock;

use super::diff::Diff;

/// `Edited by you · 12:03`, then what changed (folded on a tool row, open on the card).
/// `unchanged`: the edit left the call as proposed (so no diff is missing).
#[component]
pub fn EditedMarker(
    resolution: Resolution,
    unchanged: bool,
    #[prop(optional)] open: bool,
) -> impl IntoView {
    let client = use_context::<ClientId>().unwrap_or_default();
    let who = {
        let resolution = resolution.clone();
        move || who_answered(&resolution, &client.0.get())
    };
    let at = resolution.resolved_at.clone();
    let diff = resolution.edit_diff.as_deref().map(shown::text);
    view! {
        <p class="edited-by" data-testid="edited-by">
            "Edited " {who} " · " <AgoAndClock at/> " — this is what ran"
        </p>
        {match diff {
            Some(text) if !unchanged => view! {
                <details class="edit-diff" data-testid="edit-diff" open=open>
                    <summary>"What the edit changed"</summary>
                    <Diff text/>
                </details>
            }.into_any(),
            _ if unchanged => view! {
                <p class="edit-diff muted" data-testid="edit-diff">"The edit changed nothing."</p>
            }.into_any(),
            // Recorded before answers kept their diff: the arguments below are still the ones
            // that ran.
            _ => ().into_any(),
        }}
    }
}

/// The one-line summary of the call as edited (the card's own summary describes the proposal).
pub fn edited_summary(request: &ApprovalRequestBody, edits: &Value) -> String {
    if request.kind.is_our_tool_call() {
        return crate::ui::transcript::summary(&request.tool, edits);
    }
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| edits.get(*n).and_then(Value::as_str))
            .map(str::to_owned)
    };
    if let Some(command) = field(&["command", "cmd"]) {
        format!("{}: {command}", request.tool)
    } else if let Some(path) = field(&["file_path", "filePath", "path"]) {
        format!("{} {path}", request.tool)
    } else {
        format!("{} (edited)", request.summary)
    }
}

/// Whether an edit left the call as it was proposed.
pub fn edit_unchanged(request: &ApprovalRequestBody, resolution: &Resolution) -> bool {
    match &resolution.edits {
        Some(Value::String(revised)) => revised.trim() == request.proposal_md.trim(),
        Some(edits) => *edits == request.args,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::GateKind;
    use serde_json::json;

    fn request(kind: GateKind, tool: &str) -> ApprovalRequestBody {
        let mut body: ApprovalRequestBody = serde_json::from_value(json!({
            "approval_id": "a", "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": tool, "class": "exec", "args": {"command": "rm -r build"},
            "title": "t", "summary": "Bash: rm -r build", "reason": "mode",
            "reason_detail": "", "proposal_md": "", "proposal_html": "", "digest": "d",
            "allowed_decisions": ["approve"], "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:30:00Z", "timeout_outcome": "deny"
        }))
        .expect("a request");
        body.kind = kind;
        body
    }

    #[test]
    fn the_summary_of_an_edited_call_names_what_ran() {
        let edits = json!({"command": "rm -r build/tmp"});
        assert_eq!(
            edited_summary(&request(GateKind::Tool, "shell"), &edits),
            "shell: rm -r build/tmp"
        );
        assert_eq!(
            edited_summary(&request(GateKind::External, "Bash"), &edits),
            "Bash: rm -r build/tmp"
        );
        assert_eq!(
            edited_summary(&request(GateKind::External, "Odd"), &json!({"x": 1})),
            "Bash: rm -r build (edited)"
        );
    }
}
