//! The card's inline panels: edit the arguments (or revise the proposal), deny with a reason,
//! and Allow always with the rule it will create. Values are set with `prop:value`, never as
//! textarea children (Leptos does not escape those on the server).

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::protocol::{ApprovalId, ApprovalRequestBody, DecisionRequest, RuleRequest};
use crate::ui::browser;

/// Which inline panel is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    None,
    Edit,
    Deny,
    Always,
}

/// The arguments a person most likely wants to change, best first: the built-in tools' and
/// outside agents' own spellings (Claude Code's `Bash`/`Edit`/`Write`, opencode's `bash`,
/// Codex's `apply_patch`). The first one the call has is focused; else its first argument.
fn primary_fields(tool: &str) -> &'static [&'static str] {
    match tool.to_ascii_lowercase().as_str() {
        "write_file" | "write" => &["content"],
        "edit_file" | "edit" | "multiedit" => &["new", "new_string", "newString", "edits"],
        "shell" | "bash" => &["command", "cmd"],
        "apply_patch" | "patch" => &["patch", "patchText", "input", "command"],
        "config_set" => &["value"],
        _ => &["command", "path", "file_path", "filePath"],
    }
}

/// Which of `names` the panel focuses.
fn primary_of<'a>(tool: &str, names: &[&'a str]) -> Option<&'a str> {
    primary_fields(tool)
        .iter()
        .find_map(|p| names.iter().find(|n| *n == p).copied())
        .or_else(|| names.first().copied())
}

fn multiline(field: &str, value: &str) -> bool {
    matches!(
        field,
        "content"
            | "old"
            | "new"
            | "proposal"
            | "old_string"
            | "new_string"
            | "oldString"
            | "newString"
            | "patch"
            | "patchText"
            | "edits"
    ) || value.contains('\n')
}

/// Enter in a one-field form confirms it, as the form's button does.
fn on_enter(confirm: impl Fn() + Copy) -> impl Fn(KeyboardEvent) + Copy {
    move |ev: KeyboardEvent| {
        if ev.key() == "Enter" && !ev.is_composing() {
            ev.prevent_default();
            confirm();
        }
    }
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
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let focus_id = format!("edit-{}", request.approval_id);
    {
        let focus_id = focus_id.clone();
        Effect::new(move |_| browser::focus(&focus_id));
    }
    if request.is_proposal() {
        view! { <ReviseText request focus_id panel send/> }.into_any()
    } else {
        view! { <EditFields request focus_id panel send/> }.into_any()
    }
}

/// A decision's edit: the proposal revised as text. An outside `request_approval` may come
/// with no details: its title is revised then.
#[component]
fn ReviseText(
    request: ApprovalRequestBody,
    focus_id: String,
    panel: RwSignal<Panel>,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let start = if request.proposal_md.is_empty() {
        request.title.clone()
    } else {
        request.proposal_md.clone()
    };
    let text = RwSignal::new(start);
    let submit = move || {
        send.run(DecisionRequest {
            decision: Some("edit".into()),
            edits: Some(Value::String(text.get_untracked())),
            ..DecisionRequest::default()
        })
    };
    view! {
        <div class="panel edit-panel" on:keydown=close_on_escape(panel)>
            <label for=focus_id.clone()>"Revise the proposal"</label>
            <textarea id=focus_id data-testid="edit-input" rows="6"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <div class="panel-actions">
                <button type="button" class="primary" data-action="submit-edit" on:click=move |_| submit()>"Approve revised"</button>
                <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
            </div>
        </div>
    }
}

/// The call's arguments, one field each (lists and objects as JSON), sent back as they are
/// edited: a field that was a string stays one; another is read back as JSON where it parses.
fn fields_of(request: &ApprovalRequestBody) -> Vec<Field> {
    let Some(map) = request.args.as_object() else {
        return Vec::new();
    };
    map.iter()
        .map(|(name, value)| Field {
            name: name.clone(),
            text: RwSignal::new(match value {
                Value::String(s) => s.clone(),
                // Lists and objects (MultiEdit's `edits`, Codex's command words) are edited as
                // JSON, laid out to be read.
                Value::Array(_) | Value::Object(_) => {
                    serde_json::to_string_pretty(value).unwrap_or_default()
                }
                other => other.to_string(),
            }),
            was_string: value.is_string(),
        })
        .collect()
}

/// The edited arguments as the decision carries them.
fn edited_args(fields: &[Field]) -> Value {
    let mut edits = Map::new();
    for field in fields {
        let text = field.text.get_untracked();
        let value = if field.was_string {
            Value::String(text)
        } else {
            crate::ui::json::from_str(&text).unwrap_or(Value::String(text))
        };
        edits.insert(field.name.clone(), value);
    }
    Value::Object(edits)
}

