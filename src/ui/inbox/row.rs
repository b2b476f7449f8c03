//! One Inbox row: a line saying what waits (kind, summary, session, age and time left, a
//! sensitive badge) that opens in place on the whole card. The row is a `<details>`, so it
//! opens and closes with JavaScript off too, and the card's forms are there inside it.

use leptos::prelude::*;

use crate::protocol::{
    ApprovalId, ApprovalRequest, ApprovalRequestBody, DecisionKind, GateKind, GateReason,
    Timestamp, ToolClass,
};
use crate::shown;
use crate::ui::card::ApprovalCard;
use crate::ui::outside::{SessionSource, source_label};
use crate::ui::sidebar::PageSessions;
use crate::ui::transcript::GateItem;
use crate::ui::when::AgoAndClock;

use super::bulk::Selection;
use super::pickable::{LeftReason, left_reason};

/// What kind of thing a row asks about, as one word a person scans for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Write,
    Run,
    Read,
    Network,
    Config,
    Plan,
    Decision,
    Budget,
    /// An outside agent's call: the row names the agent when the page knows it.
    Outside,
}

impl RowKind {
    pub fn of(request: &ApprovalRequestBody) -> RowKind {
        match request.kind {
            GateKind::Budget => RowKind::Budget,
            GateKind::Decision if request.decision_kind == Some(DecisionKind::Plan) => {
                RowKind::Plan
            }
            GateKind::Decision => RowKind::Decision,
            GateKind::External if request.is_outside_question() => RowKind::Decision,
            GateKind::External => RowKind::Outside,
            GateKind::Tool => match request.class {
                ToolClass::Edit => RowKind::Write,
                ToolClass::Exec => RowKind::Run,
                ToolClass::Read => RowKind::Read,
                ToolClass::Network => RowKind::Network,
                ToolClass::Config => RowKind::Config,
                ToolClass::Decision => RowKind::Decision,
            },
        }
    }

    /// The word shown; an outside call takes its agent's name (`source`) when known.
    pub fn label(self, source: Option<&str>) -> String {
        match self {
            RowKind::Write => "Write".to_owned(),
            RowKind::Run => "Run".to_owned(),
            RowKind::Read => "Read".to_owned(),
            RowKind::Network => "Network".to_owned(),
            RowKind::Config => "Config".to_owned(),
            RowKind::Plan => "Plan".to_owned(),
            RowKind::Decision => "Decision".to_owned(),
            RowKind::Budget => "Budget".to_owned(),
            RowKind::Outside => source.map_or_else(|| "Outside".to_owned(), source_label),
        }
    }
}

/// What is left of a card's time: `· 26:12 left`, `· expired`; before the browser clock runs
/// (the server's render, no JavaScript) `· until 14:29 UTC`, as the card's own countdown
/// says. How long ago it was asked is [`AgoAndClock`]'s, the one formatter of the page's times.
pub fn time_left(expires: &Timestamp, now_ms: f64) -> String {
    use crate::ui::when::{Precision, utc_text};
    if now_ms <= 0.0 {
        return format!("· until {}", utc_text(expires, Precision::Clock));
    }
    match expires.ms_left(now_ms as i64) / 1000 {
        0 => "· expired".to_owned(),
        s if s >= 3600 => format!("· {}:{:02}:{:02} left", s / 3600, (s % 3600) / 60, s % 60),
        s => format!("· {}:{:02} left", s / 60, s % 60),
    }
}

/// One waiting card as a row; `open` says whether it starts open (a lone card does).
#[component]
pub fn InboxRow(gate: ApprovalRequest, now_ms: RwSignal<f64>, open: bool) -> impl IntoView {
    let sessions = use_context::<PageSessions>();
    let (request, concern) = (gate.body, gate.reviewer_concern);
    let route_state = gate.route_state.unwrap_or_default();
    let session_id = request.session_id.clone();
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
    let approval_id = request.approval_id.clone();
    let floor = request.reason == GateReason::SafetyFloor;
    view! {
        <li class="inbox-item" class:floor=floor data-testid="inbox-item"
            data-approval-id=approval_id.clone() data-session-id=session_id.as_str().to_owned()>
            <Pick request=request.clone()/>
            <details class="inbox-details" open=open on:toggle=focus_card_when_opened(approval_id.clone())>
                <RowLine request=request.clone() now_ms source/>
                <div class="inbox-card">
                    <ApprovalCard item=GateItem { request, resolution: None, reviewer_concern: concern, route_state } now_ms/>
                </div>
            </details>
            <a class="inbox-session" href=href data-testid="inbox-session">{session_title}</a>
        </li>
    }
}

