//! `/tokens`: named tokens — who else may reach this server, and how far. Making one shows
//! its secret once (only its hash is kept); the table never shows a secret. Revoking asks
//! first, since whatever holds the token stops working at once.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::{CreatedToken, ErrorBody, PhoneLogin, Scope, TokenInfo};
use crate::ui::browser;
use crate::ui::json;
use crate::ui::sidebar::PageLayout;
use crate::ui::when::{Precision, When};

/// The scopes a token may have, least trusted first (the form's default is the first), each
/// with what it is for, in one line.
pub const SCOPES: [(Scope, &str); 4] = [
    (
        Scope::Gates,
        "an outside agent's hook: may open and wait for its own gates, never answer",
    ),
    (
        Scope::View,
        "read sessions, the inbox and the audit, e.g. a dashboard; answers nothing, changes nothing",
    ),
    (
        Scope::Approve,
        "read and answer cards, e.g. your phone; no config, tokens or messages",
    ),
    (
        Scope::Admin,
        "everything the startup token may do, tokens and config included",
    ),
];

/// The one-line explanation of a scope (empty for one this build does not know).
pub fn scope_help(scope: Option<Scope>) -> &'static str {
    SCOPES
        .iter()
        .find(|(known, _)| Some(*known) == scope)
        .map_or("", |(_, help)| *help)
}

/// Adds a token to the table (replacing one of the same name), keeping it sorted by name as
/// the server lists it.
fn insert_sorted(rows: &mut Vec<TokenInfo>, token: TokenInfo) {
    rows.retain(|t| t.name != token.name);
    let at = rows.partition_point(|t| t.name < token.name);
    rows.insert(at, token);
}

#[component]
pub fn TokensPage() -> impl IntoView {
    view! {
        <PageLayout>
            <Tokens/>
        </PageLayout>
    }
}

#[component]
fn Tokens() -> impl IntoView {
    Effect::new(|_| browser::set_page_title("Tokens — Countersign"));
    let tokens = json::resource(|| (), |_| api::list_tokens());
    view! {
        <header class="page-header">
            <h1>"Tokens"</h1>
            <p class="muted">"Named credentials for your phone, scripts and outside agents' hooks, each limited to its scope."</p>
        </header>
        <div class="page-body">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match tokens.await {
                        Ok(list) => view! { <TokensBody list/> }.into_any(),
                        Err(err) => view! { <p class="error" role="alert">{api::error_message(&err)}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </div>
    }
}

/// The form, the secret just made (if any) and the table, sharing the rows.
#[component]
fn TokensBody(list: Vec<TokenInfo>) -> impl IntoView {
    let rows = RwSignal::new(list);
    let created = RwSignal::new(None::<CreatedToken>);
    view! {
        <CreateForm rows created/>
        {move || created.get().map(|token| view! { <NewSecret token created/> })}
        <TokensTable rows/>
    }
}

#[component]
fn CreateForm(
    rows: RwSignal<Vec<TokenInfo>>,
    created: RwSignal<Option<CreatedToken>>,
) -> impl IntoView {
    let fields = CreateFields::new();
    let CreateFields {
        name,
        scope,
        busy,
        error,
    } = fields;
    let submit = submit_create(fields, rows, created);
    view! {
        <form class="token-form" data-testid="token-form" on:submit=submit>
            <h2>"New token"</h2>
            <div class="token-fields">
                <label class="field">
                    <span>"Name"</span>
                    <input type="text" data-testid="token-name" required maxlength="64"
                        autocomplete="off" spellcheck="false" placeholder="e.g. phone or claude-hook"
                        prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
                </label>
                <label class="field">
                    <span>"Scope"</span>
                    <select data-testid="token-scope" prop:value=move || scope.get()
                        on:change=move |ev| scope.set(event_target_value(&ev))>
                        {SCOPES.into_iter().map(|(known, help)| (known.as_str(), help)).map(|(value, help)| view! {
                            <option value=value title=help selected=move || scope.get() == value>{value}</option>
                        }).collect_view()}
                    </select>
                </label>
                <button type="submit" class="primary" data-testid="create-token" disabled=move || busy.get()>
                    {move || if busy.get() { "Creating…" } else { "Create token" }}
                </button>
            </div>
            <ScopeHelp scope/>
            {move || error.get().map(|err| view! {
                <p class="error" role="alert" data-testid="token-error" data-code=err.error.code.as_str().to_owned()>
                    {api::error_message(&err)}
                </p>
            })}
        </form>
    }
}

/// The new-token form's fields and progress, shared by its inputs and its submit.
#[derive(Clone, Copy)]
struct CreateFields {
    name: RwSignal<String>,
    scope: RwSignal<String>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<ErrorBody>>,
}

impl CreateFields {
    /// An empty name, the first scope, nothing sent.
    fn new() -> Self {
        Self {
            name: RwSignal::new(String::new()),
            scope: RwSignal::new(SCOPES[0].0.as_str().to_owned()),
            busy: RwSignal::new(false),
            error: RwSignal::new(None::<ErrorBody>),
        }
    }
}

/// The form's submit: one request at a time; the new token joins the list and its secret
/// goes on screen, or the server's problem is shown.
fn submit_create(
    fields: CreateFields,
    rows: RwSignal<Vec<TokenInfo>>,
    created: RwSignal<Option<CreatedToken>>,
) -> impl Fn(leptos::ev::SubmitEvent) + Copy + 'static {
    let CreateFields {
        name,
        scope,
        busy,
        error,
    } = fields;
    move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        // A secret still on screen goes: only the newest is shown.
        created.set(None);
        let (wanted, scope) = (name.get_untracked(), scope.get_untracked());
        spawn_local(async move {
            match api::create_token(wanted, scope).await {
                Ok(token) => {
                    rows.try_update(|rows| insert_sorted(rows, listed(&token)));
                    name.try_set(String::new());
                    created.try_set(Some(token));
                }
                Err(err) => {
                    error.try_set(Some(err));
                }
            }
            busy.try_set(false);
        });
    }
}

