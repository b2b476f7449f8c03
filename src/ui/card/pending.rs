//! A card waiting for its answer: the head (badge, source, countdown), the body, the plan's
//! mode, the buttons (a plain form until the page's script runs) and the panels they open;
//! keys and the bulk bar reach it through the card bus.

use leptos::prelude::*;

use super::decide::{CardState, Target, use_decide};
use super::panels::{AlwaysPanel, DenyPanel, EditPanel, Panel};
use super::parts::{
    CardBody, CardPlace, at_zero, badge, countdown, external_title, outcome_text, rule_hint_text,
};
use super::sensitive;
use crate::protocol::{
    ApprovalId, ApprovalRequestBody, Decision, DecisionKind, DecisionRequest, GateReason, Mode,
};
use crate::shown;
use crate::ui::gates::{CardBus, CardCommand, ClientId};
use crate::ui::outside::{SessionSource, SourceBadge};
use crate::ui::viewer::Viewer;
use crate::ui::when::{AgoAndClock, Precision};

fn decision(decision: &str) -> DecisionRequest {
    DecisionRequest::of(decision)
}

#[component]
pub(super) fn PendingCard(
    request: ApprovalRequestBody,
    /// The reviewer's concern, when it escalated this card in a class the person trusts it with.
    concern: Option<String>,
    /// A routed card's approvals so far and whether it escalated.
    route_state: crate::protocol::RouteState,
    now_ms: RwSignal<f64>,
) -> impl IntoView {
    let PendingSetup {
        bus,
        state,
        send,
        modes,
        is_plan,
    } = pending_setup(&request, &route_state);
    let floor = request.reason == GateReason::SafetyFloor;
    let approval_id = request.approval_id.clone();
    let is_active = {
        let approval_id = approval_id.clone();
        move || bus.active.get().as_ref() == Some(&approval_id)
    };
    let settling_id = approval_id.clone();
    // Focus and the highlight are one thing: the card that gets focus (by Tab, a click, `j`/`k`
    // or arriving) becomes the one the keys act on.
    let focus_id = approval_id;
    let on_focus = move |_| bus.active.set(Some(focus_id.clone()));
    let lost = state.lost;
    let panel = state.panel;
    view! {
        <article
            class=format!("card pending kind-{}", request.look())
            class:floor=floor
            class:active=is_active.clone()
            aria-current=move || is_active().then_some("true")
            on:focusin=on_focus
            id=format!("gate-{}", request.approval_id)
            tabindex="0"
            data-testid="approval-card"
            data-approval-id=request.approval_id.clone()
            data-kind=request.kind.as_str()
            data-state=move || if lost.read().is_some() { "resolved" } else { "pending" }
            data-engaged=move || (state.confirming.get() || panel.get() != Panel::None).then_some("true")
            data-keys=move || if bus.settling.read().as_ref() == Some(&settling_id) { "settling" } else { "ready" }
            data-decision=move || lost.read().as_ref().map(|r| r.decision.as_str())
        >
            <CardHead request=request.clone() now_ms/>
            {external_title(&request).map(|title| view! { <p class="card-title" data-testid="card-title">{shown::text(&title)}</p> })}
            <p class="card-summary" data-testid="card-summary">{shown::text(&request.summary)}</p>
            <CardBody request=request.clone()/>
            {(is_plan && Viewer::get().admin).then(|| view! { <PlanMode state modes/> })}
            {rule_hint(&request)}
            <ConfirmPrompt state/>
            <LostTo request=request.clone() state/>
            <super::reviewer::ReviewerConcern concern/>
            <RoutedAnswers request=request.clone() route_state state send/>
            {move || state.notice.get().map(|n| view! { <p class="card-notice" role="status" data-testid="card-notice">{n}</p> })}
        </article>
    }
}

/// Who may answer a routed card, and the answers, shown only to a credential that may answer
/// and, for a routed card, only to those its route names (a viewer reads the card and is told
/// who answers it instead; the server refuses their answer all the same).
#[component]
fn RoutedAnswers(
    request: ApprovalRequestBody,
    route_state: crate::protocol::RouteState,
    state: CardState,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let decides = Viewer::get().decides;
    let may = decides && super::route::may_answer_here(&request, &route_state);
    view! {
        <super::route::RouteLine request=request.clone() state=route_state may/>
        {(!decides).then(|| view! {
            <p class="card-read-only muted" data-testid="card-read-only">"You may read this card; an approver answers it."</p>
        })}
        {may.then(|| view! {
            <Actions request=request.clone() state send/>
            <OpenPanels request=request.clone() state send/>
        })}
    }
}

