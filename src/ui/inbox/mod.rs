//! `/inbox`: every pending gate across sessions, oldest first, as a compact list — one line
//! each (`row.rs`), opened in place on the whole card, moved through with the arrow keys
//! (`keys.rs`), several answered at once by the bulk bar (`bulk.rs`; which cards it may answer,
//! `pickable.rs`). The list is fetched again
//! whenever the server's change stream says a gate opened or resolved (see [`PendingGates`]),
//! so a card answered here or anywhere else leaves as soon as the answer is in.

mod bulk;
mod keys;
pub mod pickable;
mod row;

use leptos::prelude::*;

use crate::api;
use crate::protocol::{ApprovalId, ApprovalRequest, ApprovalRequestBody};
use crate::ui::browser;
use crate::ui::card::{AnsweredHere, CardPlace};
use crate::ui::gates::{self, CardBus, ClientId};
use crate::ui::json;
use crate::ui::sidebar::{PageLayout, PendingGates};
use crate::ui::viewer::Viewer;
use bulk::{InboxBulkBar, Selection};
use row::InboxRow;

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
    // A viewer answers nothing: no boxes to pick cards with, no bar to answer them.
    if Viewer::get().decides {
        provide_context(Selection::new());
    }

    let now_ms = crate::ui::when::clock();
    let pending = still_pending(bus, gates);
    // a / e / d / A act on the first (or the j/k-selected) card, as in the chat.
    gates::install_keyboard(bus, pending);
    title_with_count(pending);
    focus_arrivals(bus, pending);

    let state = move || {
        list_state(
            gates().map(|g| g.len()),
            pending_gates.error.read().is_some(),
        )
    };
    view! {
        <InboxHeader/>
        <div class="page-body inbox">
            {move || pending_gates.error.get().map(|e| view! {
                <p class="error" role="alert" data-testid="inbox-error">{format!("Could not refresh: {e}")}</p>
            })}
            // What came of the cards answered here, once they have left the list.
            <AnsweredHere gates=pending/>
            <Suspense fallback=|| view! { <p class="loading" data-testid="inbox-loading">"Loading…"</p> }>
                {state}
                <ul class="inbox-list" aria-label="Waiting cards" on:keydown=move |ev| on_list_keydown(pending, &ev)>
                    <For each=move || gates().unwrap_or_default() key=|g| (g.body.approval_id.clone(), g.reviewer_concern.is_some()) let:gate>
                        <InboxRow gate now_ms open=starts_open(untrack(|| gates().map_or(0, |g| g.len())))/>
                    </For>
                </ul>
            </Suspense>
            {Viewer::get().decides.then(|| view! { <InboxBulkBar pending/> })}
        </div>
    }
}

/// The page's title and how to move through it.
#[component]
fn InboxHeader() -> impl IntoView {
    view! {
        <header class="page-header">
            <h1>"Inbox"</h1>
            <p class="muted">"Every approval waiting, across sessions, oldest first. ↑/↓ move, Enter opens, Esc closes."</p>
        </header>
    }
}

/// The cards still waiting: the listed gates less those answered here that the stream has
/// not yet reported resolved.
fn still_pending(
    bus: CardBus,
    gates: impl Fn() -> Option<Vec<ApprovalRequest>> + Send + Sync + 'static,
) -> Memo<Vec<ApprovalRequestBody>> {
    Memo::new(move |_| {
        bus.still_pending(
            gates()
                .iter()
                .flatten()
                .map(|g| g.body.clone())
                .collect::<Vec<ApprovalRequestBody>>(),
        )
    })
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

/// Whether a row starts open: a lone card shows whole (there is nothing to compact); with
/// several, each is one line until the person opens it.
pub fn starts_open(rows: usize) -> bool {
    rows == 1
}

fn on_list_keydown(pending: Memo<Vec<ApprovalRequestBody>>, ev: &leptos::ev::KeyboardEvent) {
    #[cfg(feature = "hydrate")]
    keys::on_keydown(
        pending.with_untracked(|p| p.iter().map(|g| g.approval_id.clone()).collect()),
        ev,
    );
    // Only the browser handles keys (the keys module's helpers are used there).
    #[cfg(not(feature = "hydrate"))]
    let _ = (
        pending,
        ev,
        keys::next_row,
        keys::Move::from_key,
        keys::take_open_request,
    );
}

/// Cards that arrive while the page is open: the first of them in the list's order (a batch's
/// first call, not the last card to arrive) takes focus on its line, when focus is free.
fn focus_arrivals(bus: CardBus, pending: Memo<Vec<ApprovalRequestBody>>) {
    Effect::new(move |seen: Option<Vec<ApprovalId>>| {
        let order: Vec<ApprovalId> = pending
            .read()
            .iter()
            .map(|g| g.approval_id.clone())
            .collect();
        let Some(seen) = seen else { return order };
        let fresh: Vec<ApprovalId> = order
            .iter()
            .filter(|id| !seen.contains(id))
            .cloned()
            .collect();
        #[cfg(feature = "hydrate")]
        if !fresh.is_empty() {
            request_animation_frame(move || focus_first_row(bus, pending, &fresh));
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (fresh, bus);
        order
    });
}

/// Focuses the line of the first card just arrived (chosen when the page has drawn them).
#[cfg(feature = "hydrate")]
fn focus_first_row(bus: CardBus, pending: Memo<Vec<ApprovalRequestBody>>, fresh: &[ApprovalId]) {
    let order: Vec<ApprovalId> = pending
        .get_untracked()
        .into_iter()
        .map(|g| g.approval_id)
        .collect();
    let settling = bus.settling.get_untracked();
    let Some(target) = gates::arrival_focus(&order, fresh, settling.as_ref()) else {
        return;
    };
    let kept = settling.as_ref() == Some(&target);
    let settled_row = settling.is_some_and(|s| browser::has_focus(&keys::row_id(&s)));
    if browser::page_hidden()
        || !(browser::focus_is_free() || settled_row)
        || (kept && !browser::focus_is_nowhere())
    {
        return;
    }
    gates::settle(bus, target.clone());
    browser::focus(&keys::row_id(&target));
}