/// The list's row of a token just made (never used yet).
fn listed(token: &CreatedToken) -> TokenInfo {
    TokenInfo {
        name: token.name.clone(),
        scope: token.scope.clone(),
        created_at: token.created_at.clone(),
        last_used_at: None,
        agents: Vec::new(),
        owner: token.owner.clone(),
    }
}

/// What each scope allows, the chosen one marked.
#[component]
fn ScopeHelp(scope: RwSignal<String>) -> impl IntoView {
    view! {
        <ul class="scope-help">
            {SCOPES.into_iter().map(|(known, help)| (known.as_str(), help)).map(|(value, help)| view! {
                <li class:chosen=move || scope.get() == value data-scope=value>
                    <strong>{value}</strong>" — "{help}
                </li>
            }).collect_view()}
        </ul>
    }
}

/// The secret of the token just made: shown this once, read-only, with Copy.
#[component]
fn NewSecret(token: CreatedToken, created: RwSignal<Option<CreatedToken>>) -> impl IntoView {
    const FIELD: &str = "new-token-secret";
    let copied = RwSignal::new(None::<bool>);
    let copy = move |_| copied.set(Some(browser::copy_field(FIELD)));
    let copy_label = move || match copied.get() {
        None => "Copy",
        Some(true) => "Copied",
        Some(false) => "Copy failed: select and copy it",
    };
    let secret = token.token.clone();
    let phone = (token.scope.known() == Some(Scope::Approve)).then(|| {
        let secret = token.token.clone();
        view! { <PhoneLink secret/> }
    });
    let os_user_warning = token.os_user_warning.clone().map(|warning| {
        view! { <p class="error" role="alert" data-testid="token-os-user-warning">{warning}</p> }
    });
    view! {
        <div class="new-secret" data-testid="new-secret" role="status">
            <p>
                <strong>{format!("Token “{}” created, scope {}.", token.name, token.scope.as_str())}</strong>
                " Copy its secret now: it will not be shown again."
            </p>
            <div class="secret-row">
                <input id=FIELD type="text" readonly data-testid="token-secret" aria-label="The new token's secret"
                    autocomplete="off" spellcheck="false" prop:value=secret/>
                <button type="button" data-testid="copy-secret" on:click=copy>{copy_label}</button>
            </div>
            {phone}
            {os_user_warning}
            <p class="muted">
                "Only its SHA-256 is kept here, so a lost secret cannot be shown again: revoke the token and make another."
            </p>
            <button type="button" class="small" data-testid="secret-done" on:click=move |_| created.set(None)>
                "Done"
            </button>
        </div>
    }
}