/// What a pending card works with, set up before it draws anything.
struct PendingSetup {
    bus: CardBus,
    state: CardState,
    send: Callback<DecisionRequest>,
    modes: crate::ui::viewer::Modes,
    is_plan: bool,
}

/// The card's state, its sender and its command listener: kept apart from the markup so the
/// card's view reads as its layout.
fn pending_setup(
    request: &ApprovalRequestBody,
    route_state: &crate::protocol::RouteState,
) -> PendingSetup {
    let bus = use_context::<CardBus>().unwrap_or_default();
    // The plan's mode starts on the one the card proposes, if the step-up still allows it
    // (`Viewer::modes`), else on `ask`.
    let modes = Viewer::get().modes;
    let proposed = request.execution_mode.filter(|m| modes.allows(*m));
    let state = CardState::new(proposed.unwrap_or(Mode::Ask));
    state.follow_the_page(bus);
    let is_plan = request.decision_kind == Some(DecisionKind::Plan);
    let send = use_decide(
        Target {
            session_id: request.session_id.clone(),
            approval_id: request.approval_id.clone(),
            digest: request.digest.clone(),
            is_plan,
        },
        state,
    );
    // A viewer's keys answer nothing, nor do those of someone a routed card's route does not
    // name (the card draws them no buttons; the server would refuse them all the same).
    if Viewer::get().decides && super::route::may_answer_here(request, route_state) {
        follow_commands(request, state, send, bus);
    }
    PendingSetup {
        bus,
        state,
        send,
        modes,
        is_plan,
    }
}

/// The second-press prompt of a sensitive card's Approve key.
#[component]
fn ConfirmPrompt(state: CardState) -> impl IntoView {
    move || {
        state.confirming.get().then(|| {
            view! {
                <p class="card-confirm" role="status" data-testid="card-confirm">
                    "This is a sensitive call: press a again to approve it."
                </p>
            }
        })
    }
}

/// The Edit, Deny and Always panels, each shown while it is the open one and the card is
/// still undecided.
#[component]
fn OpenPanels(
    request: ApprovalRequestBody,
    state: CardState,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let (lost, panel) = (state.lost, state.panel);
    let approval_id = request.approval_id.clone();
    let (edit_request, always_request) = (request.clone(), request);
    view! {
        <Show when=move || panel.get() == Panel::Edit && lost.read().is_none()>
            <EditPanel request=edit_request.clone() panel send/>
        </Show>
        <Show when=move || panel.get() == Panel::Deny && lost.read().is_none()>
            <DenyPanel approval_id=approval_id.clone() panel send/>
        </Show>
        <Show when=move || panel.get() == Panel::Always && lost.read().is_none()>
            <AlwaysPanel request=always_request.clone() panel send/>
        </Show>
    }
}

/// Keyboard and bar commands addressed to this card.
fn follow_commands(
    request: &ApprovalRequestBody,
    state: CardState,
    send: Callback<DecisionRequest>,
    bus: CardBus,
) {
    let approval_id: ApprovalId = request.approval_id.clone();
    let allowed = request.allowed_decisions.clone();
    let floor = request.reason == GateReason::SafetyFloor;
    let is_budget = request.kind.is_budget_stop();
    Effect::new(move |_| {
        let Some((target, command)) = bus.command.get() else {
            return;
        };
        if target != approval_id {
            return;
        }
        bus.command.set(None);
        if state.lost.with_untracked(Option::is_some) {
            return;
        }
        let allows = |d: Decision| allowed.contains(&d);
        match command {
            // A sensitive card is not approved by one key: the first press asks for a
            // second, which must come within a few seconds.
            CardCommand::Approve
                if allows(Decision::Approve) && floor && !state.confirming.get_untracked() =>
            {
                state.confirming.set(true);
                set_timeout(
                    move || state.confirming.set(false),
                    std::time::Duration::from_secs(5),
                );
            }
            CardCommand::Approve if allows(Decision::Approve) => {
                state.confirming.set(false);
                send.run(decision("approve"))
            }
            CardCommand::Edit if allows(Decision::Edit) => state.panel.set(Panel::Edit),
            CardCommand::Deny if allows(Decision::Deny) && is_budget => send.run(decision("deny")),
            CardCommand::Deny if allows(Decision::Deny) => state.panel.set(Panel::Deny),
            CardCommand::AllowAlways if allows(Decision::AllowAlways) => {
                state.panel.set(Panel::Always)
            }
            CardCommand::Close => {
                state.confirming.set(false);
                state.panel.set(Panel::None)
            }
            _ => {}
        }
    });
}