/// A tool call's edit: each argument in a field of its own, the one that matters focused.
#[component]
fn EditFields(
    request: ApprovalRequestBody,
    focus_id: String,
    panel: RwSignal<Panel>,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let fields = fields_of(&request);
    let for_submit = fields.clone();
    let submit = move || {
        send.run(DecisionRequest {
            decision: Some("edit".into()),
            edits: Some(edited_args(&for_submit)),
            ..DecisionRequest::default()
        })
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    let primary = primary_of(&request.tool, &names).map(str::to_owned);
    let inputs = fields
        .into_iter()
        .map(|field| {
            let is_primary = primary.as_deref() == Some(field.name.as_str());
            let testid = if is_primary {
                "edit-input".to_owned()
            } else {
                format!("edit-input-{}", field.name)
            };
            let id = if is_primary {
                focus_id.clone()
            } else {
                format!("{focus_id}-{}", field.name)
            };
            field_input(field, id, testid)
        })
        .collect_view();
    view! {
        <div class="panel edit-panel" on:keydown=close_on_escape(panel)>
            {inputs}
            <div class="panel-actions">
                <button type="button" class="primary" data-action="submit-edit" on:click=move |_| submit()>"Approve edited"</button>
                <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
            </div>
        </div>
    }
}

/// One argument's field: a text area for long or multi-line values, else one line.
fn field_input(field: Field, id: String, testid: String) -> impl IntoView {
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
}

#[component]
pub fn DenyPanel(
    approval_id: ApprovalId,
    panel: RwSignal<Panel>,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let id = format!("deny-{approval_id}");
    {
        let id = id.clone();
        Effect::new(move |_| browser::focus(&id));
    }
    let reason = RwSignal::new(String::new());
    let submit = move || {
        let text = reason.get_untracked();
        send.run(DecisionRequest {
            decision: Some("deny".into()),
            reason: (!text.trim().is_empty()).then_some(text),
            ..DecisionRequest::default()
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

/// How long a grant made by Allow always lasts: the card's lifetime choices. "This session"
/// and "Always" are scopes (a session's rule, a workspace's rule, neither with an end); the
/// others end by the clock or by a count, in the scope picked beside them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    Session,
    OneHour,
    EightHours,
    TenUses,
    Always,
}

impl Lifetime {
    pub const ALL: [Lifetime; 5] = [
        Lifetime::Session,
        Lifetime::OneHour,
        Lifetime::EightHours,
        Lifetime::TenUses,
        Lifetime::Always,
    ];

    /// The `<option>` value (also the test hook's).
    pub fn value(self) -> &'static str {
        match self {
            Lifetime::Session => "session",
            Lifetime::OneHour => "1h",
            Lifetime::EightHours => "8h",
            Lifetime::TenUses => "10_uses",
            Lifetime::Always => "always",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Lifetime::Session => "This session",
            Lifetime::OneHour => "1 hour",
            Lifetime::EightHours => "8 hours",
            Lifetime::TenUses => "10 uses",
            Lifetime::Always => "Always",
        }
    }

    pub fn from_value(raw: &str) -> Option<Lifetime> {
        Lifetime::ALL.into_iter().find(|l| l.value() == raw)
    }

    /// The scope this lifetime stands for, when it is one.
    fn scope(self) -> Option<&'static str> {
        match self {
            Lifetime::Session => Some("session"),
            Lifetime::Always => Some("workspace"),
            _ => None,
        }
    }

    /// The rule an Allow always with this lifetime asks for, in `scope` unless the lifetime
    /// is itself a scope.
    pub fn rule(self, scope: &str, pattern: String) -> RuleRequest {
        let (expires_in_secs, max_uses) = match self {
            Lifetime::OneHour => (Some(3600), None),
            Lifetime::EightHours => (Some(8 * 3600), None),
            Lifetime::TenUses => (None, Some(10)),
            Lifetime::Session | Lifetime::Always => (None, None),
        };
        RuleRequest {
            scope: Some(self.scope().unwrap_or(scope).to_owned()),
            pattern: Some(pattern),
            expires_in_secs,
            max_uses,
        }
    }
}

#[component]
pub fn AlwaysPanel(
    request: ApprovalRequestBody,
    panel: RwSignal<Panel>,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let id = format!("rule-{}", request.approval_id);
    {
        let id = id.clone();
        Effect::new(move |_| browser::focus(&id));
    }
    let suggested = request.suggested_rule.clone();
    // The field shows the agent's pattern written out (`shown::text`) and sends what it shows
    // read back (`shown::read_back`): nothing raw on the page, and the server refuses a
    // pattern that hides anything.
    let pattern = RwSignal::new(
        suggested
            .as_ref()
            .map(|r| crate::shown::text(&r.pattern))
            .unwrap_or_default(),
    );
    let scope = RwSignal::new("session".to_owned());
    let lifetime = RwSignal::new(Lifetime::Session);
    let submit = move || {
        let pattern = crate::shown::read_back(&pattern.get_untracked());
        send.run(DecisionRequest {
            decision: Some("allow_always".into()),
            rule: Some(
                lifetime
                    .get_untracked()
                    .rule(&scope.get_untracked(), pattern),
            ),
            ..DecisionRequest::default()
        })
    };
    view! {
        <div class="panel always-panel" on:keydown=close_on_escape(panel)>
            <p>"Approve this call, and from now on run matching calls without asking:"</p>
            <div class="rule-preview">
                <code>{crate::shown::line(&request.tool)}</code>
                " · "
                <input id=id data-testid="rule-pattern" type="text" aria-label="Pattern"
                    prop:value=move || pattern.get() on:input=move |ev| pattern.set(event_target_value(&ev))
                    on:keydown=on_enter(submit)/>
                " · "
                <ScopeSelect scope lifetime/>
                " · "
                <LifetimeSelect lifetime scope/>
            </div>
            <p class="muted">"Paths match as globs (docs/*.md); commands match exactly, or by prefix when they end in *."</p>
            <div class="panel-actions">
                <button type="button" class="primary" data-action="submit-always" on:click=move |_| submit()>"Always allow"</button>
                <button type="button" on:click=move |_| panel.set(Panel::None)>"Cancel " <kbd>"Esc"</kbd></button>
            </div>
        </div>
    }
}

/// The scope picker: a scope changed by hand moves a lifetime that is a scope with it.
#[component]
fn ScopeSelect(scope: RwSignal<String>, lifetime: RwSignal<Lifetime>) -> impl IntoView {
    let pick = move |raw: String| {
        if lifetime.get_untracked().scope().is_some() {
            lifetime.set(match raw.as_str() {
                "workspace" => Lifetime::Always,
                _ => Lifetime::Session,
            });
        }
        scope.set(raw);
    };
    view! {
        <select data-testid="rule-scope" aria-label="Scope" prop:value=move || scope.get()
            on:change=move |ev| pick(event_target_value(&ev))>
            <option value="session">"this session"</option>
            <option value="workspace">"every session"</option>
        </select>
    }
}

/// The lifetime picker beside the scope: picking a lifetime that is a scope sets the scope.
#[component]
fn LifetimeSelect(lifetime: RwSignal<Lifetime>, scope: RwSignal<String>) -> impl IntoView {
    let pick = move |raw: String| {
        let picked = Lifetime::from_value(&raw).unwrap_or(Lifetime::Session);
        if let Some(s) = picked.scope() {
            scope.set(s.to_owned());
        }
        lifetime.set(picked);
    };
    let options = Lifetime::ALL
        .into_iter()
        .map(|l| view! { <option value=l.value()>{l.label()}</option> })
        .collect_view();
    view! {
        <select data-testid="rule-lifetime" aria-label="For how long"
            prop:value=move || lifetime.get().value()
            on:change=move |ev| pick(event_target_value(&ev))>
            {options}
        </select>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lifetime_asks_for_its_rule() {
        let rule = |l: Lifetime, scope: &str| {
            let r = l.rule(scope, "echo *".into());
            (r.scope.unwrap_or_default(), r.expires_in_secs, r.max_uses)
        };
        assert_eq!(
            rule(Lifetime::Session, "workspace"),
            ("session".into(), None, None)
        );
        assert_eq!(
            rule(Lifetime::Always, "session"),
            ("workspace".into(), None, None)
        );
        assert_eq!(
            rule(Lifetime::OneHour, "session"),
            ("session".into(), Some(3600), None)
        );
        assert_eq!(
            rule(Lifetime::EightHours, "workspace"),
            ("workspace".into(), Some(28_800), None)
        );
        assert_eq!(
            rule(Lifetime::TenUses, "session"),
            ("session".into(), None, Some(10))
        );
        for l in Lifetime::ALL {
            assert_eq!(Lifetime::from_value(l.value()), Some(l));
        }
    }

    #[test]
    fn the_field_to_change_is_found_in_each_agents_spelling() {
        assert_eq!(primary_of("shell", &["command"]), Some("command"));
        assert_eq!(
            primary_of("Bash", &["command", "description", "timeout"]),
            Some("command")
        );
        assert_eq!(
            primary_of("Edit", &["file_path", "new_string", "old_string"]),
            Some("new_string")
        );
        assert_eq!(
            primary_of("write", &["filePath", "content"]),
            Some("content")
        );
        assert_eq!(
            primary_of("write_file", &["path", "content"]),
            Some("content")
        );
        assert_eq!(primary_of("apply_patch", &["input"]), Some("input"));
        assert_eq!(
            primary_of("mcp__github__create_issue", &["body", "title"]),
            Some("body")
        );
        assert_eq!(primary_of("Bash", &[]), None);
    }
}
