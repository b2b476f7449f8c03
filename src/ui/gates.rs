//! What the chat page does around its approval cards: this tab's client id, the keyboard
//! commands, the Approve all / Deny all bar, the tab title and browser notifications.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::{ApprovalId, ApprovalRequestBody, DecisionRequest, GateReason, SessionId};
use crate::ui::left_for_you::LeftForYou;

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

/// Counts the moments the page's connection came back (the feed reconnected, or the Inbox's
/// pending gates were fetched again after failing): a card's "could not send" clears on the next one.
#[derive(Clone, Copy)]
pub struct ConnectionHealed(pub Signal<u64>);

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
    pub command: RwSignal<Option<(ApprovalId, CardCommand)>>,
    /// The card the keyboard acts on.
    pub active: RwSignal<Option<ApprovalId>>,
    /// Bumped by every key that is not a card command: a sensitive card's second `a` must
    /// follow its first with nothing between (typing "can't allow" is not a confirmation).
    pub other_key: RwSignal<u64>,
    /// Cards this tab lost a race on: answered elsewhere, whether or not the feed has said so.
    /// They are no longer pending here (keys, the bulk bar, the title, the composer).
    pub lost: RwSignal<Vec<ApprovalId>>,
    /// A card that just took focus on its own: it takes no key until [`ARRIVAL_GRACE`] has
    /// passed (letters typed as it arrived were meant for something else).
    pub settling: RwSignal<Option<ApprovalId>>,
    /// The answers this tab sent that the server took, oldest first: a page whose cards leave
    /// once answered (the Inbox) says what came of them (`card::AnsweredHere`).
    pub answered: RwSignal<Vec<crate::protocol::Resolution>>,
}

impl CardBus {
    pub fn new() -> Self {
        CardBus {
            command: RwSignal::new(None),
            active: RwSignal::new(None),
            other_key: RwSignal::new(0),
            lost: RwSignal::new(Vec::new()),
            settling: RwSignal::new(None),
            answered: RwSignal::new(Vec::new()),
        }
    }

    /// `pending` less the cards this tab knows were answered elsewhere.
    pub fn still_pending(self, pending: Vec<ApprovalRequestBody>) -> Vec<ApprovalRequestBody> {
        self.lost.with(|lost| {
            pending
                .into_iter()
                .filter(|g| !lost.contains(&g.approval_id))
                .collect()
        })
    }
}

/// How long a card that took focus on its own takes no key (counted again from each key the
/// person presses meanwhile).
pub const ARRIVAL_GRACE: std::time::Duration = std::time::Duration::from_millis(1000);

