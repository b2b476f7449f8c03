//! A routed card's part (issue 41): who may answer it ("Needs 2 of: group maintainers"),
//! each approval so far with who and when, "escalated" once it went to more people, and
//! whether this page's reader may answer it at all (the same check the server runs,
//! `CardRoute::may_answer`).

use leptos::prelude::*;

use crate::protocol::{ApprovalRequestBody, CardEdit, GivenApproval, RouteState};
use crate::shown;
use crate::ui::when::AgoAndClock;

/// Whether the page's reader may answer this card: any card without a route, or one whose
/// route names them (its `escalate_to` too once it escalated).
pub fn may_answer_here(request: &ApprovalRequestBody, state: &RouteState) -> bool {
    let Some(route) = &request.route else {
        return true;
    };
    let reader = crate::ui::approver::page_approver();
    route.may_answer(&reader.answerer(), state.escalated)
}

fn approval_line(approval: GivenApproval) -> impl IntoView {
    let name = approval.shown_name();
    view! {
        <li class="card-approval" data-testid="card-approval" data-who=approval.who.clone()>
            "Approved by " {shown::text(&name)} " · " <AgoAndClock at=approval.at/>
        </li>
    }
}

/// An approver's edit, shown to the others: who, and what it changed (its diff, else the
/// edited call or text). Approving the card approves it as edited.
fn edit_view(edit: CardEdit) -> impl IntoView {
    let who = edit.by.shown_name();
    let changed = edit.edit_diff.clone().unwrap_or_else(|| match &edit.edits {
        serde_json::Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    });
    view! {
        <div class="card-route-edit" data-testid="card-route-edit">
            <p class="card-route-edit-by">"Edited by " {shown::text(&who)} " — approving approves it as edited:"</p>
            <pre class="card-route-edit-diff">{shown::text(&changed)}</pre>
        </div>
    }
}

/// The route's line, the approvals on the card as it is now, an approver's edit, and a word
/// for a reader who may not answer it. Nothing for a card without a route.
#[component]
pub fn RouteLine(request: ApprovalRequestBody, state: RouteState, may: bool) -> impl IntoView {
    let route = request.route.clone()?;
    let needs = route.needs(state.escalated);
    let approvals: Vec<GivenApproval> = state.counted(&request.digest).cloned().collect();
    Some(view! {
        <div class="card-route" data-testid="card-route" data-quorum=route.quorum.to_string()
            data-escalated=state.escalated.then_some("true")>
            <p class="card-route-needs" data-testid="card-route-needs">
                {shown::text(&needs)}
                {state.escalated.then(|| view! { " " <span class="chip escalated-chip" data-testid="escalated-chip">"escalated"</span> })}
            </p>
            {(!approvals.is_empty()).then(|| view! {
                <ul class="card-approvals">{approvals.into_iter().map(approval_line).collect_view()}</ul>
            })}
            {route.edit.clone().map(edit_view)}
            {(!may).then(|| view! {
                <p class="card-not-yours muted" data-testid="card-not-yours">"You may not answer this card."</p>
            })}
        </div>
    })
}
