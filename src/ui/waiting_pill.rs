//! The "1 waiting ↓" pill of the session page: whenever a waiting card is out of sight (a
//! phone, 200 % zoom, a long transcript), a fixed button says how many are and which way;
//! it brings the first of them into view and focuses it. It goes when every waiting card is in
//! view or answered. An `IntersectionObserver` watches the waiting cards against the viewport
//! (the transcript's own scrolling clips them too).

use leptos::prelude::*;

use crate::protocol::{ApprovalId, ApprovalRequestBody};

/// Which way a card out of sight is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toward {
    Above,
    Below,
}

/// What the observer last said of each card: in view (`None`) or out of it, which way.
pub type Seen = Vec<(ApprovalId, Option<Toward>)>;

/// The waiting cards out of sight, in the page's order (a card not yet observed counts as in
/// view, so the pill does not flash while the observer starts).
pub fn out_of_sight(waiting: &[ApprovalId], seen: &Seen) -> Vec<(ApprovalId, Toward)> {
    waiting
        .iter()
        .filter_map(|id| {
            seen.iter()
                .find(|(s, _)| s == id)
                .and_then(|(_, toward)| *toward)
                .map(|toward| (id.clone(), toward))
        })
        .collect()
}

/// The pill's words: how many wait out of sight, and which way the first of them is.
pub fn pill_text(count: usize, toward: Toward) -> String {
    let arrow = match toward {
        Toward::Above => "↑",
        Toward::Below => "↓",
    };
    format!("{count} waiting {arrow}")
}

/// Records what the observer said of one card.
fn note(seen: &mut Seen, id: ApprovalId, toward: Option<Toward>) {
    match seen.iter_mut().find(|(s, _)| *s == id) {
        Some(entry) => entry.1 = toward,
        None => seen.push((id, toward)),
    }
}

#[component]
pub fn WaitingPill(pending: Memo<Vec<ApprovalRequestBody>>) -> impl IntoView {
    let seen = RwSignal::new(Seen::new());
    #[cfg(feature = "hydrate")]
    observe(pending, seen);
    #[cfg(not(feature = "hydrate"))]
    let _ = note;
    let off = Memo::new(move |_| {
        let waiting: Vec<ApprovalId> = pending
            .read()
            .iter()
            .map(|g| g.approval_id.clone())
            .collect();
        out_of_sight(&waiting, &seen.read())
    });
    view! {
        <div class="waiting-pill-region" aria-live="polite" data-testid="waiting-pill-region">
            {move || {
                let off = off.get();
                let (first, toward) = off.first()?.clone();
                let label = format!("{}: show the first", pill_text(off.len(), toward));
                Some(view! {
                    <button type="button" class="waiting-pill" data-testid="waiting-pill" title=label
                        on:click=move |_| crate::ui::left_for_you::go_to_card(first.as_str())>
                        {pill_text(off.len(), toward)}
                    </button>
                })
            }}
        </div>
    }
}

/// Watches the waiting cards: observed again (after the page has drawn them) whenever the
/// waiting set changes, each observer report noted in `seen`.
#[cfg(feature = "hydrate")]
fn observe(pending: Memo<Vec<ApprovalRequestBody>>, seen: RwSignal<Seen>) {
    use send_wrapper::SendWrapper;
    use wasm_bindgen::{JsCast, closure::Closure};
    use web_sys::{IntersectionObserver, IntersectionObserverEntry, IntersectionObserverInit};
    let report = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
        let noted: Vec<(ApprovalId, Option<Toward>)> = entries
            .iter()
            .filter_map(|e| e.dyn_into::<IntersectionObserverEntry>().ok())
            .filter_map(|e| {
                let id = ApprovalId::from(e.target().get_attribute("data-approval-id")?);
                Some((id, where_is(&e)))
            })
            .collect();
        seen.update(|seen| noted.into_iter().for_each(|(id, t)| note(seen, id, t)));
    });
    let options = IntersectionObserverInit::new();
    // On a phone the composer sits over the viewport's bottom: a card under it is not seen.
    options.set_root_margin("0px 0px -96px 0px");
    let Ok(observer) =
        IntersectionObserver::new_with_options(report.as_ref().unchecked_ref(), &options)
    else {
        return;
    };
    let kept = SendWrapper::new((observer, report));
    let watching = std::sync::Arc::new(kept);
    let each_change = watching.clone();
    Effect::new(move |_| {
        let ids: Vec<String> = pending
            .read()
            .iter()
            .map(|g| format!("gate-{}", g.approval_id))
            .collect();
        let watching = each_change.clone();
        request_animation_frame(move || {
            let observer = &watching.0;
            observer.disconnect();
            let document = web_sys::window().and_then(|w| w.document());
            for el in ids
                .iter()
                .filter_map(|id| document.as_ref()?.get_element_by_id(id))
            {
                observer.observe(&el);
            }
        });
    });
    on_cleanup(move || watching.0.disconnect());
}

/// In view, or which way out of it (the card's middle against the viewport's).
#[cfg(feature = "hydrate")]
fn where_is(entry: &web_sys::IntersectionObserverEntry) -> Option<Toward> {
    if entry.is_intersecting() {
        return None;
    }
    let card = entry.bounding_client_rect();
    let middle = |top: f64, bottom: f64| (top + bottom) / 2.0;
    let view_middle = entry
        .root_bounds()
        .map_or(0.0, |r| middle(r.top(), r.bottom()));
    Some(if middle(card.top(), card.bottom()) < view_middle {
        Toward::Above
    } else {
        Toward::Below
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pill_counts_cards_out_of_sight_in_page_order() {
        let id = |s: &str| ApprovalId::from(s);
        let waiting = [id("a"), id("b"), id("c"), id("d")];
        let seen: Seen = vec![
            (id("c"), Some(Toward::Below)),
            (id("a"), None),
            (id("b"), Some(Toward::Above)),
            // answered since: no longer counted
            (id("gone"), Some(Toward::Below)),
        ];
        // "d" not observed yet: not counted.
        assert_eq!(
            out_of_sight(&waiting, &seen),
            [(id("b"), Toward::Above), (id("c"), Toward::Below)]
        );
        assert_eq!(pill_text(1, Toward::Below), "1 waiting ↓");
        assert_eq!(pill_text(3, Toward::Above), "3 waiting ↑");
    }

    #[test]
    fn a_later_report_replaces_the_earlier_one() {
        let mut seen = Seen::new();
        note(&mut seen, "a".into(), Some(Toward::Below));
        note(&mut seen, "a".into(), None);
        assert_eq!(seen, vec![("a".into(), None)]);
    }
}