#[cfg(feature = "hydrate")]
thread_local! {
    /// Which grace is the latest: an older timer ending does not end a newer grace.
    static SETTLE_EPOCH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Starts (or restarts) the grace of the card `id`.
#[cfg(feature = "hydrate")]
pub fn settle(bus: CardBus, id: ApprovalId) {
    let epoch = SETTLE_EPOCH.get() + 1;
    SETTLE_EPOCH.set(epoch);
    bus.settling.set(Some(id));
    set_timeout(
        move || {
            if SETTLE_EPOCH.get() == epoch {
                bus.settling.try_set(None);
            }
        },
        ARRIVAL_GRACE,
    );
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

/// a / e / d / A / Esc act on the card in focus, else the one `j`/`k` last chose (both are
/// marked on the page: the focus ring, `aria-current`); with no card chosen they do nothing.
/// j / k move between pending cards, starting at the first; none of them fire while typing in
/// a field. A sensitive (floor) card is not approved by one key: its card asks for the key
/// again (`PendingCard`).
pub fn install_keyboard(bus: CardBus, pending: Memo<Vec<ApprovalRequestBody>>) {
    #[cfg(feature = "hydrate")]
    {
        let handle =
            window_event_listener(leptos::ev::keydown, move |ev| on_keydown(bus, pending, &ev));
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (bus, pending, key_command);
}

/// One key press at the page: what it ends or moves, and the command it sends to the card
/// the person chose (see [`install_keyboard`]).
#[cfg(feature = "hydrate")]
fn on_keydown(bus: CardBus, pending: Memo<Vec<ApprovalRequestBody>>, ev: &web_sys::KeyboardEvent) {
    use wasm_bindgen::JsCast;
    let key = ev.key();
    let modified = ev.ctrl_key() || ev.meta_key() || ev.alt_key();
    let typing = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .map(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
        .unwrap_or(false);
    // A held key is one press: its repeats neither act nor count.
    if ev.repeat() {
        return;
    }
    note_other_key(bus, &key, typing, modified);
    if modified {
        return;
    }
    if typing && key != "Escape" {
        return;
    }
    let ids: Vec<ApprovalId> = pending
        .get_untracked()
        .into_iter()
        .map(|g| g.approval_id)
        .collect();
    if ids.is_empty() {
        return;
    }
    // The card the person is looking at: the one with focus wins, then the one marked
    // active; a key never acts on a card nobody chose.
    let active = crate::ui::browser::focused_card()
        .map(ApprovalId::from)
        .filter(|a| ids.contains(a))
        .or_else(|| bus.active.get_untracked().filter(|a| ids.contains(a)));
    if key == "j" || key == "k" {
        move_between(bus, &ids, active.as_ref(), key == "j");
        ev.prevent_default();
        return;
    }
    if let (Some(command), Some(active)) = (key_command(&key), active) {
        ev.prevent_default();
        let just_arrived =
            command != CardCommand::Close && bus.settling.get_untracked().as_ref() == Some(&active);
        if !just_arrived {
            bus.command.set(Some((active, command)));
        }
    }
}

/// What any real key press ends: a sensitive card's wait for its second `a`, and a card's
/// arrival grace.
#[cfg(feature = "hydrate")]
fn note_other_key(bus: CardBus, key: &str, typing: bool, modified: bool) {
    // Every key but a plain `a` at the cards ends a sensitive card's wait for its
    // second `a` (Escape, `d`, typing a reason…); Shift and the like alone do not.
    let lone_modifier = matches!(key, "Shift" | "Control" | "Alt" | "Meta" | "CapsLock");
    if !lone_modifier && (typing || modified || key != "a") {
        bus.other_key.update(|n| *n += 1);
    }
    // A card that just arrived keeps its grace while the person keeps typing.
    if !lone_modifier && let Some(settling) = bus.settling.get_untracked() {
        settle(bus, settling);
    }
}

/// `j` (forward) or `k`: the next or previous pending card becomes the one the keys act on,
/// scrolled to and focused; with none chosen yet, the first.
#[cfg(feature = "hydrate")]
fn move_between(bus: CardBus, ids: &[ApprovalId], active: Option<&ApprovalId>, forward: bool) {
    let next = match active.and_then(|a| ids.iter().position(|i| i == a)) {
        None => 0,
        Some(at) if forward => (at + 1).min(ids.len() - 1),
        Some(at) => at.saturating_sub(1),
    };
    bus.active.set(Some(ids[next].clone()));
    let id = format!("gate-{}", ids[next]);
    // On the Inbox the card sits in a row that may be closed: open it first.
    crate::ui::browser::reveal(&id);
    crate::ui::browser::scroll_into_view(&id);
    crate::ui::browser::focus(&id);
}

/// Sends one answer to each of `gates`, one after another; how many it decided (a card
/// another tab answered meanwhile is fine: its SSE event shows that).
async fn answer_each(
    session_id: &SessionId,
    gates: &[ApprovalRequestBody],
    decision: &str,
    why: Option<String>,
    client_id: String,
) -> usize {
    let mut answered = 0;
    for gate in gates {
        let input = DecisionRequest {
            digest: Some(gate.digest.clone()),
            client_id: Some(client_id.clone()),
            reason: why.clone(),
            ..DecisionRequest::of(decision)
        };
        if matches!(
            api::decide(session_id.clone(), gate.approval_id.clone(), input).await,
            Ok(crate::protocol::DecideOutcome::Decided { .. }
                | crate::protocol::DecideOutcome::Counted { .. })
        ) {
            answered += 1;
        }
    }
    answered
}

/// The sticky bar that answers the pending cards at once — every one but the sensitive
/// (safety-floor) cards, which are left for the person to answer one by one, as the bar
/// says. Deny all asks once for a reason.
#[component]
pub fn BulkBar(session_id: SessionId, pending: Memo<Vec<ApprovalRequestBody>>) -> impl IntoView {
    let BulkState {
        busy,
        asking_reason,
        reason,
        said,
        left_ids,
    } = BulkState::new();
    let ordinary = ordinary_cards(pending);
    let sensitive = move || pending.read().len() - ordinary.read().len();
    // A card that just arrived is not approved in bulk before it could be read.
    let bus = use_context::<CardBus>().unwrap_or_default();
    let settling = move || bus.settling.read().is_some();
    let answer_all = bulk_answer(session_id, pending, ordinary, left_ids, said, busy);
    let approve = answer_all.clone();
    let deny = answer_all;
    view! {
        <Show when=move || { pending.read().len() >= 2 }>
            <div class="bulk-bar" data-testid="bulk-bar" role="region" aria-label="Pending approvals">
                <span>{move || format!("{} pending", pending.read().len())}</span>
                {move || (sensitive() > 0).then(|| view! {
                    <span class="bulk-note" data-testid="bulk-sensitive">
                        {format!("{} sensitive: answer {} yourself", sensitive(), if sensitive() == 1 { "it" } else { "them" })}
                    </span>
                })}
                <button type="button" class="primary" data-action="approve-all"
                    disabled=move || busy.get() || ordinary.read().is_empty() || settling()
                    on:click={ let approve = approve.clone(); move |_| approve("approve", None) }>
                    {move || if sensitive() > 0 { "Approve the others" } else { "Approve all" }}
                </button>
                <button type="button" data-action="deny-all"
                    disabled=move || busy.get() || ordinary.read().is_empty() || settling()
                    on:click=move |_| asking_reason.set(true)>
                    {move || if sensitive() > 0 { "Deny the others" } else { "Deny all" }}
                </button>
            </div>
        </Show>
        <Show when=move || asking_reason.get()>
            <div class="bulk-reason" data-testid="bulk-reason">
                <label for="bulk-reason-input">{move || format!("Deny {} cards — why? (the agent reads it)", ordinary.read().len())}</label>
                <input id="bulk-reason-input" data-testid="bulk-reason-input" type="text"
                    prop:value=move || reason.get()
                    on:input=move |ev| reason.set(event_target_value(&ev))/>
                <button type="button" class="danger" data-action="confirm-deny-all" disabled=move || busy.get()
                    on:click={ let deny = deny.clone(); move |_| {
                        let why = reason.get_untracked().trim().to_owned();
                        asking_reason.set(false);
                        deny("deny", (!why.is_empty()).then_some(why));
                    } }>"Deny them"</button>
                <button type="button" data-action="cancel-deny-all" on:click=move |_| asking_reason.set(false)>"Keep them"</button>
            </div>
        </Show>
        {answered_line(said, still_waiting(pending, left_ids))}
    }
}

/// The bulk bar's progress, its reason field and what it last said.
struct BulkState {
    busy: RwSignal<bool>,
    asking_reason: RwSignal<bool>,
    reason: RwSignal<String>,
    said: RwSignal<Option<String>>,
    /// The sensitive cards the last bulk answer left: the bar links to them while they wait.
    left_ids: RwSignal<Vec<ApprovalId>>,
}

impl BulkState {
    /// Idle, no reason asked, nothing said.
    fn new() -> Self {
        Self {
            busy: RwSignal::new(false),
            asking_reason: RwSignal::new(false),
            reason: RwSignal::new(String::new()),
            said: RwSignal::new(None::<String>),
            left_ids: RwSignal::new(Vec::<ApprovalId>::new()),
        }
    }
}

/// Answers every ordinary card with `decision` (and the reason, for a denial), remembers
/// the sensitive ones it left, then says how many it answered.
fn bulk_answer(
    session_id: SessionId,
    pending: Memo<Vec<ApprovalRequestBody>>,
    ordinary: Memo<Vec<ApprovalRequestBody>>,
    left_ids: RwSignal<Vec<ApprovalId>>,
    said: RwSignal<Option<String>>,
    busy: RwSignal<bool>,
) -> impl Fn(&'static str, Option<String>) + Clone + Send + Sync + 'static {
    let client = use_context::<ClientId>().unwrap_or_default();
    move |decision: &'static str, why: Option<String>| {
        let gates = ordinary.get_untracked();
        left_ids.set(sensitive_ids(&pending.get_untracked()));
        let (session_id, client_id) = (session_id.clone(), client.get_untracked());
        busy.set(true);
        spawn_local(async move {
            let answered = answer_each(&session_id, &gates, decision, why, client_id).await;
            let verb = if decision == "approve" {
                "approved"
            } else {
                "denied"
            };
            said.set(Some(bulk_summary(answered, verb)));
            busy.set(false);
        });
    }
}

/// The cards a bulk answer may answer: every pending one but those it leaves.
fn ordinary_cards(pending: Memo<Vec<ApprovalRequestBody>>) -> Memo<Vec<ApprovalRequestBody>> {
    Memo::new(move |_| {
        pending
            .get()
            .into_iter()
            .filter(|g| !left_alone(g))
            .collect::<Vec<_>>()
    })
}

/// Whether a bulk answer leaves the card to its own buttons: a sensitive (floor) card, or a
/// routed one (issue 41), which says who may answer it and who approved it so far.
fn left_alone(card: &ApprovalRequestBody) -> bool {
    card.reason == GateReason::SafetyFloor || card.route.is_some()
}

/// After a bulk answer: what it did, then the sensitive cards it left, linked.
fn answered_line(
    said: RwSignal<Option<String>>,
    left: Signal<Vec<ApprovalRequestBody>>,
) -> impl IntoView {
    view! {
        {move || said.get().map(|text| view! { <p class="bulk-said" role="status" data-testid="bulk-said">{text}</p> })}
        <LeftForYou left/>
    }
}

/// What a bulk answer did, in words: `2 approved` (what it left says [`LeftForYou`]).
pub fn bulk_summary(answered: usize, verb: &str) -> String {
    format!("{answered} {verb}")
}

/// The cards among `pending` a bulk answer leaves (sensitive, routed).
fn sensitive_ids(pending: &[ApprovalRequestBody]) -> Vec<ApprovalId> {
    pending
        .iter()
        .filter(|g| left_alone(g))
        .map(|g| g.approval_id.clone())
        .collect()
}

/// The cards of `ids` still pending, in the page's order.
fn still_waiting(
    pending: Memo<Vec<ApprovalRequestBody>>,
    ids: RwSignal<Vec<ApprovalId>>,
) -> Signal<Vec<ApprovalRequestBody>> {
    Signal::derive(move || {
        let ids = ids.get();
        pending
            .get()
            .into_iter()
            .filter(|g| ids.contains(&g.approval_id))
            .collect()
    })
}

/// Gives focus to the first (in the page's order) of the cards just arrived, when the person
/// is not busy elsewhere. Chosen now, not when they arrived: an earlier arrival's frame may
/// have given focus meanwhile.
#[cfg(feature = "hydrate")]
fn focus_first_arrival(
    bus: CardBus,
    pending: Memo<Vec<ApprovalRequestBody>>,
    fresh: &[ApprovalId],
) {
    use crate::ui::browser;
    let order: Vec<ApprovalId> = pending
        .get_untracked()
        .into_iter()
        .map(|g| g.approval_id)
        .collect();
    let settling = bus.settling.get_untracked();
    let Some(arrived) = arrival_focus(&order, fresh, settling.as_ref()) else {
        return;
    };
    // The card that already had it only takes focus back if the page dropped it (rows
    // moving around it as the batch's other cards arrive).
    let kept = settling.as_ref() == Some(&arrived);
    if browser::page_hidden()
        || !browser::composer_is_empty()
        || !browser::focus_is_free()
        || (kept && !browser::focus_is_nowhere())
    {
        return;
    }
    settle(bus, arrived.clone());
    browser::focus(&format!("gate-{arrived}"));
}

/// Which card the cards just arrived (`fresh`) send focus to, if any: the first in the page's
/// order (a batch's call order) of them and of the card that took focus on its own a moment
/// ago (`settling`) — so a batch whose cards arrive in any order ends on its first call, not
/// on the last to arrive. `None` when nothing arrived.
pub fn arrival_focus(
    order: &[ApprovalId],
    fresh: &[ApprovalId],
    settling: Option<&ApprovalId>,
) -> Option<ApprovalId> {
    if fresh.is_empty() {
        return None;
    }
    order
        .iter()
        .find(|id| fresh.contains(id) || Some(*id) == settling)
        .cloned()
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
pub fn watch_pending(bus: CardBus, pending: Memo<Vec<ApprovalRequestBody>>) {
    #[cfg(not(feature = "hydrate"))]
    let _ = bus;
    Effect::new(move |_| crate::ui::browser::set_title(&tab_title(pending.read().len())));
    #[cfg(feature = "hydrate")]
    Effect::new(move |seen: Option<Vec<ApprovalId>>| {
        let now: Vec<ApprovalRequestBody> = pending.get();
        let seen = seen.unwrap_or_else(|| now.iter().map(|g| g.approval_id.clone()).collect());
        let fresh: Vec<&ApprovalRequestBody> = now
            .iter()
            .filter(|g| !seen.contains(&g.approval_id))
            .collect();
        for gate in &fresh {
            // On one line with nothing out of sight, as every other notification says it.
            crate::ui::browser::notify_gate(
                gate.approval_id.as_str(),
                &crate::shown::line_within(&gate.title, 80),
                &crate::shown::line_within(&gate.summary, 240),
            );
        }
        // With nothing typed and focus nowhere else (not in another card's field, the bulk
        // reason, an editor), focus goes to the new card; its keys wait a moment (see
        // [`ARRIVAL_GRACE`]).
        let order: Vec<ApprovalId> = now.iter().map(|g| g.approval_id.clone()).collect();
        let fresh: Vec<ApprovalId> = fresh.iter().map(|g| g.approval_id.clone()).collect();
        if !fresh.is_empty() {
            // After the card is in the DOM — and, in a hidden tab, when the person is back:
            // the checks and the grace count from the moment focus actually moves.
            request_animation_frame(move || focus_first_arrival(bus, pending, &fresh));
        }
        order
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_summary_counts_the_answers() {
        assert_eq!(bulk_summary(2, "approved"), "2 approved");
        assert_eq!(bulk_summary(0, "denied"), "0 denied");
    }

    /// A batch's first call takes focus whichever of its cards arrives first; a card that
    /// took focus a moment ago keeps it against a later one.
    #[test]
    fn a_batch_focuses_its_first_call_not_its_last_arrival() {
        let id = |s: &str| ApprovalId::from(s);
        let order = [id("one"), id("two"), id("three")];
        // The first call's card arrived first and took focus: later arrivals leave it there.
        assert_eq!(
            arrival_focus(&order, &[id("two")], Some(&id("one"))),
            Some(id("one"))
        );
        // The second call's card arrived first: the first call's, arriving now, takes focus.
        assert_eq!(
            arrival_focus(&order, &[id("one")], Some(&id("two"))),
            Some(id("one"))
        );
        // Several at once, nothing settling: the first in the page's order.
        assert_eq!(
            arrival_focus(&order, &[id("three"), id("two")], None),
            Some(id("two"))
        );
        assert_eq!(arrival_focus(&order, &[], None), None);
    }
}
