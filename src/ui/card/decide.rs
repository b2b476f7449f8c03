//! Sending a card's answer: once at a time, with the card's digest and this tab's id, a
//! passkey asked for and the same answer sent again where the step-up covers the card, and
//! the outcome said on the card (lost to another answer, refused, or not sent at all).

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::panels::Panel;
use crate::api;
use crate::protocol::{
    ApprovalId, DecideOutcome, Decision, DecisionRequest, ErrorBody, ErrorCode, Mode, Resolution,
    SessionId,
};
use crate::ui::gates::{CardBus, ClientId, ConnectionHealed};

/// A pending card's state, shared by its buttons, panels, keys and the answer being sent.
#[derive(Clone, Copy)]
pub struct CardState {
    pub panel: RwSignal<Panel>,
    pub sending: RwSignal<bool>,
    pub notice: RwSignal<Option<String>>,
    /// The answer could not be sent (not "someone else answered"): said until the connection
    /// is back, then cleared, since the card may be answered again.
    pub failed: RwSignal<bool>,
    /// Another answer won the race: the card shows it and has no buttons left, whether or
    /// not the feed ever brings that answer to this tab.
    pub lost: RwSignal<Option<Resolution>>,
    /// A sensitive card's first `a`: the second approves (a click on Approve always does).
    pub confirming: RwSignal<bool>,
    /// The mode a plan card's approval leaves plan mode for.
    pub execution_mode: RwSignal<Mode>,
}

impl CardState {
    pub fn new(execution_mode: Mode) -> CardState {
        CardState {
            panel: RwSignal::new(Panel::None),
            sending: RwSignal::new(false),
            notice: RwSignal::new(None),
            failed: RwSignal::new(false),
            lost: RwSignal::new(None),
            confirming: RwSignal::new(false),
            execution_mode: RwSignal::new(execution_mode),
        }
    }

    /// A sensitive card's first `a` counts only if the next key is its second; a failure to
    /// send is cleared when the connection heals.
    pub fn follow_the_page(self, bus: CardBus) {
        Effect::new(move |seen: Option<u64>| {
            let now = bus.other_key.get();
            if seen.is_some_and(|seen| seen != now) {
                self.confirming.set(false);
            }
            now
        });
        if let Some(healed) = use_context::<ConnectionHealed>() {
            Effect::new(move |seen: Option<u64>| {
                let now = healed.0.get();
                if seen.is_some_and(|seen| seen != now) && self.failed.get_untracked() {
                    self.failed.set(false);
                    self.notice.set(None);
                }
                now
            });
        }
    }
}

/// What a card's answer is sent for.
pub struct Target {
    pub session_id: SessionId,
    pub approval_id: ApprovalId,
    pub digest: String,
    pub is_plan: bool,
}

/// The card's one way to answer: a callback that sends a decision (ignored while one is on
/// its way or after another answer won).
pub fn use_decide(target: Target, state: CardState) -> Callback<DecisionRequest> {
    let client = use_context::<ClientId>().unwrap_or_default();
    let bus = use_context::<CardBus>().unwrap_or_default();
    let target = StoredValue::new(target);
    Callback::new(move |mut input: DecisionRequest| {
        if state.sending.get_untracked() || state.lost.with_untracked(Option::is_some) {
            return;
        }
        let (session_id, approval_id, is_plan) = target.with_value(|t| {
            input.digest = Some(t.digest.clone());
            (t.session_id.clone(), t.approval_id.clone(), t.is_plan)
        });
        input.client_id = Some(client.get_untracked());
        if is_plan && input.execution_mode.is_none() {
            let mode = state.execution_mode.get_untracked();
            input.execution_mode = Some(mode.as_str().to_owned());
        }
        state.sending.set(true);
        state.notice.set(None);
        state.failed.set(false);
        spawn_local(async move {
            let Some(outcome) = send(session_id, approval_id, input, state).await else {
                return;
            };
            show_outcome(outcome, state, bus);
        });
    })
}

/// Sends the answer; a card `approvals.require_passkey` covers is confirmed with a passkey
/// made for this card, then the same answer is sent with it. `None`: not sent (said why).
async fn send(
    session_id: SessionId,
    approval_id: ApprovalId,
    mut input: DecisionRequest,
    state: CardState,
) -> Option<Result<DecideOutcome, ErrorBody>> {
    let outcome = api::decide(session_id.clone(), approval_id.clone(), input.clone()).await;
    let needs_passkey =
        matches!(&outcome, Err(err) if err.error.code == ErrorCode::PasskeyRequired);
    if !needs_passkey || input.passkey.is_some() {
        return Some(outcome);
    }
    state
        .notice
        .set(Some("Confirm with your passkey…".to_owned()));
    // The very answer it will confirm (the challenge is made for its decision, edits, rule
    // and mode).
    let answer = serde_json::to_value(&input).unwrap_or_default();
    let passkey =
        crate::ui::browser::passkey_for_card(session_id.as_str(), approval_id.as_str(), &answer)
            .await;
    match passkey {
        Ok(passkey) => {
            state.notice.set(None);
            input.passkey = Some(passkey);
            Some(api::decide(session_id, approval_id, input).await)
        }
        Err(why) => {
            state.sending.set(false);
            state.notice.set(Some(format!("Not answered: {why}")));
            None
        }
    }
}

/// Says on the card what came of the answer. A decided card turns resolved when the feed
/// brings `approval_resolved`.
fn show_outcome(outcome: Result<DecideOutcome, ErrorBody>, state: CardState, bus: CardBus) {
    match outcome {
        Ok(DecideOutcome::Decided { resolution }) => bus.answered.update(|a| a.push(resolution)),
        // One approval of several: the card waits for the others (its `approval_given` event
        // shows who approved so far).
        Ok(DecideOutcome::Counted {
            approvals, quorum, ..
        }) => {
            state.sending.set(false);
            state.confirming.set(false);
            state.notice.set(Some(format!(
                "Your approval counted: {} of {quorum}",
                approvals.len()
            )));
        }
        Ok(DecideOutcome::Lost { resolution }) => {
            state.sending.set(false);
            let what = match resolution.decision {
                Decision::Approve | Decision::Edit | Decision::AllowAlways => {
                    "Already approved in another tab"
                }
                Decision::Deny => "Already denied in another tab",
                Decision::Timeout => "This approval expired",
                Decision::Cancelled => "This turn was cancelled",
            };
            state.notice.set(Some(what.to_owned()));
            state.confirming.set(false);
            bus.lost.update(|l| l.push(resolution.approval_id.clone()));
            state.lost.set(Some(resolution));
        }
        Err(err) => {
            state.sending.set(false);
            // Only a lost connection heals by itself; a refusal (a changed card, a bad edit)
            // stays said.
            state.failed.set(matches!(
                err.error.code,
                ErrorCode::Network
                    | ErrorCode::Internal
                    | ErrorCode::StorageUnavailable
                    | ErrorCode::ShuttingDown
            ));
            state.notice.set(Some(api::error_message(&err)));
        }
    }
}
