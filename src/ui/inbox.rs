//! `/inbox`: every pending gate across sessions, oldest first, each an approval card that can
//! be decided in place, with a link to its session. The list is fetched again whenever the
//! server's change stream says a gate opened or resolved (see [`PendingGates`]), so a card
//! answered here or anywhere else leaves as soon as the answer is in.

use leptos::prelude::*;

use crate::api;
use crate::protocol::{ApprovalRequest, ApprovalRequestBody};
use crate::ui::browser;
use crate::ui::card::{ApprovalCard, CardPlace};
use crate::ui::gates::{self, CardBus, ClientId};
use crate::ui::json;
use crate::ui::outside::SessionSource;
use crate::ui::sidebar::{PageLayout, PageSessions, PendingGates};
use crate::ui::transcript::GateItem;
use crate::ui::when::AgoAndClock;

#[component]
pub fn InboxPage() -> impl IntoView {
    view! {
        <PageLayout>
            <Inbox/>
        </PageLayout>
    }
}

#[component]
fn Inbox() -> impl IntoView {
    let pending_gates = expect_context::<PendingGates>();
    provide_context(ClientId::new());
    provide_context(CardPlace::Inbox);
    provide_context(gates::ConnectionHealed(healed_count(pending_gates).into()));
    // The first list comes with the page (rendered on the server, answerable by its forms
    // before the script loads); the change stream keeps it current from then on.
    let first = json::resource(|| (), |()| api::pending_approvals());
    let gates = move || {
        pending_gates
            .gates
            .get()
            .or_else(|| first.get().and_then(Result::ok))
    };
    let bus = CardBus::new();
    provide_context(bus);

    let now_ms = crate::ui::when::clock();
    let pending = Memo::new(move |_| {
        bus.still_pending(
            gates()
                .iter()
                .flatten()
                .map(|g| g.body.clone())
                .collect::<Vec<ApprovalRequestBody>>(),
        )
    });
    // a / e / d / A act on the first (or the j/k-selected) card, as in the chat.
    gates::install_keyboard(bus, pending);
    title_with_count(pending);

    let state = move || {
        list_state(
            gates().map(|g| g.len()),
            pending_gates.error.read().is_some(),
        )
    };
    view! {
        <header class="page-header">
            <h1>"Inbox"</h1>
            <p class="muted">"Every approval waiting, across sessions, oldest first."</p>
        </header>
        <div class="page-body inbox">
            {move || pending_gates.error.get().map(|e| view! {
                <p class="error" role="alert" data-testid="inbox-error">{format!("Could not refresh: {e}")}</p>
            })}
            <Suspense fallback=|| view! { <p class="loading" data-testid="inbox-loading">"Loading…"</p> }>
                {state}
                <For each=move || gates().unwrap_or_default() key=|g| g.body.approval_id.clone() let:gate>
                    <InboxItem gate now_ms/>
                </For>
            </Suspense>
        </div>
    }
}

/// The tab's title says how many cards wait, so a tab in the background still tells.
fn title_with_count(pending: Memo<Vec<ApprovalRequestBody>>) {
    Effect::new(move |_| {
        browser::set_title(&match pending.read().len() {
            0 => "Inbox — Countersign".to_owned(),
            n => format!("({n}) Inbox — Countersign"),
        })
    });
}

/// Counts the times the list came back after it could not be refreshed (a card's "could not
/// send" clears on it).
fn healed_count(pending: PendingGates) -> RwSignal<u64> {
    let healed = RwSignal::new(0u64);
    Effect::new(move |was_failing: Option<bool>| {
        let failing = pending.error.read().is_some();
        if !failing && was_failing == Some(true) {
            healed.update(|n| *n += 1);
        }
        failing
    });
    healed
}

/// What the list says when it has no card to show: still loading, or nothing waiting.
fn list_state(count: Option<usize>, failing: bool) -> Option<AnyView> {
    match count {
        None if !failing => {
            Some(view! { <p class="loading" data-testid="inbox-loading">"Loading…"</p> }.into_any())
        }
        Some(0) => Some(
            view! {
                <div class="empty-state" data-testid="inbox-empty">
                    <p>"Nothing waiting for you."</p>
                    <p class="muted">"Approvals from every session appear here as they open."</p>
                </div>
            }
            .into_any(),
        ),
        _ => None,
    }
}

#[component]
fn InboxItem(gate: ApprovalRequest, now_ms: RwSignal<f64>) -> impl IntoView {
    let sessions = use_context::<PageSessions>();
    let session_id = gate.body.session_id.clone();
    let href = format!("/sessions/{session_id}");
    let session_title = {
        let session_id = session_id.clone();
        move || {
            sessions
                .and_then(|s| s.title(session_id.as_str()))
                .unwrap_or_else(|| "Open session".to_owned())
        }
    };
    // An outside agent's card names its agent, once the session list says which it is.
    let source = {
        let session_id = session_id.clone();
        Signal::derive(move || sessions.and_then(|s| s.source(session_id.as_str())))
    };
    provide_context(SessionSource(source));
    let opened = gate.body.created_at.clone();
    let approval_id = gate.body.approval_id.clone();
    view! {
        <div class="inbox-item" data-testid="inbox-item" data-approval-id=approval_id
            data-session-id=session_id>
            <div class="inbox-meta">
                <a href=href data-testid="inbox-session">{session_title}</a>
                <span class="muted" data-testid="inbox-opened">"opened " <AgoAndClock at=opened/></span>
            </div>
            <ApprovalCard item=GateItem { request: gate.body, resolution: None } now_ms/>
        </div>
    }
}