/// The line itself: the `<summary>` that opens the card (Enter or Space, or a click).
#[component]
fn RowLine(
    request: ApprovalRequestBody,
    now_ms: RwSignal<f64>,
    source: Signal<Option<String>>,
) -> impl IntoView {
    let kind = RowKind::of(&request);
    let floor = request.reason == GateReason::SafetyFloor;
    let summary = shown::line_within(&request.summary, super::pickable::WHOLE_SUMMARY_CHARS);
    let expires = StoredValue::new(request.expires_at.clone());
    let left = Memo::new(move |_| {
        let now = now_ms.get();
        expires.with_value(|e| time_left(e, now))
    });
    let clicked = request.approval_id.clone();
    view! {
        <summary class="inbox-row" id=super::keys::row_id(&request.approval_id) data-testid="inbox-row"
            data-kind=request.kind.as_str() on:click=move |_| super::keys::ask_open(clicked.clone())>
            <span class=format!("inbox-kind kind-{}", request.look()) data-testid="inbox-kind">
                {move || kind.label(source.get().as_deref())}
            </span>
            <span class="inbox-summary" data-testid="inbox-summary" title=summary.clone()>{summary.clone()}</span>
            {floor.then(|| view! { <span class="badge sensitive" data-testid="inbox-sensitive">"Sensitive"</span> })}
            <span class="inbox-when muted" data-testid="inbox-when">
                "asked " <AgoAndClock at=request.created_at.clone()/> " " {move || left.get()}
            </span>
        </summary>
    }
}

/// The row's checkbox for the bulk bar, once the page's script runs (a form cannot answer
/// several cards). A card the bar may not answer ([`left_reason`]: sensitive, or to read in
/// full) has none, only its reason on hover.
#[component]
fn Pick(request: ApprovalRequestBody) -> impl IntoView {
    let selection = use_context::<Selection>();
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let left = left_reason(&request);
    let id = request.approval_id.clone();
    let label = format!("Select: {}", shown::line_within(&request.summary, 120));
    move || {
        let selection = selection?;
        if !hydrated.get() || left.is_some() {
            // Said only where the bar is (after hydration): without it, no row has a box.
            let why = left.filter(|_| hydrated.get()).map(LeftReason::tooltip);
            return Some(
                view! { <span class="inbox-pick-space" aria-hidden="true" title=why></span> }
                    .into_any(),
            );
        }
        let (checked_id, toggled_id) = (id.clone(), id.clone());
        Some(
            view! {
                <input type="checkbox" class="inbox-pick" data-testid="inbox-pick" aria-label=label.clone()
                    prop:checked=move || selection.is_picked(&checked_id)
                    on:change=move |ev| selection.pick(toggled_id.clone(), event_target_checked(&ev))/>
            }
            .into_any(),
        )
    }
}

/// When the person opens a row, its card takes focus, so its keys and buttons are next.
fn focus_card_when_opened(approval_id: ApprovalId) -> impl Fn(leptos::ev::Event) + 'static {
    move |ev| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let opened = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|el| el.has_attribute("open"));
            let asked = super::keys::take_open_request(&approval_id);
            if opened && asked {
                crate::ui::browser::focus(&format!("gate-{approval_id}"));
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (ev, &approval_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_card_gets_its_kind_in_one_word() {
        let mut card: ApprovalRequestBody = serde_json::from_value(serde_json::json!({
            "approval_id": "a", "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": "write_file", "class": "edit", "args": {}, "title": "Write", "summary": "s",
            "proposal_md": "", "proposal_html": "", "reason": "mode", "reason_detail": "",
            "allowed_decisions": ["approve"], "digest": "d", "timeout_outcome": "deny",
            "created_at": "2026-01-01T00:00:00.000Z", "expires_at": "2026-01-01T00:30:00.000Z"
        }))
        .unwrap();
        let word =
            |card: &ApprovalRequestBody, source: Option<&str>| RowKind::of(card).label(source);
        assert_eq!(word(&card, None), "Write");
        card.class = ToolClass::Exec;
        assert_eq!(word(&card, None), "Run");
        card.class = ToolClass::Config;
        assert_eq!(word(&card, None), "Config");
        card.kind = GateKind::Decision;
        card.class = ToolClass::Decision;
        assert_eq!(word(&card, None), "Decision");
        card.decision_kind = Some(DecisionKind::Plan);
        assert_eq!(word(&card, None), "Plan");
        card.kind = GateKind::External;
        card.class = ToolClass::Exec;
        assert_eq!(word(&card, Some("claude-code")), "Claude Code");
        assert_eq!(word(&card, None), "Outside");
        // An outside agent's question is a decision, whoever asks it.
        card.class = ToolClass::Decision;
        assert_eq!(word(&card, Some("mcp")), "Decision");
        card.kind = GateKind::Budget;
        assert_eq!(word(&card, None), "Budget");
    }

    #[test]
    fn the_rows_time_says_what_is_left() {
        let expires = Timestamp::from_unix_ms(30 * 60_000);
        let now = (3 * 60_000 + 48_000) as f64;
        assert_eq!(time_left(&expires, now), "· 26:12 left");
        assert_eq!(time_left(&expires, 0.0), "· until 00:30 UTC");
        assert_eq!(time_left(&expires, 31.0 * 60_000.0), "· expired");
        let later = Timestamp::from_unix_ms(2 * 3_600_000);
        assert_eq!(time_left(&later, now), "· 1:56:12 left");
    }
}
