//! The Inbox's bulk bar: pick rows, then Approve or Deny the picked ones at once. Only a card
//! whose line is the whole of what it does can be picked ([`super::pickable`]): a sensitive
//! (safety-floor) card, or one to read in full (a file write, a decision, a setting…), is never
//! in a bulk answer; the bar says how many it leaves and why, and after an answer names them
//! and links to them. Each card is answered through the same decide path as its own buttons,
//! one after another, and each failure is said with its reason.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::{ApprovalId, ApprovalRequestBody, DecideOutcome, Decision, DecisionRequest};
use crate::shown;
use crate::ui::card::who_answered;
use crate::ui::gates::ClientId;
use crate::ui::left_for_you::LeftForYou;

use super::pickable::{can_pick, left_counts, left_note};

/// The rows picked for a bulk answer (only ones [`can_pick`] allows reach it).
#[derive(Clone, Copy)]
pub struct Selection(RwSignal<Vec<ApprovalId>>);

impl Selection {
    pub fn new() -> Self {
        Selection(RwSignal::new(Vec::new()))
    }

    pub fn is_picked(self, id: &ApprovalId) -> bool {
        self.0.read().contains(id)
    }

    pub fn pick(self, id: ApprovalId, picked: bool) {
        self.0.update(|all| {
            all.retain(|i| i != &id);
            if picked {
                all.push(id);
            }
        });
    }
}

impl Default for Selection {
    fn default() -> Self {
        Self::new()
    }
}

/// The cards a bulk answer reaches: the picked ones still waiting, in the list's order, and
/// only those [`can_pick`] allows (even if another's id was somehow picked).
pub fn bulk_targets(
    pending: &[ApprovalRequestBody],
    picked: &[ApprovalId],
) -> Vec<ApprovalRequestBody> {
    pending
        .iter()
        .filter(|card| can_pick(card) && picked.contains(&card.approval_id))
        .cloned()
        .collect()
}

/// What became of one card of a bulk answer.
#[derive(Clone, Debug, PartialEq)]
pub enum CardOutcome {
    Answered,
    /// Someone else was first; says who.
    AlreadyAnswered(String),
    /// The answer did not go through; says why.
    Failed(String),
}

/// The bar's report: `2 approved` then one line per card that was not, with its reason.
pub fn report(decision: Decision, outcomes: &[(String, CardOutcome)]) -> (String, Vec<String>) {
    let verb = if decision == Decision::Approve {
        "approved"
    } else {
        "denied"
    };
    let answered = outcomes
        .iter()
        .filter(|(_, o)| *o == CardOutcome::Answered)
        .count();
    let problems = outcomes
        .iter()
        .filter_map(|(summary, outcome)| match outcome {
            CardOutcome::Answered => None,
            CardOutcome::AlreadyAnswered(who) => Some(format!("{summary}: already answered {who}")),
            CardOutcome::Failed(why) => Some(format!("{summary}: not sent — {why}")),
        })
        .collect();
    (format!("{answered} {verb}"), problems)
}

/// Answers each card in turn through the decide server function.
async fn answer_each(
    cards: Vec<ApprovalRequestBody>,
    decision: Decision,
    why: Option<String>,
    client_id: String,
) -> Vec<(String, CardOutcome)> {
    let mut outcomes = Vec::with_capacity(cards.len());
    for card in cards {
        let input = DecisionRequest {
            digest: Some(card.digest.clone()),
            client_id: Some(client_id.clone()),
            reason: why.clone(),
            ..DecisionRequest::of(decision.as_str())
        };
        let outcome = match api::decide(card.session_id, card.approval_id, input).await {
            Ok(DecideOutcome::Decided { .. } | DecideOutcome::Counted { .. }) => {
                CardOutcome::Answered
            }
            Ok(DecideOutcome::Lost { resolution }) => {
                CardOutcome::AlreadyAnswered(who_answered(&resolution, &client_id))
            }
            Err(err) => CardOutcome::Failed(api::error_message(&err)),
        };
        outcomes.push((shown::line_within(&card.summary, 80), outcome));
    }
    outcomes
}

/// What the bar shows after an answer: the count and the failures.
#[derive(Clone, Default)]
struct Said {
    text: String,
    problems: Vec<String>,
}