/// A phone's way in to the `approve` token just made: a login link (a code good once for 15
/// minutes, never the secret) and a QR code of exactly that link, asked of the server once,
/// while the secret is on screen; shown this once, like the secret.
#[component]
fn PhoneLink(secret: String) -> impl IntoView {
    const FIELD: &str = "phone-login-link";
    let origin = browser::page_origin();
    let unreachable = is_local_only(&origin);
    let made = ask_phone_login(secret, origin);
    let copied = RwSignal::new(None::<bool>);
    let copy_label = move || match copied.get() {
        None => "Copy link",
        Some(true) => "Copied",
        Some(false) => "Copy failed: select and copy it",
    };
    // The code and the link hold their place while the server makes them: nothing below moves
    // when they arrive.
    let link = move || {
        made.with(|m| {
            m.as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|p| p.link.clone())
        })
    };
    let shown = move || {
        view! {
            <div class="phone-qr"><PhoneQr made/></div>
            <div class="secret-row">
                <input id=FIELD type="text" readonly data-testid="phone-login-link" aria-label="The phone's login link"
                    autocomplete="off" spellcheck="false" prop:value=move || link().unwrap_or_default()/>
                <button type="button" data-testid="copy-phone-link" disabled=move || link().is_none()
                    on:click=move |_| copied.set(Some(browser::copy_field(FIELD)))>{copy_label}</button>
            </div>
        }
    };
    view! {
        <div class="phone-login" data-testid="phone-login">
            <p>
                <strong>"Open it on your phone: "</strong>
                "scan the code with the phone's camera, or open the link there. It logs the phone in                  with this token, once, within 15 minutes; it will not be shown again."
            </p>
            {shown}
            {unreachable.then(|| view! {
                <p class="muted" data-testid="phone-login-local">
                    "This page is open at a loopback address, which a phone cannot reach: open Countersign                      at this computer's network address to make a link a phone can open."
                </p>
            })}
        </div>
    }
}

/// Asks the server once for the phone's login link and its QR code; `None` until it answers.
fn ask_phone_login(secret: String, origin: String) -> RwSignal<Option<Result<PhoneLogin, String>>> {
    let made = RwSignal::new(None::<Result<PhoneLogin, String>>);
    Effect::new(move |_| {
        let (secret, origin) = (secret.clone(), origin.clone());
        spawn_local(async move {
            let answer = api::phone_login(secret, origin).await;
            made.try_set(Some(answer.map_err(|err| api::error_message(&err))));
        });
    });
    made
}

/// The QR code of the login link, or a placeholder while it is made, or the server's problem.
#[component]
fn PhoneQr(made: RwSignal<Option<Result<PhoneLogin, String>>>) -> impl IntoView {
    move || match made.get() {
        None => view! { <p class="loading">"Making a login link…"</p> }.into_any(),
        Some(Err(problem)) => {
            view! { <p class="error" role="alert" data-testid="phone-login-error">{problem}</p> }
                .into_any()
        }
        Some(Ok(PhoneLogin { link, qr_svg })) => view! {
            <div class="phone-qr-code" data-testid="phone-qr" data-link=link role="img"
                aria-label="QR code of the phone's login link" inner_html=qr_svg></div>
        }
        .into_any(),
    }
}

/// Whether `origin` names this computer only (`localhost`, `127.0.0.1`, `[::1]`).
fn is_local_only(origin: &str) -> bool {
    let host = origin
        .split_once("://")
        .map_or(origin, |(_, rest)| rest)
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or_else(
            || origin.split_once("://").map_or(origin, |(_, rest)| rest),
            |(host, _)| host,
        );
    host == "localhost" || host.starts_with("127.") || host == "[::1]"
}

#[component]
fn TokensTable(rows: RwSignal<Vec<TokenInfo>>) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    view! {
        {move || error.get().map(|e| view! { <p class="error" role="alert" data-testid="tokens-error">{e}</p> })}
        <Show
            when=move || !rows.read().is_empty()
            fallback=|| view! {
                <div class="empty-state" data-testid="tokens-empty">
                    <p>"No named tokens."</p>
                    <p class="muted">"The startup token and this browser may do everything; make a token to give less."</p>
                </div>
            }
        >
            <div class="table-wrap">
                <table class="data-table tokens-table">
                    <thead>
                        <tr>
                            <th scope="col">"Name"</th>
                            <th scope="col">"Scope"</th>
                            <th scope="col">"Owner"</th>
                            <th scope="col">"Created"</th>
                            <th scope="col">"Last used"</th>
                            <th scope="col"><span class="sr-only">"Actions"</span></th>
                        </tr>
                    </thead>
                    <tbody>
                        <For each=move || rows.get() key=|t| t.name.clone() let:token>
                            <TokenRow token rows error/>
                        </For>
                    </tbody>
                </table>
            </div>
        </Show>
    }
}

/// The agents' names a token holds: another token opening gates under one is refused.
fn agents_held(token: &TokenInfo) -> Option<impl IntoView + use<>> {
    (!token.agents.is_empty()).then(|| {
        let names = token.agents.join(", ");
        view! {
            <span class="token-agents" data-testid="token-agents"
                title="Outside agents' names this token opened gates as first: no other token may use them until it is revoked">
                "Agent: " {names}
            </span>
        }
    })
}