/// The badge, whose card it is, what it needs, and the countdown to its deadline.
#[component]
fn CardHead(request: ApprovalRequestBody, now_ms: RwSignal<f64>) -> impl IntoView {
    let floor = request.reason == GateReason::SafetyFloor;
    // Whose card it is, for an outside agent's gate (the page knows its session's source).
    let source = use_context::<SessionSource>()
        .filter(|_| request.kind.is_outside_call())
        .map_or_else(|| Signal::stored(None), |s| s.0);
    let expires_at = StoredValue::new(request.expires_at.clone());
    let verb = at_zero(&request);
    let timer = move || expires_at.with_value(|at| countdown(verb, at, now_ms.get()));
    let deadline = format!(
        "Unanswered by {}, it {verb}",
        crate::ui::when::utc_text(&request.expires_at, Precision::Second)
    );
    view! {
        <header class="card-head">
            <span class="badge" data-testid="card-badge">{shown::text(&badge(&request))}</span>
            {floor.then(|| view! { <span class="badge sensitive">"Sensitive"</span> })}
            {move || source.get().map(|source| view! { <SourceBadge source/> })}
            <span class="needs">"needs your approval"</span>
            // Always rendered, so the server's page and the hydrated one agree (the Inbox's
            // list, which says when each opened, hides it).
            <span class="asked-at muted" data-testid="asked-at">"asked " <AgoAndClock at=request.created_at.clone()/></span>
            <span class=move || format!("countdown {}", timer().1) data-testid="countdown" title=deadline>{move || timer().0}</span>
        </header>
    }
}

/// A plan card's choice of the mode its approval leaves plan mode for (an admin's).
#[component]
fn PlanMode(state: CardState, modes: crate::ui::viewer::Modes) -> impl IntoView {
    let execution_mode = state.execution_mode;
    view! {
        <label class="exec-mode">
            "On approval, leave plan mode for "
            <select data-testid="execution-mode" prop:value=move || execution_mode.get().as_str()
                on:change=move |ev| {
                    if let Some(mode) = Mode::parse(&event_target_value(&ev)) {
                        execution_mode.set(mode);
                    }
                }>
                {[Mode::Ask, Mode::AutoEdit, Mode::Yolo].into_iter().filter(|m| modes.allows(*m)).map(|m| view! {
                    <option value=m.as_str() selected=move || execution_mode.get() == m>{m.label()}</option>
                }).collect_view()}
            </select>
        </label>
    }
}

/// After three hand approvals of the same kind of call, the standing rule recommended.
fn rule_hint(request: &ApprovalRequestBody) -> Option<impl IntoView + use<>> {
    request
        .suggested_rule
        .as_ref()
        .filter(|r| {
            r.approved_before >= 3 && request.allowed_decisions.contains(&Decision::AllowAlways)
        })
        .map(|r| view! { <p class="rule-hint" data-testid="rule-hint">{rule_hint_text(r)}</p> })
}

/// The answer that won over this tab's, once it is known.
#[component]
fn LostTo(request: ApprovalRequestBody, state: CardState) -> impl IntoView {
    let client = use_context::<ClientId>().unwrap_or_default();
    let request = StoredValue::new(request);
    move || {
        state.lost.get().map(|resolution| {
            let client = client.get_untracked();
            let text = request.with_value(|r| outcome_text(r, &resolution, &client));
            view! {
                <p class="chip card-lost" data-testid="card-outcome">
                    {text} " · " <AgoAndClock at=resolution.resolved_at.clone()/>
                </p>
            }
        })
    }
}

/// The card's buttons, only those its gate allows. Until the page's script runs (or without
/// it), the card is a plain form: Approve (and a budget card's Stop) submit it, Deny opens a
/// reason field that does; the rest need the script and appear with it.
#[component]
fn Actions(
    request: ApprovalRequestBody,
    state: CardState,
    send: Callback<DecisionRequest>,
) -> impl IntoView {
    let scripted = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| scripted.set(true));
    let buttons = decision_buttons(&request, state, send, scripted);
    let budget = request.kind.is_budget_stop();
    let form_deny = (!budget && request.allowed_decisions.contains(&Decision::Deny))
        .then(|| view! { <FormDeny approval_id=request.approval_id.clone() scripted/> });
    let back = use_context::<CardPlace>().unwrap_or_default().as_str();
    let lost = state.lost;
    view! {
        <form class="card-actions" method="post" action="/forms/decide" hidden=move || lost.read().is_some()
            on:submit=|ev| ev.prevent_default()>
            <input type="hidden" name="session_id" value=request.session_id.clone()/>
            <input type="hidden" name="approval_id" value=request.approval_id.clone()/>
            <input type="hidden" name="digest" value=request.digest.clone()/>
            <input type="hidden" name="back" value=back/>
            {buttons}
            {form_deny}
        </form>
    }
}

