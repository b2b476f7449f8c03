//! `/rules`: every grant Allow always made, built-in agent's and outside agents' alike — tool,
//! pattern, scope, source, when and from which approval, uses (and how many are left), last
//! use, expiry — each with a Revoke button. A grant that lapsed (used up, expired) stays
//! listed for a while, greyed, saying why it no longer answers.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::{ApprovalId, Rule, RuleId, RuleLapse, RuleScope};
use crate::ui::browser;
use crate::ui::gates::ClientId;
use crate::ui::json;
use crate::ui::sidebar::{PageLayout, PageSessions};
use crate::ui::when::{AgoAndClock, Precision, When};

#[component]
pub fn RulesPage() -> impl IntoView {
    view! {
        <PageLayout>
            <Rules/>
        </PageLayout>
    }
}

#[component]
fn Rules() -> impl IntoView {
    provide_context(ClientId::new());
    Effect::new(|_| browser::set_page_title("Rules — Countersign"));
    let rules = json::resource(|| (), |_| api::list_rules());
    view! {
        <header class="page-header">
            <h1>"Rules"</h1>
            <p class="muted">"Calls these rules match run without asking, until a rule runs out of uses or time. Revoke one and its calls ask again."</p>
        </header>
        <div class="page-body">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match rules.await {
                        Ok(list) => view! { <RulesTable list/> }.into_any(),
                        Err(err) => view! { <p class="error" role="alert">{api::error_message(&err)}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </div>
    }
}

#[component]
fn RulesTable(list: Vec<Rule>) -> impl IntoView {
    let rows = RwSignal::new(list);
    let error = RwSignal::new(None::<String>);
    view! {
        {move || error.get().map(|e| view! { <p class="error" role="alert" data-testid="rules-error">{e}</p> })}
        <Show
            when=move || !rows.read().is_empty()
            fallback=|| view! {
                <div class="empty-state" data-testid="rules-empty">
                    <p>"No standing rules."</p>
                    <p class="muted">"Choose “Always allow” on an approval card to create one."</p>
                </div>
            }
        >
            <div class="table-wrap">
                <table class="data-table rules-table">
                    <thead>
                        <tr>
                            <th scope="col">"Tool"</th>
                            <th scope="col">"Pattern"</th>
                            <th scope="col">"Scope"</th>
                            <th scope="col">"Source"</th>
                            <th scope="col">"Created"</th>
                            <th scope="col" class="num">"Uses"</th>
                            <th scope="col">"Last used"</th>
                            <th scope="col">"Expires"</th>
                            <th scope="col"><span class="sr-only">"Actions"</span></th>
                        </tr>
                    </thead>
                    <tbody>
                        <For each=move || rows.get() key=|r| r.id.clone() let:rule>
                            <RuleRow rule rows error/>
                        </For>
                    </tbody>
                </table>
            </div>
        </Show>
    }
}

#[component]
fn RuleRow(
    rule: Rule,
    rows: RwSignal<Vec<Rule>>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let busy = RwSignal::new(false);
    let id = rule.id.clone();
    let revoke = revoke_rule(id.clone(), rows, error, busy);
    let scope = scope_view(&rule);
    let from = rule.created_by_approval.as_ref().map(ApprovalId::as_str).map(|approval| {
        let short: String = approval.chars().take(8).collect();
        view! { <span class="muted sub" title=approval.to_owned()>{format!("from approval {short}")}</span> }
    });
    let last_used = match rule.last_used_at.clone() {
        Some(at) => view! { <AgoAndClock at/> }.into_any(),
        None => "never".into_any(),
    };
    let lapsed = rule.lapsed.map(<&'static str>::from);
    view! {
        <tr data-testid="rule-row" data-rule-id=id.clone() data-lapsed=lapsed class:lapsed=lapsed.is_some()>
            // A pattern came from an agent's call: shown as `crate::shown` writes it.
            <td class="tool" data-label="Tool"><code>{crate::shown::line(&rule.tool)}</code></td>
            <td class="pattern" data-label="Pattern">
                <code data-testid="rule-pattern-cell">{crate::shown::text(&rule.pattern)}</code>
                {lapse_view(&rule)}
            </td>
            <td data-label="Scope" data-scope=rule.scope.as_str()>{scope}</td>
            <td data-label="Source" data-testid="rule-source">{source_text(&rule)}</td>
            <td class="when" data-label="Created"><When at=rule.created_at.clone() precision=Precision::Minute/> {from}</td>
            <td class="num" data-label="Uses" data-testid="rule-uses">{uses_text(&rule)}</td>
            <td class="when" data-label="Last used">{last_used}</td>
            <td class="when" data-label="Expires" data-testid="rule-expires">{expiry_view(&rule)}</td>
            <td class="row-actions">
                {crate::ui::viewer::Viewer::get().admin.then(|| view! {
                    <button type="button" class="danger" data-testid="revoke-rule" disabled=move || busy.get()
                        on:click=revoke>
                        {move || if busy.get() { "Revoking…" } else { "Revoke" }}
                    </button>
                })}
            </td>
        </tr>
    }
}

/// Uses so far; with a limit, how many are left (`3 · 7 left`).
fn uses_text(rule: &Rule) -> String {
    match rule.max_uses {
        Some(max) => format!("{} · {} left", rule.uses, max.saturating_sub(rule.uses)),
        None => rule.uses.to_string(),
    }
}

/// Who made the grant: the built-in agent, or the outside agent whose session did.
fn source_text(rule: &Rule) -> String {
    match rule.source.as_deref() {
        Some(source) => crate::ui::outside::source_label(source),
        None => "built-in agent".to_owned(),
    }
}

/// Why a lapsed grant no longer answers calls: "used up: 10 of 10 uses", "expired".
fn lapse_view(rule: &Rule) -> Option<AnyView> {
    let why = match rule.lapsed? {
        RuleLapse::UsedUp => format!(
            "used up: {} of {} uses",
            rule.uses,
            rule.max_uses.unwrap_or(rule.uses)
        ),
        RuleLapse::Expired => "expired".to_owned(),
    };
    Some(view! { <span class="sub lapse-why" data-testid="rule-lapse">{why}</span> }.into_any())
}

/// When the grant ends (or ended): its expiry, "expired 3 min ago · 14:02", or "never".
fn expiry_view(rule: &Rule) -> AnyView {
    match (rule.expires_at.clone(), rule.lapsed) {
        (Some(at), Some(RuleLapse::Expired)) => {
            view! { <span>"expired " <AgoAndClock at/></span> }.into_any()
        }
        (Some(at), _) => view! { <When at precision=Precision::Minute/> }.into_any(),
        (None, _) => "never".into_any(),
    }
}

/// Revokes the rule `id`: one request at a time; its row goes once the server agrees, else
/// the problem is shown above the table.
fn revoke_rule(
    id: RuleId,
    rows: RwSignal<Vec<Rule>>,
    error: RwSignal<Option<String>>,
    busy: RwSignal<bool>,
) -> impl Fn(leptos::ev::MouseEvent) + 'static {
    let client = use_context::<ClientId>().unwrap_or_default();
    move |_| {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        let id = id.clone();
        let client_id = client.get_untracked();
        spawn_local(async move {
            match api::revoke_rule(id.clone(), client_id).await {
                Ok(()) => {
                    rows.try_update(|rows| rows.retain(|r| r.id != id));
                }
                Err(err) => {
                    busy.try_set(false);
                    error.try_set(Some(api::error_message(&err)));
                }
            }
        });
    }
}

/// Where a rule applies: its session (linked, by title once the sidebar knows it) or every
/// session.
fn scope_view(rule: &Rule) -> AnyView {
    let sessions = use_context::<PageSessions>();
    match (&rule.scope, &rule.session_id) {
        (RuleScope::Session, Some(sid)) => {
            let href = format!("/sessions/{sid}");
            let label = {
                let sid = sid.clone();
                move || match sessions.and_then(|s| s.title(sid.as_str())) {
                    Some(title) => format!("this session: {title}"),
                    None => "this session".to_owned(),
                }
            };
            view! { <a href=href data-testid="rule-session">{label}</a> }.into_any()
        }
        (RuleScope::Session, None) => view! { <span>"this session"</span> }.into_any(),
        (RuleScope::Workspace, _) => view! { <span>"every session"</span> }.into_any(),
    }
}