/// The bar, below the list; shown once the page's script runs and two cards or more wait.
#[component]
pub fn InboxBulkBar(pending: Memo<Vec<ApprovalRequestBody>>) -> impl IntoView {
    let selection = expect_context::<Selection>();
    let client = use_context::<ClientId>().unwrap_or_default();
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let (busy, asking_reason) = (RwSignal::new(false), RwSignal::new(false));
    let said = RwSignal::new(None::<Said>);
    let left_ids = RwSignal::new(Vec::<ApprovalId>::new());
    let targets = Memo::new(move |_| bulk_targets(&pending.read(), &selection.0.read()));
    let answer = move |decision: Decision, why: Option<String>| {
        let cards = targets.get_untracked();
        left_ids.set(
            pending
                .get_untracked()
                .into_iter()
                .filter(|c| !can_pick(c))
                .map(|c| c.approval_id)
                .collect(),
        );
        busy.set(true);
        let client_id = client.get_untracked();
        spawn_local(async move {
            let outcomes = answer_each(cards, decision, why, client_id).await;
            let (text, problems) = report(decision, &outcomes);
            said.set(Some(Said { text, problems }));
            selection.0.set(Vec::new());
            busy.set(false);
        });
    };
    let left = Signal::derive(move || {
        let ids = left_ids.get();
        pending
            .get()
            .into_iter()
            .filter(|c| ids.contains(&c.approval_id))
            .collect::<Vec<_>>()
    });
    view! {
        <Show when=move || { hydrated.get() && pending.read().len() >= 2 }>
            <BarControls pending targets busy asking_reason answer/>
        </Show>
        <Show when=move || asking_reason.get()>
            <DenyReason count=Signal::derive(move || targets.read().len()) busy asking_reason answer/>
        </Show>
        <SaidLines said/>
        <LeftForYou left/>
    }
}

/// The bar's controls: pick every card it may answer, how many are picked, the two answers.
#[component]
fn BarControls(
    pending: Memo<Vec<ApprovalRequestBody>>,
    targets: Memo<Vec<ApprovalRequestBody>>,
    busy: RwSignal<bool>,
    asking_reason: RwSignal<bool>,
    answer: impl Fn(Decision, Option<String>) + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let selection = expect_context::<Selection>();
    let pickable = Memo::new(move |_| {
        pending
            .read()
            .iter()
            .filter(|c| can_pick(c))
            .map(|c| c.approval_id.clone())
            .collect::<Vec<_>>()
    });
    let left = Memo::new(move |_| left_counts(pending.read().iter()));
    let some_left = move || left.get() != (0, 0);
    let all_picked =
        move || !pickable.read().is_empty() && targets.read().len() == pickable.read().len();
    let none = move || busy.get() || targets.read().is_empty();
    view! {
        <div class="bulk-bar inbox-bulk" data-testid="bulk-bar" role="region" aria-label="Answer several cards">
            <label class="inbox-pick-all">
                <input type="checkbox" data-testid="pick-all" prop:checked=all_picked
                    disabled=move || pickable.read().is_empty()
                    on:change=move |ev| selection.0.set(if event_target_checked(&ev) { pickable.get_untracked() } else { Vec::new() })/>
                {move || if some_left() { "Select the others" } else { "Select all" }}
            </label>
            <span data-testid="bulk-picked">{move || format!("{} of {} selected", targets.read().len(), pending.read().len())}</span>
            {move || {
                let (sensitive, to_read) = left.get();
                left_note(sensitive, to_read).map(|note| view! {
                    <span class="bulk-note" data-testid="bulk-sensitive">{note}</span>
                })
            }}
            <button type="button" class="primary" data-action="approve-selected" disabled=none
                on:click=move |_| answer(Decision::Approve, None)>"Approve selected"</button>
            <button type="button" data-action="deny-selected" disabled=none
                on:click=move |_| asking_reason.set(true)>"Deny selected"</button>
        </div>
    }
}

/// Deny selected asks once for a reason, which every denied card carries.
#[component]
fn DenyReason(
    count: Signal<usize>,
    busy: RwSignal<bool>,
    asking_reason: RwSignal<bool>,
    answer: impl Fn(Decision, Option<String>) + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let reason = RwSignal::new(String::new());
    view! {
        <div class="bulk-reason" data-testid="bulk-reason">
            <label for="bulk-reason-input">{move || format!("Deny {} cards — why? (the agent reads it)", count.get())}</label>
            <input id="bulk-reason-input" data-testid="bulk-reason-input" type="text"
                prop:value=move || reason.get()
                on:input=move |ev| reason.set(event_target_value(&ev))/>
            <button type="button" class="danger" data-action="confirm-deny-all" disabled=move || busy.get()
                on:click=move |_| {
                    let why = reason.get_untracked().trim().to_owned();
                    asking_reason.set(false);
                    answer(Decision::Deny, (!why.is_empty()).then_some(why));
                }>"Deny them"</button>
            <button type="button" data-action="cancel-deny-all" on:click=move |_| asking_reason.set(false)>"Keep them"</button>
        </div>
    }
}