/// Approve, Edit, Deny and Always allow, in that order, each only if the gate allows it: the
/// choice of labels and actions, kept out of the form that holds them.
fn decision_buttons(
    request: &ApprovalRequestBody,
    state: CardState,
    send: Callback<DecisionRequest>,
    scripted: RwSignal<bool>,
) -> impl IntoView + use<> {
    let allowed = request.allowed_decisions.clone();
    let (panel, sending) = (state.panel, state.sending);
    // A sensitive card's Approve is not the default-looking button: it is outlined and says
    // what it approves.
    let floor = request.reason == GateReason::SafetyFloor;
    let button = move |decision: Decision,
                       label: String,
                       key: &'static str,
                       submits: bool,
                       on: Box<dyn Fn() + Send + Sync>| {
        allowed.contains(&decision).then(|| {
            let look = ButtonLook {
                decision,
                label,
                key,
                submits,
                floor,
            };
            view! { <DecisionButton look scripted sending on/> }
        })
    };
    // A budget card reads Continue / Stop, and Stop needs no reason.
    let budget = request.kind.is_budget_stop();
    let approve = move || send.run(decision("approve"));
    let stop = move || send.run(decision("deny"));
    let open = move |p: Panel| -> Box<dyn Fn() + Send + Sync> { Box::new(move || panel.set(p)) };
    let approve_label = match budget {
        true => "Continue".to_owned(),
        false => sensitive::approve_label(request),
    };
    let approve_button = button(
        Decision::Approve,
        approve_label,
        "a",
        true,
        Box::new(approve),
    );
    let edit_button = button(Decision::Edit, "Edit".into(), "e", false, open(Panel::Edit));
    let deny_button = match budget {
        true => button(Decision::Deny, "Stop".into(), "d", true, Box::new(stop)),
        false => button(Decision::Deny, "Deny".into(), "d", false, open(Panel::Deny)),
    };
    let always_button = button(
        Decision::AllowAlways,
        "Always allow".into(),
        "A",
        false,
        open(Panel::Always),
    );
    (approve_button, edit_button, deny_button, always_button)
}

/// How one of a card's buttons reads and what it does without the script.
struct ButtonLook {
    decision: Decision,
    label: String,
    key: &'static str,
    /// Whether it submits the card's form until the script runs.
    submits: bool,
    /// A floor card's Approve is outlined, not the filled default.
    floor: bool,
}

/// One of a card's buttons: a submit of its form until the page's script runs (or a button
/// hidden until then, when it needs the script), then a button calling `on`.
#[component]
fn DecisionButton(
    look: ButtonLook,
    scripted: RwSignal<bool>,
    sending: RwSignal<bool>,
    on: Box<dyn Fn() + Send + Sync>,
) -> impl IntoView {
    let ButtonLook {
        decision,
        label,
        key,
        submits,
        floor,
    } = look;
    let class = match (decision, floor) {
        (Decision::Approve, true) => "approve-sensitive",
        (Decision::Approve, false) => "primary",
        _ => "",
    };
    let value = if decision == Decision::Approve {
        "approve"
    } else {
        "deny"
    };
    view! {
        <button
            type=move || if submits && !scripted.get() { "submit" } else { "button" }
            name=submits.then_some("decision")
            value=submits.then_some(value)
            hidden=move || !submits && !scripted.get()
            class=class data-action=decision.as_str() disabled=move || sending.get()
            on:click=move |_| on()>
            {move || if sending.get() && decision == Decision::Approve { "Sending…".to_owned() } else { label.clone() }}
            " " <kbd>{key}</kbd>
        </button>
    }
}

/// Deny with a reason, as a form: only until the script's own Deny panel takes over.
#[component]
fn FormDeny(approval_id: ApprovalId, scripted: RwSignal<bool>) -> impl IntoView {
    let field = format!("form-reason-{approval_id}");
    view! {
        <details class="form-deny" data-testid="form-deny" hidden=move || scripted.get()>
            <summary>"Deny…"</summary>
            <label for=field.clone()>"Why? (optional — the agent reads this)"</label>
            <textarea id=field name="reason" rows="2" maxlength="2000"></textarea>
            <button type="submit" name="decision" value="deny" data-action="form-submit-deny">"Deny"</button>
        </details>
    }
}
