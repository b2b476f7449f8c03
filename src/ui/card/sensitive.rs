//! What a safety-floor card shows of its call: what will be written (or the edit, or the
//! command, whole), with values that look like secrets masked (`shown::secrets`) until the
//! person deliberately reveals them; and what its Approve says it approves. Revealing is this
//! card's alone, never kept, and changes nothing of what is answered (the digest is the card's).

use leptos::prelude::*;
use serde_json::Value;

use super::diff::Diff;
use crate::protocol::{ApprovalRequestBody, FloorDiff, GateKind, GateReason};
use crate::shown::{self, secrets};

/// Whether a card is on the safety floor.
pub(super) fn is_floor(request: &ApprovalRequestBody) -> bool {
    request.reason == GateReason::SafetyFloor
}

/// A string argument of the call.
fn arg<'a>(request: &'a ApprovalRequestBody, name: &str) -> Option<&'a str> {
    request.args.get(name).and_then(Value::as_str)
}

/// What Approve says it approves on a floor card ("Approve writing .env"); plain "Approve"
/// on any other.
pub(super) fn approve_label(request: &ApprovalRequestBody) -> String {
    if !is_floor(request) {
        return "Approve".to_owned();
    }
    let path = arg(request, "path").map(|p| shown::line_within(p, 48));
    match (request.tool.as_str(), path) {
        ("write_file", Some(path)) => format!("Approve writing {path}"),
        ("edit_file", Some(path)) => format!("Approve editing {path}"),
        ("read_file", Some(path)) => format!("Approve reading {path}"),
        ("shell", _) => "Approve running this command".to_owned(),
        _ => "Approve this sensitive call".to_owned(),
    }
}

/// A floor card's arguments as shown before the reveal: a command is shown whole, never
/// masked (a masked stretch of a command could hide what it does, `GH_TOKEN=x rm -rf ~`);
/// every other tool's strings masked.
pub(super) fn shown_args(request: &ApprovalRequestBody) -> Value {
    match masks_values(request) {
        true => masked_args(&request.args),
        false => request.args.clone(),
    }
}

/// Whether a tool's arguments are file content to mask (not a command, shown whole).
fn masks_values(request: &ApprovalRequestBody) -> bool {
    request.tool != "shell"
}

