//! The approval card: what will happen, why it was gated, the proposal or diff, the exact
//! arguments, a live countdown, and only the answers the gate allows. Resolved cards collapse
//! to one line saying who or what resolved them.

pub mod answered_by;
mod answered_here;
mod decide;
mod diff;
pub mod edited;
mod panels;
mod parts;
mod pending;
mod reviewer;
mod route;
mod sensitive;

use leptos::prelude::*;

use crate::protocol::{ApprovalRequestBody, Decision, Resolution};
use crate::shown;
use crate::ui::gates::ClientId;
use crate::ui::transcript::GateItem;
use crate::ui::when::AgoAndClock;
use parts::{CardBody, answered_at_a_time, badge, outcome_text};
use pending::PendingCard;

pub use answered_here::AnsweredHere;
pub use parts::{CardPlace, who_answered};

/// `in_row`: the card heads its call's row, whose line below shows what ran (so the card
/// does not say the call again, nor mark an edit the row marks).
#[component]
pub fn ApprovalCard(
    item: GateItem,
    now_ms: RwSignal<f64>,
    #[prop(optional)] in_row: bool,
) -> impl IntoView {
    match item.resolution {
        Some(resolution) => {
            view! { <ResolvedCard request=item.request resolution in_row/> }.into_any()
        }
        None => view! {
            <PendingCard request=item.request concern=item.reviewer_concern route_state=item.route_state now_ms/>
        }
        .into_any(),
    }
}

#[component]
fn ResolvedCard(
    request: ApprovalRequestBody,
    resolution: Resolution,
    in_row: bool,
) -> impl IntoView {
    let client = use_context::<ClientId>().unwrap_or_default();
    let text = {
        let (request, resolution) = (request.clone(), resolution.clone());
        move || outcome_text(&request, &resolution, &client.0.get())
    };
    let at = answered_at_a_time(&resolution)
        .then(|| view! { " · " <AgoAndClock at=resolution.resolved_at.clone()/> });
    let decision = resolution.decision.as_str();
    // An edit of a call's arguments is shown (and marked) by the row's line of what ran; a
    // revised proposal is the card's to show.
    let edited_in_row = in_row
        && resolution.decision == Decision::Edit
        && resolution.edits.as_ref().is_some_and(|e| e.is_object());
    let edit = (resolution.decision == Decision::Edit && resolution.edits.is_some())
        .then(|| resolution.clone())
        .filter(|_| !edited_in_row);
    // The one line says what ran: the edited call, when there was an edit.
    let line = match edit.as_ref().and_then(|r| r.edits.as_ref()) {
        Some(serde_json::Value::String(_)) | None => request.summary.clone(),
        Some(edits) => edited::edited_summary(&request, edits),
    };
    let marker = edit.clone().map(|resolution| {
        let unchanged = edited::edit_unchanged(&request, &resolution);
        view! { <edited::EditedMarker resolution unchanged open=true/> }
    });
    view! {
        <article
            class=format!("card resolved kind-{} decision-{decision}", request.look())
            id=format!("gate-{}", request.approval_id)
            data-testid="approval-card"
            data-approval-id=request.approval_id.clone()
            data-kind=request.kind.as_str()
            data-state="resolved"
            data-decision=decision
        >
            <details>
                <summary class="card-line">
                    <span class="badge" data-testid="card-badge">{shown::text(&badge(&request))}</span>
                    <span class="chip" data-testid="card-outcome">{text}{at}</span>
                    {(!in_row).then(|| view! { <span class="card-summary muted" data-testid="card-summary">{shown::text(&line)}</span> })}
                    {edit.is_some().then(|| view! { <span class="edited-chip" data-testid="edited-chip">"edited"</span> })}
                </summary>
                {marker}
                {edited_in_row.then(|| view! {
                    <p class="card-proposed-note muted" data-testid="card-proposed-note">"What the agent proposed; what ran, as edited, is below."</p>
                })}
                <CardBody request=request.clone() edit=edit.clone()/>
            </details>
            <reviewer::ReviewerAnswer request=request.clone() resolution=resolution.clone()/>
        </article>
    }
}

#[cfg(test)]
mod tests {
    use super::parts::*;

    /// The hint names the agent's call: what in it could hide or pass for a quote is written
    /// out, on one line.
    #[test]
    fn the_rule_hint_writes_out_the_agents_pattern() {
        let hint = rule_hint_text(&crate::protocol::RuleSuggestion {
            tool: "Ba\u{200B}sh".into(),
            pattern: "git push \u{2066}origin\u{2069}❞ — safe\n\u{3000}x".into(),
            approved_before: 3,
        });
        assert_eq!(
            hint,
            "You approved Ba⟨U+200B⟩sh · git push ⟨U+2066⟩origin⟨U+2069⟩⟨U+275E⟩ — safe⏎⟨U+3000⟩x 3 times in this session — Always allow it?"
        );
    }
}
