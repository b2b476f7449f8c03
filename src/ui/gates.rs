//! What the chat page does around its approval cards: this tab's client id, the keyboard
//! commands, the Approve all / Deny all bar, the tab title and browser notifications.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::{ApprovalRequestBody, DecisionInput};

/// Identifies this browser tab in resolutions, so a card can say "you" or "another tab".
/// Kept in `sessionStorage` (one per tab, surviving reloads); empty on the server and until
/// hydration has run, so the server render and the first browser render agree.
#[derive(Clone, Copy)]
pub struct ClientId(pub RwSignal<String>);

impl ClientId {
    pub fn new() -> Self {
        let id = RwSignal::new(String::new());
        #[cfg(feature = "hydrate")]
        Effect::new(move |_| id.set(crate::ui::browser::tab_id()));
        ClientId(id)
    }

    pub fn get_untracked(&self) -> String {
        self.0.get_untracked()
    }
}

impl Default for ClientId {
    fn default() -> Self {
        Self::new()
    }
}

/// A command for one card, from the keyboard or the bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardCommand {
    Approve,
    Edit,
    Deny,
    AllowAlways,
    Close,
}

/// Routes commands to cards: `(approval_id, command)`; the card clears it when it acts.
#[derive(Clone, Copy)]
pub struct CardBus {
    pub command: RwSignal<Option<(String, CardCommand)>>,
    /// The card the keyboard acts on.
    pub active: RwSignal<Option<String>>,
}

impl CardBus {
    pub fn new() -> Self {
        CardBus {
            command: RwSignal::new(None),
            active: RwSignal::new(None),
        }
    }
}

impl Default for CardBus {
    fn default() -> Self {
        Self::new()
    }
}

fn key_command(key: &str) -> Option<CardCommand> {
    match key {
        "a" => Some(CardCommand::Approve),
        "e" => Some(CardCommand::Edit),
        "d" => Some(CardCommand::Deny),
        "A" => Some(CardCommand::AllowAlways),
        "Escape" => Some(CardCommand::Close),
        _ => None,
    }
}

/// a / e / d / A / Esc act on the card in focus (else the one `j`/`k` last chose, else the
/// first pending); j / k move focus between pending cards; none of them fire while typing in
/// a field.
pub fn install_keyboard(bus: CardBus, pending: Memo<Vec<ApprovalRequestBody>>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let handle = window_event_listener(leptos::ev::keydown, move |ev| {
            if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
                return;
            }
            let key = ev.key();
            let typing = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .map(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
                .unwrap_or(false);
            if typing && key != "Escape" {
                return;
            }
            let ids: Vec<String> = pending
                .get_untracked()
                .into_iter()
                .map(|g| g.approval_id)
                .collect();
            if ids.is_empty() {
                return;
            }
            // The card the person is looking at: the one with focus wins, so a key never acts
            // on a card other than the highlighted one.
            let active = crate::ui::browser::focused_card()
                .filter(|a| ids.contains(a))
                .or_else(|| bus.active.get_untracked().filter(|a| ids.contains(a)))
                .unwrap_or_else(|| ids[0].clone());
            if key == "j" || key == "k" {
                let at = ids.iter().position(|i| *i == active).unwrap_or(0);
                let next = if key == "j" {
                    (at + 1).min(ids.len() - 1)
                } else {
                    at.saturating_sub(1)
                };
                bus.active.set(Some(ids[next].clone()));
                let id = format!("gate-{}", ids[next]);
                crate::ui::browser::scroll_into_view(&id);
                crate::ui::browser::focus(&id);
                ev.prevent_default();
                return;
            }
            if let Some(command) = key_command(&key) {
                ev.prevent_default();
                bus.command.set(Some((active, command)));
            }
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (bus, pending, key_command);
}

/// The sticky bar that answers every pending card at once.
#[component]
pub fn BulkBar(session_id: String, pending: Memo<Vec<ApprovalRequestBody>>) -> impl IntoView {
    let client = use_context::<ClientId>().unwrap_or_default();
    let busy = RwSignal::new(false);
    let answer_all = move |decision: &'static str| {
        let gates = pending.get_untracked();
        let session_id = session_id.clone();
        let client_id = client.get_untracked();
        busy.set(true);
        spawn_local(async move {
            for gate in gates {
                let input = DecisionInput {
                    decision: decision.to_owned(),
                    digest: Some(gate.digest.clone()),
                    client_id: Some(client_id.clone()),
                    ..DecisionInput::default()
                };
                // A card another tab answered meanwhile is fine: its SSE event shows that.
                let _ = api::decide(session_id.clone(), gate.approval_id.clone(), input).await;
            }
            busy.set(false);
        });
    };
    let approve = answer_all.clone();
    view! {
        <Show when=move || { pending.read().len() >= 2 }>
            <div class="bulk-bar" data-testid="bulk-bar" role="region" aria-label="Pending approvals">
                <span>{move || format!("{} pending", pending.read().len())}</span>
                <button type="button" class="primary" data-action="approve-all" disabled=move || busy.get()
                    on:click={ let approve = approve.clone(); move |_| approve("approve") }>"Approve all"</button>
                <button type="button" data-action="deny-all" disabled=move || busy.get()
                    on:click={ let deny = answer_all.clone(); move |_| deny("deny") }>"Deny all"</button>
            </div>
        </Show>
    }
}

/// The tab title for `n` pending gates.
pub fn tab_title(n: usize) -> String {
    match n {
        0 => "Countersign".to_owned(),
        n => format!("({n}) Countersign — approval needed"),
    }
}

/// Keeps the tab title on the pending count, and shows a browser notification for each new
/// gate while the tab is hidden (permission is asked the first time a gate appears). The
/// title is set directly rather than through a `<Title>` signal, which would outlive this
/// view when the router switches sessions.
pub fn watch_pending(pending: Memo<Vec<ApprovalRequestBody>>) {
    Effect::new(move |_| crate::ui::browser::set_title(&tab_title(pending.read().len())));
    #[cfg(feature = "hydrate")]
    Effect::new(move |seen: Option<Vec<String>>| {
        let now: Vec<ApprovalRequestBody> = pending.get();
        let seen = seen.unwrap_or_else(|| now.iter().map(|g| g.approval_id.clone()).collect());
        let fresh: Vec<&ApprovalRequestBody> = now
            .iter()
            .filter(|g| !seen.contains(&g.approval_id))
            .collect();
        for gate in &fresh {
            crate::ui::browser::notify_gate(&gate.approval_id, &gate.title, &gate.summary);
        }
        // With nothing typed, focus goes to the new card so a/e/d act on it at once.
        if let Some(first) = fresh.first()
            && crate::ui::browser::composer_is_empty()
        {
            let id = format!("gate-{}", first.approval_id);
            // After the card is in the DOM.
            request_animation_frame(move || crate::ui::browser::focus(&id));
        }
        now.iter()
            .map(|g| g.approval_id.clone())
            .collect::<Vec<_>>()
    });
}