/// The count of a bulk answer, then each card it could not answer, with the reason.
#[component]
fn SaidLines(said: RwSignal<Option<Said>>) -> impl IntoView {
    move || {
        said.get().map(|said| {
            view! {
                <p class="bulk-said" role="status" data-testid="bulk-said">{said.text}</p>
                {(!said.problems.is_empty()).then(|| view! {
                    <ul class="bulk-problems" data-testid="bulk-problems">
                        {said.problems.into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
                    </ul>
                })}
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{GateKind, GateReason};

    /// A card of `class` asked for `reason`, its summary its id.
    fn card(id: &str, class: &str, reason: GateReason) -> ApprovalRequestBody {
        let mut card: ApprovalRequestBody = serde_json::from_value(serde_json::json!({
            "approval_id": id, "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": "shell", "class": class, "args": {}, "title": "Shell", "summary": id,
            "proposal_md": "", "proposal_html": "", "reason": "mode", "reason_detail": "",
            "allowed_decisions": ["approve"], "digest": "d", "timeout_outcome": "deny",
            "created_at": "2026-01-01T00:00:00.000Z", "expires_at": "2026-01-01T00:30:00.000Z"
        }))
        .unwrap();
        card.reason = reason;
        card
    }

    /// The ids `bulk_targets` answers when every card of `pending` was picked.
    fn targets_of_all(pending: &[ApprovalRequestBody]) -> Vec<String> {
        let picked: Vec<ApprovalId> = pending.iter().map(|c| c.approval_id.clone()).collect();
        bulk_targets(pending, &picked)
            .into_iter()
            .map(|c| c.approval_id.to_string())
            .collect()
    }

    #[test]
    fn a_sensitive_card_is_never_a_bulk_target_even_if_picked() {
        let pending = [
            card("a", "exec", GateReason::Mode),
            card("env", "exec", GateReason::SafetyFloor),
            card("b", "read", GateReason::Mode),
        ];
        let picked: Vec<ApprovalId> = vec!["b".into(), "env".into(), "a".into()];
        let ids: Vec<String> = bulk_targets(&pending, &picked)
            .into_iter()
            .map(|c| c.approval_id.to_string())
            .collect();
        // In the list's order, not the picking order; the floor card left out.
        assert_eq!(ids, ["a", "b"]);
        assert!(!can_pick(&pending[1]));
        // A card no longer waiting is not answered either.
        assert!(bulk_targets(&pending[..1], &["b".into()]).is_empty());
    }

    #[test]
    fn a_card_whose_line_is_not_all_it_does_is_never_a_bulk_target_even_if_picked() {
        let write = card("write list-1.txt", "edit", GateReason::Mode);
        let mut edit = card("edit a.rs", "edit", GateReason::Mode);
        edit.diff = Some("--- a.rs\n+++ a.rs\n-old\n+new\n".into());
        let mut decision = card("Which way?", "decision", GateReason::Mode);
        decision.kind = GateKind::Decision;
        decision.proposal_md = "1. Rewrite it all".into();
        let config = card("config_set ui.theme", "config", GateReason::Mode);
        let (run, read) = (
            card("shell: echo one", "exec", GateReason::Mode),
            card("read_file notes.md", "read", GateReason::Mode),
        );
        for unseen in [&write, &edit, &decision, &config] {
            assert!(!can_pick(unseen), "{} is pickable", unseen.summary);
        }
        let pending = [write, run, edit, decision, read, config];
        assert_eq!(
            targets_of_all(&pending),
            ["shell: echo one", "read_file notes.md"]
        );
    }

    #[test]
    fn a_card_whose_line_cuts_its_summary_is_never_a_bulk_target() {
        let mut long = card("long", "exec", GateReason::Mode);
        long.summary = format!("shell: echo {} ; rm -rf ~", "pad ".repeat(120));
        assert!(!can_pick(&long));
        assert!(bulk_targets(&[long], &["long".into()]).is_empty());
    }

    #[test]
    fn the_report_counts_answers_and_says_each_failure() {
        let outcomes = [
            ("shell: a".to_owned(), CardOutcome::Answered),
            (
                "shell: b".to_owned(),
                CardOutcome::AlreadyAnswered("in another tab or device".into()),
            ),
            ("shell: c".to_owned(), CardOutcome::Failed("offline".into())),
        ];
        let (text, problems) = report(Decision::Approve, &outcomes);
        assert_eq!(text, "1 approved");
        assert_eq!(
            problems,
            [
                "shell: b: already answered in another tab or device",
                "shell: c: not sent — offline"
            ]
        );
        assert_eq!(report(Decision::Deny, &outcomes[..1]).0, "1 denied");
    }
}