/// The call's arguments with every string masked, for a floor card's Arguments.
pub(super) fn masked_args(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(secrets::mask(text)),
        Value::Array(items) => Value::Array(items.iter().map(masked_args).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| (key.clone(), masked_args(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether anything the card shows of its call is masked, so it offers a reveal.
pub(super) fn holds_masked(request: &ApprovalRequestBody) -> bool {
    is_floor(request)
        && (shown_args(request) != request.args
            || request
                .diff
                .as_deref()
                .is_some_and(|diff| secrets::mask_diff(diff) != diff))
}

/// Text of the call as a floor card shows it: masked unless revealed, then through `shown`.
fn as_shown(text: &str, revealed: bool) -> String {
    match revealed {
        true => shown::text(text),
        false => shown::text(&secrets::mask(text)),
    }
}

/// The parts of a floor card's call a person reads before approving: (label, text).
fn call_parts(request: &ApprovalRequestBody) -> Vec<(String, String)> {
    let path = || arg(request, "path").map(shown::line).unwrap_or_default();
    let part = |label: String, name: &str| arg(request, name).map(|text| (label, text.to_owned()));
    match request.tool.as_str() {
        "write_file" => part(format!("What will be written to {}:", path()), "content")
            .into_iter()
            .collect(),
        "edit_file" => [
            part(format!("Replaces, in {}:", path()), "old"),
            part("With:".to_owned(), "new"),
        ]
        .into_iter()
        .flatten()
        .collect(),
        // Never masked: see `shown_args`.
        "shell" => part("The command, whole:".to_owned(), "command")
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// A floor card's call, masked until revealed, with the reveal itself: a button once the
/// page's script runs, a `<details>` holding the values as written before (or without) it.
#[component]
pub(super) fn FloorCall(request: ApprovalRequestBody, revealed: RwSignal<bool>) -> impl IntoView {
    let parts = call_parts(&request);
    let masks = holds_masked(&request);
    let maskable = masks_values(&request);
    let withheld =
        matches!(request.tool.as_str(), "write_file" | "edit_file") && request.diff.is_none();
    let scripted = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| scripted.set(true));
    let person_view = RwSignal::new(None::<FloorDiff>);
    if withheld {
        ask_for_person_view(&request, person_view);
    }
    let path = arg(&request, "path").map(shown::line).unwrap_or_default();
    let unmasked: String = parts
        .iter()
        .map(|(label, text)| format!("{label}\n{}\n", shown::text(text)))
        .collect();
    let blocks = parts
        .into_iter()
        .map(|(label, text)| {
            view! {
                <p class="card-floor-label">{label}</p>
                <pre class="card-floor-text" data-testid="card-floor-text">
                    {move || as_shown(&text, revealed.get() || !maskable)}
                </pre>
            }
        })
        .collect_view();
    view! {
        <div class="card-floor-call" data-testid="card-floor-call">
            {blocks}
            {withheld.then_some(move || what_changes(&path, person_view.get()))}
            {masks.then(|| view! {
                <button type="button" class="reveal" data-testid="reveal-values"
                    hidden=move || !scripted.get()
                    aria-pressed=move || if revealed.get() { "true" } else { "false" }
                    on:click=move |_| revealed.update(|r| *r = !*r)>
                    {move || if revealed.get() { "Mask values" } else { "Reveal values" }}
                </button>
                <details class="card-reveal-form" hidden=move || scripted.get()>
                    <summary>"Reveal values"</summary>
                    <pre class="card-floor-text">{unmasked.clone()}</pre>
                </details>
            })}
        </div>
    }
}

/// Whether the person's view of the file applies: a built-in agent's floor write or edit.
fn has_person_view(request: &ApprovalRequestBody) -> bool {
    is_floor(request)
        && request.kind == GateKind::Tool
        && matches!(request.tool.as_str(), "write_file" | "edit_file")
}

/// Asks the server once, from the page's script and only on an admin's page, what the call
/// would change in the file as it is now (`api::get_floor_diff`: masked on the server, never
/// part of the card). The server's render keeps the note: the page's HTML never carries what
/// the file holds, only the person's own request for it does.
fn ask_for_person_view(request: &ApprovalRequestBody, into: RwSignal<Option<FloorDiff>>) {
    if !has_person_view(request) {
        return;
    }
    #[cfg(feature = "hydrate")]
    {
        if !crate::ui::viewer::Viewer::current().admin {
            return;
        }
        let (session, approval) = (request.session_id.clone(), request.approval_id.clone());
        Effect::new(move |_| {
            let (session, approval) = (session.clone(), approval.clone());
            leptos::task::spawn_local(async move {
                if let Ok(view) = crate::api::get_floor_diff(session, approval).await {
                    into.set(Some(view));
                }
            });
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = into;
}

/// What the card says of the file now: the masked diff the person asked for, that it is a new
/// file, that it is too large, or (not asked, refused, or not answered) that it is not shown.
fn what_changes(path: &str, view: Option<FloorDiff>) -> AnyView {
    let note = |text: String| {
        view! { <p class="card-floor-note" data-testid="card-floor-note">{text}</p> }.into_any()
    };
    match view {
        Some(FloorDiff {
            applicable: true,
            exists: false,
            ..
        }) => note("A new file.".to_owned()),
        Some(FloorDiff {
            applicable: true,
            too_large: true,
            ..
        }) => note(format!("{path} is too large to show what changes.")),
        Some(FloorDiff {
            applicable: true,
            diff: Some(diff),
            ..
        }) => view! {
            <div class="card-floor-diff" data-testid="card-floor-diff">
                <p class="card-floor-label">{format!("What changes in {path}:")}</p>
                <Diff text=shown::text(&diff)/>
            </div>
        }
        .into_any(),
        _ => note(
            "What the file holds now, if it exists, is not shown: it is on the safety floor."
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ApprovalRequestBody;
    use serde_json::json;

    fn floor_card(tool: &str, args: Value) -> ApprovalRequestBody {
        let mut body: ApprovalRequestBody = serde_json::from_value(json!({
            "approval_id": "a", "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": tool, "class": "edit", "args": {},
            "title": "t", "summary": "s", "reason": "safety_floor",
            "reason_detail": "", "proposal_md": "", "proposal_html": "", "digest": "d",
            "allowed_decisions": ["approve"], "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:30:00Z", "timeout_outcome": "deny"
        }))
        .expect("a request");
        body.args = args;
        body
    }

    #[test]
    fn approve_says_what_it_approves_on_a_floor_card() {
        let write = floor_card("write_file", json!({"path": ".env", "content": "A=1"}));
        assert_eq!(approve_label(&write), "Approve writing .env");
        let run = floor_card("shell", json!({"command": "cat .env"}));
        assert_eq!(approve_label(&run), "Approve running this command");
        let plain = ApprovalRequestBody {
            cwd: None,
            source: None,
            reason: GateReason::Mode,
            ..write
        };
        assert_eq!(approve_label(&plain), "Approve");
    }

    #[test]
    fn a_floor_cards_arguments_are_masked_and_offer_a_reveal() {
        let write = floor_card(
            "write_file",
            json!({"path": ".env", "content": "OPENAI_API_KEY=sk-live-0123456789abcdef\nDEBUG=true"}),
        );
        assert!(holds_masked(&write));
        assert_eq!(
            masked_args(&write.args)["content"],
            "OPENAI_API_KEY=sk-l…def\nDEBUG=true"
        );
        let plain = floor_card(
            "write_file",
            json!({"path": ".env", "content": "DEBUG=true"}),
        );
        assert!(!holds_masked(&plain));
    }

    #[test]
    fn a_floor_command_is_shown_whole_never_masked() {
        // A secret-named variable must not hide what the command goes on to do.
        let run = floor_card(
            "shell",
            json!({"command": "GH_TOKEN=x perl -e 'system(q(rm -rf ~/p))'; echo token; cat .env"}),
        );
        assert_eq!(shown_args(&run), run.args);
        assert!(!holds_masked(&run));
    }
}
