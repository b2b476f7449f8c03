//! What came of the answers given in this tab, on a page whose cards leave once answered (the
//! Inbox, where a phone's token login lands): "Approved by you, in this tab — `git status`",
//! kept in view after the card has gone, with a link to where it ran. Not a toast: it stays
//! until the page is left.

use leptos::prelude::*;

use super::edited::edited_summary;
use super::parts::outcome_text;
use crate::protocol::{ApprovalRequestBody, Decision, Resolution};
use crate::shown;
use crate::ui::gates::{CardBus, ClientId};

/// How many answers the page keeps saying, newest first.
const SHOWN: usize = 5;

/// The answers this tab sent (`CardBus::answered`) to cards `gates` has listed, newest first.
#[component]
pub fn AnsweredHere(#[prop(into)] gates: Signal<Vec<ApprovalRequestBody>>) -> impl IntoView {
    let bus = use_context::<CardBus>().unwrap_or_default();
    // Every card the page has listed: an answered one leaves the list, its words stay here.
    let seen = StoredValue::new(Vec::<ApprovalRequestBody>::new());
    let answered = Memo::new(move |_| {
        gates.with(|listed| {
            seen.update_value(|seen| {
                for gate in listed {
                    if !seen.iter().any(|s| s.approval_id == gate.approval_id) {
                        seen.push(gate.clone());
                    }
                }
            })
        });
        bus.answered.with(|answers| {
            answers
                .iter()
                .rev()
                .filter_map(|resolution| {
                    let request = seen.with_value(|seen| {
                        seen.iter()
                            .find(|g| g.approval_id == resolution.approval_id)
                            .cloned()
                    })?;
                    Some((request, resolution.clone()))
                })
                .take(SHOWN)
                .collect::<Vec<_>>()
        })
    });
    view! {
        <Show when=move || !answered.read().is_empty()>
            <div class="answered-here" role="status" aria-label="Answered here">
                <ul>
                    <For each=move || answered.get() key=|(r, _)| r.approval_id.clone() let:((request, resolution))>
                        <AnsweredLine request resolution/>
                    </For>
                </ul>
            </div>
        </Show>
    }
}

/// One answer: what was decided, by whom, on what call, and where to see what came of it.
#[component]
fn AnsweredLine(request: ApprovalRequestBody, resolution: Resolution) -> impl IntoView {
    let client = use_context::<ClientId>().unwrap_or_default();
    let what = match (&resolution.decision, &resolution.edits) {
        (Decision::Edit, Some(edits)) if !edits.is_string() => edited_summary(&request, edits),
        _ => request.summary.clone(),
    };
    let outcome = {
        let (request, resolution) = (request.clone(), resolution.clone());
        move || outcome_text(&request, &resolution, &client.0.get())
    };
    let approved = resolution.decision.lets_it_run();
    // An outside agent runs its own call: the session shows what it was told, not a result.
    let ran = approved && !request.kind.is_outside_call();
    let href = format!(
        "/sessions/{}#gate-{}",
        request.session_id, request.approval_id
    );
    view! {
        <li class=format!("answered-here-item decision-{}", resolution.decision.as_str())
            data-testid="answered-here" data-approval-id=request.approval_id.clone()
            data-decision=resolution.decision.as_str()>
            <span class="answered-here-mark" aria-hidden="true">{if approved { "✓" } else { "✕" }}</span>
            <span data-testid="answered-here-outcome">{outcome}</span>
            " — "
            <code class="answered-here-what">{shown::line(&what)}</code>
            " · "
            <a href=href data-testid="answered-here-link">
                {if ran { "See what ran" } else { "Open its session" }}
            </a>
        </li>
    }
}
