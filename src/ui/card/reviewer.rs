//! The reviewer on a card (issue 40): on a waiting card it escalated in a trusted class, its
//! concern; on a card it answered, its reason and the person's "I would not have approved
//! this", which reports a false approval and ends the class's trust at once.
//!
//! The reviewer's words are shown as a quotation under a label of the page's own ("Reviewer's
//! concern:"), never as the label itself: a model reviewer's reason is model-written after
//! reading agent text, so its start must not pass for the page speaking. They are text
//! nodes (escaped), written out as `shown` writes an agent's.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::protocol::{AnsweredBy, ApprovalRequestBody, Resolution};
use crate::shown;

/// The reviewer's answer on a resolved card; nothing for any other answer.
#[component]
pub fn ReviewerAnswer(request: ApprovalRequestBody, resolution: Resolution) -> impl IntoView {
    (resolution.answered_by == AnsweredBy::Reviewer).then(|| {
        let reason = resolution.reason.clone().unwrap_or_default();
        let reported = RwSignal::new(None::<Result<String, String>>);
        let approval_id = request.approval_id.clone();
        let report = move |_| {
            let approval_id = approval_id.clone();
            spawn_local(async move {
                let said = crate::api::review_disagree(approval_id)
                    .await
                    .map_err(|e| crate::api::error_message(&e));
                reported.set(Some(said));
            });
        };
        view! {
            <div class="reviewer-answer" data-testid="reviewer-answer">
                <p class="reviewer-label">"Approved by the reviewer. Reviewer's reason:"</p>
                <ReviewerWords words=shown::text(&reason)/>
                {move || match reported.get() {
                    None => view! {
                        <button type="button" class="secondary" data-action="disagree" on:click=report.clone()>
                            "I would not have approved this"
                        </button>
                    }.into_any(),
                    Some(Ok(class)) => view! {
                        <p class="muted" data-testid="reviewer-reported">
                            {format!("Reported: the reviewer no longer answers {class} cards")}
                        </p>
                    }.into_any(),
                    Some(Err(why)) => view! { <p class="error" role="alert">{why}</p> }.into_any(),
                }}
            </div>
        }
    })
}

/// The reviewer's concern on a waiting card, just above its buttons: the page's label, then
/// the reviewer's words on one line, quoted, written out as `shown` writes an agent's (they
/// may echo the call it read).
#[component]
pub fn ReviewerConcern(concern: Option<String>) -> impl IntoView {
    concern.map(|concern| {
        view! {
            <div class="reviewer-concern" role="note" data-testid="reviewer-concern">
                <span class="reviewer-label">"Reviewer's concern:"</span>
                <ReviewerWords words=shown::line(&concern)/>
            </div>
        }
    })
}

/// The reviewer's own words, set apart as a quotation in monospace (plain text, never markup).
#[component]
fn ReviewerWords(words: String) -> impl IntoView {
    view! {
        <blockquote class="reviewer-words" data-testid="reviewer-words">
            <code>{words}</code>
        </blockquote>
    }
}
