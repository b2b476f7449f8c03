//! What a bulk answer left out, pointing at it: sensitive (safety-floor) cards are never
//! answered in bulk, nor, in the Inbox, cards to read in full (whose line is not all they do),
//! so after one the bar names each card it left with its reason and links to it — the link
//! opens it (an Inbox row), scrolls it into view and focuses it. Used by the session page's
//! bulk bar (which leaves only sensitive cards) and the Inbox's.

use leptos::prelude::*;

use crate::protocol::ApprovalRequestBody;
use crate::shown;
use crate::ui::inbox::pickable::LeftReason;

/// How many cards a bulk answer links to by name; more are counted, not listed.
const NAMED: usize = 3;

/// The line's words before the links: `Left for you: 1 sensitive card, 2 cards to read in
/// full — ` (`sensitive`, `to_read`: how many of each it left).
pub fn left_for_you_text(sensitive: usize, to_read: usize) -> String {
    let cards = |n: usize| if n == 1 { "card" } else { "cards" };
    let parts: Vec<String> = [
        (sensitive > 0).then(|| format!("{sensitive} sensitive {}", cards(sensitive))),
        (to_read > 0).then(|| format!("{to_read} {} to read in full", cards(to_read))),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!("Left for you: {} — ", parts.join(", "))
}

/// Opens the card's Inbox row if it is closed, brings the card into view and focuses it.
pub fn go_to_card(approval_id: &str) {
    let id = format!("gate-{approval_id}");
    crate::ui::browser::reveal(&id);
    crate::ui::browser::scroll_into_view(&id);
    crate::ui::browser::focus(&id);
}

/// The line, while any card it names still waits (`left`: those cards, in page order).
#[component]
pub fn LeftForYou(left: Signal<Vec<ApprovalRequestBody>>) -> impl IntoView {
    move || {
        let cards = left.get();
        (!cards.is_empty()).then(|| {
            let sensitive = cards
                .iter()
                .filter(|c| LeftReason::of(c) == LeftReason::Sensitive)
                .count();
            let links = cards
                .iter()
                .take(NAMED)
                .enumerate()
                .map(|(n, card)| {
                    let id = card.approval_id.to_string();
                    let go = id.clone();
                    let reason = LeftReason::of(card);
                    view! {
                        {(n > 0).then_some(", ")}
                        <a href=format!("#gate-{id}") data-testid="left-for-you-link" data-approval-id=id
                            data-left-reason=reason.key()
                            on:click=move |ev| { ev.prevent_default(); go_to_card(&go); }>
                            {shown::line_within(&card.summary, 80)}
                        </a>
                        {format!(" ({})", reason.words())}
                    }
                })
                .collect_view();
            let more = (cards.len() > NAMED).then(|| format!(" and {} more", cards.len() - NAMED));
            view! {
                <p class="left-for-you" role="status" data-testid="left-for-you">
                    {left_for_you_text(sensitive, cards.len() - sensitive)}{links}{more}
                </p>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_the_cards_left_by_reason() {
        assert_eq!(left_for_you_text(1, 0), "Left for you: 1 sensitive card — ");
        assert_eq!(
            left_for_you_text(2, 0),
            "Left for you: 2 sensitive cards — "
        );
        assert_eq!(
            left_for_you_text(0, 1),
            "Left for you: 1 card to read in full — "
        );
        assert_eq!(
            left_for_you_text(1, 2),
            "Left for you: 1 sensitive card, 2 cards to read in full — "
        );
    }
}