/// What Revoke asks: what stops, and what its agents were given that ends with it.
fn revoke_question(token: &TokenInfo) -> String {
    let name = &token.name;
    match token.agents.is_empty() {
        true => format!("Revoke {name}? Whatever holds it stops working at once."),
        false => format!(
            "Revoke {name}? Whatever holds it stops working at once, and what {} was given ends with it: its grants and the reviewer's trust in it.",
            token.agents.join(", ")
        ),
    }
}

#[component]
fn TokenRow(
    token: TokenInfo,
    rows: RwSignal<Vec<TokenInfo>>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let confirming = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let name = token.name.clone();
    let revoke = revoke_token(name.clone(), rows, error, confirming, busy);
    let last_used = match token.last_used_at.clone() {
        Some(at) => view! { <When at precision=Precision::Minute/> }.into_any(),
        None => "never".into_any(),
    };
    let help = scope_help(token.scope.known());
    let agents = agents_held(&token);
    let question = revoke_question(&token);
    view! {
        <tr data-testid="token-row" data-token=name.clone()>
            <td data-label="Name">
                <code data-testid="token-name-cell">{name.clone()}</code>
                {agents}
            </td>
            <td data-label="Scope" data-testid="token-scope-cell" title=help data-scope=token.scope.to_string()>{token.scope.to_string()}</td>
            <td data-label="Owner" data-testid="token-owner-cell">{token.owner.clone()}</td>
            <td class="when" data-label="Created"><When at=token.created_at.clone() precision=Precision::Minute/></td>
            <td class="when" data-label="Last used" data-testid="token-last-used">{last_used}</td>
            <td class="token-actions row-actions">
                <Show
                    when=move || confirming.get()
                    fallback=move || view! {
                        <button type="button" class="danger" data-testid="revoke-token"
                            on:click=move |_| confirming.set(true)>"Revoke"</button>
                    }
                >
                    <span class="confirm" role="group" aria-label="Confirm revoking">
                        <span class="confirm-question">{question.clone()}</span>
                        <button type="button" class="danger" data-testid="confirm-revoke"
                            disabled=move || busy.get() on:click=revoke.clone()>
                            {move || if busy.get() { "Revoking…" } else { "Revoke" }}
                        </button>
                        <button type="button" data-testid="cancel-revoke" disabled=move || busy.get()
                            on:click=move |_| confirming.set(false)>"Keep"</button>
                    </span>
                </Show>
            </td>
        </tr>
    }
}

/// Revokes the token `name`: one request at a time; the row goes once the server agrees,
/// else the question closes and the problem is shown above the table.
fn revoke_token(
    name: String,
    rows: RwSignal<Vec<TokenInfo>>,
    error: RwSignal<Option<String>>,
    confirming: RwSignal<bool>,
    busy: RwSignal<bool>,
) -> impl Fn(leptos::ev::MouseEvent) + Clone + Send + Sync + 'static {
    move |_| {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        let name = name.clone();
        spawn_local(async move {
            match api::revoke_token(name.clone()).await {
                Ok(()) => {
                    rows.try_update(|rows| rows.retain(|t| t.name != name));
                }
                Err(err) => {
                    busy.try_set(false);
                    confirming.try_set(false);
                    error.try_set(Some(api::error_message(&err)));
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> TokenInfo {
        TokenInfo {
            name: name.to_owned(),
            scope: Scope::Gates.into(),
            created_at: "2026-01-05T09:14:03.512Z".into(),
            last_used_at: None,
            agents: Vec::new(),
            owner: crate::protocol::TOKEN_OWNER_ADMIN.to_owned(),
        }
    }

    #[test]
    fn every_scope_the_server_knows_is_explained() {
        let names: Vec<&str> = SCOPES.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["gates", "view", "approve", "admin"]);
        assert!(scope_help(Some(Scope::View)).contains("answers nothing"));
        assert!(scope_help(Some(Scope::Approve)).contains("your phone"));
        assert!(scope_help(Some(Scope::Gates)).contains("never answer"));
        assert_eq!(scope_help(None), "");
    }

    #[test]
    fn a_loopback_page_is_told_a_phone_cannot_reach_it() {
        for local in [
            "http://localhost:7411",
            "http://127.0.0.1:7411",
            "http://[::1]:7411",
            "http://localhost",
        ] {
            assert!(is_local_only(local), "{local}");
        }
        for lan in [
            "http://192.168.1.20:7411",
            "https://box.lan",
            "http://[fe80::1]:7411",
        ] {
            assert!(!is_local_only(lan), "{lan}");
        }
    }

    #[test]
    fn a_new_token_takes_its_place_by_name_and_replaces_a_namesake() {
        let mut rows = vec![info("a"), info("m")];
        insert_sorted(&mut rows, info("k"));
        insert_sorted(&mut rows, info("z"));
        insert_sorted(&mut rows, info("a"));
        let names: Vec<&str> = rows.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "k", "m", "z"]);
    }
}
