//! The card's inline panels: edit the arguments (or revise the proposal), deny with a reason,
//! and Allow always with the rule it will create. Values are set with `prop:value`, never as
//! textarea children (Leptos does not escape those on the server).

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::protocol::{ApprovalRequestBody, DecisionInput, GateKind};
use crate::ui::browser;

/// Which inline panel is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    None,
    Edit,
    Deny,
    Always,
}

/// The argument a person most likely wants to change.
fn primary_field(tool: &str) -> &'static str {
    match tool {
        "write_file" => "content",
        "edit_file" => "new",
        "shell" => "command",
        "config_set" => "value",
        _ => "path",
    }
}

fn multiline(field: &str, value: &str) -> bool {
    matches!(field, "content" | "old" | "new" | "proposal") || value.contains('\n')
}

fn close_on_escape(panel: RwSignal<Panel>) -> impl Fn(KeyboardEvent) + Copy {
    move |ev: KeyboardEvent| {
        if ev.key() == "Escape" {
            ev.prevent_default();
            panel.set(Panel::None);
        }
    }
}

/// One editable argument: its name, the text in the field, and whether it was a string.
#[derive(Clone)]
struct Field {
    name: String,
    text: RwSignal<String>,
    was_string: bool,
}

#[component]
pub fn EditPanel(
    request: ApprovalRequestBody,
    panel: RwSignal<Panel>,
    send: Callback<DecisionInput>,
) -> impl IntoView {
    let focus_id = format!("edit-{}", request.approval_id);
    {
        let focus_id = focus_id.clone();
        Effect::new(move |_| browser::focus(&focus_id));
    }
    let on_key = close_on_escape(panel);
    if request.kind == GateKind::Decision {
        let text = RwSignal::new(request.proposal_md.clone());
        let submit = move || {
            send.run(DecisionInput {
                decision: "edit".into(),
                edits: Some(Value::String(text.get_untracked())),
                ..DecisionInput::default()
            })
        };
        return view! {
            <div class="panel edit-panel" on:keydown=on_key>
                <label for=focus_id.clone()>"Revise the proposal"</label>
                <textarea id=focus_id data-testid="edit-input" rows="6"
                    prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                <div class="panel-actions">
                    <button type="button" class="primary" data-action="submit-edit" on:click=move |_| submit()>"Approve revised"</button>
                    <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
                </div>
            </div>
        }
        .into_any();
    }
    let primary = primary_field(&request.tool);
    let fields: Vec<Field> = request
        .args
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(name, value)| Field {
                    name: name.clone(),
                    text: RwSignal::new(match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    }),
                    was_string: value.is_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    let for_submit = fields.clone();
    let submit = move || {
        let mut edits = Map::new();
        for field in &for_submit {
            let text = field.text.get_untracked();
            let value = if field.was_string {
                Value::String(text)
            } else {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            };
            edits.insert(field.name.clone(), value);
        }
        send.run(DecisionInput {
            decision: "edit".into(),
            edits: Some(Value::Object(edits)),
            ..DecisionInput::default()
        })
    };
    let has_primary = fields.iter().any(|f| f.name == primary);
    let inputs = fields
        .into_iter()
        .enumerate()
        .map(|(i, field)| {
            let is_primary = field.name == primary || (!has_primary && i == 0);
            let testid = if is_primary { "edit-input".to_owned() } else { format!("edit-input-{}", field.name) };
            let id = if is_primary { focus_id.clone() } else { format!("{focus_id}-{}", field.name) };
            let text = field.text;
            let input = if multiline(&field.name, &text.get_untracked()) {
                view! {
                    <textarea id=id.clone() data-testid=testid rows="5"
                        prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                }
                .into_any()
            } else {
                view! {
                    <input id=id.clone() data-testid=testid type="text"
                        prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))/>
                }
                .into_any()
            };
            view! { <label class="field" for=id><span>{field.name.clone()}</span>{input}</label> }
        })
        .collect_view();
    view! {
        <div class="panel edit-panel" on:keydown=on_key>
            {inputs}
            <div class="panel-actions">
                <button type="button" class="primary" data-action="submit-edit" on:click=move |_| submit()>"Approve edited"</button>
                <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
            </div>
        </div>
    }
    .into_any()
}

#[component]
pub fn DenyPanel(
    approval_id: String,
    panel: RwSignal<Panel>,
    send: Callback<DecisionInput>,
) -> impl IntoView {
    let id = format!("deny-{approval_id}");
    {
        let id = id.clone();
        Effect::new(move |_| browser::focus(&id));
    }
    let reason = RwSignal::new(String::new());
    let submit = move || {
        let text = reason.get_untracked();
        send.run(DecisionInput {
            decision: "deny".into(),
            reason: (!text.trim().is_empty()).then_some(text),
            ..DecisionInput::default()
        })
    };
    let on_key = move |ev: KeyboardEvent| match ev.key().as_str() {
        "Enter" => {
            ev.prevent_default();
            submit();
        }
        "Escape" => {
            ev.prevent_default();
            panel.set(Panel::None);
        }
        _ => {}
    };
    view! {
        <div class="panel deny-panel">
            <label for=id.clone()>"Why? (optional — the agent reads this)"</label>
            <input id=id data-testid="deny-reason" type="text" placeholder="e.g. use b.txt instead"
                prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev)) on:keydown=on_key/>
            <div class="panel-actions">
                <button type="button" class="danger" data-action="submit-deny" on:click=move |_| submit()>"Deny"</button>
                <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
            </div>
        </div>
    }
}

#[component]
pub fn AlwaysPanel(
    request: ApprovalRequestBody,
    panel: RwSignal<Panel>,
    send: Callback<DecisionInput>,
) -> impl IntoView {
    let id = format!("rule-{}", request.approval_id);
    {
        let id = id.clone();
        Effect::new(move |_| browser::focus(&id));
    }
    let suggested = request.suggested_rule.clone();
    let pattern = RwSignal::new(
        suggested
            .as_ref()
            .map(|r| r.pattern.clone())
            .unwrap_or_default(),
    );
    let scope = RwSignal::new("session".to_owned());
    let submit = move || {
        send.run(DecisionInput {
            decision: "allow_always".into(),
            rule_pattern: Some(pattern.get_untracked()),
            rule_scope: Some(scope.get_untracked()),
            ..DecisionInput::default()
        })
    };
    view! {
        <div class="panel always-panel" on:keydown=close_on_escape(panel)>
            <p>"Approve this call, and from now on run matching calls without asking:"</p>
            <div class="rule-preview">
                <code>{request.tool.clone()}</code>
                " · "
                <input id=id data-testid="rule-pattern" type="text" aria-label="Pattern"
                    prop:value=move || pattern.get() on:input=move |ev| pattern.set(event_target_value(&ev))/>
                " · "
                <select data-testid="rule-scope" aria-label="Scope" prop:value=move || scope.get()
                    on:change=move |ev| scope.set(event_target_value(&ev))>
                    <option value="session">"this session"</option>
                    <option value="workspace">"every session"</option>
                </select>
            </div>
            <p class="muted">"Paths match as globs (docs/*.md); commands match exactly, or by prefix when they end in *."</p>
            <div class="panel-actions">
                <button type="button" class="primary" data-action="submit-always" on:click=move |_| submit()>"Always allow"</button>
                <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
            </div>
        </div>
    }
}
