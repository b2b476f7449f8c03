//! A turn at a gate: open it, wait for the resolution that stands, and act on it.
//!
//! **Invariant 28** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): the turn parks before its request commits, so no answer is missed.

use std::time::Duration;

use super::gates_text;
use super::turn::{Turn, TurnEnd};
use crate::protocol::{
    AnsweredBy, ApprovalRequest, Decision, DecisionKind, EventBody, GateReason, Mode, Resolution,
    Timestamp, ToolStatus,
};
use crate::server::principal::actors;
use crate::server::provider::ToolCallRequest;
use crate::server::store::{Commit, GateChange, LeaseStep, StoreError};

/// How long until a deadline (zero when it has passed or does not parse: fail closed).
fn until(expires_at: &Timestamp) -> Duration {
    Duration::from_millis(expires_at.ms_left(Timestamp::now_ms()))
}

impl Turn {
    /// Opens the gate (call + request + approvals row in one commit), with the route it
    /// matches (`Turn::route_card`), and waits for it. `call_event` is the gated call's
    /// `tool_call`; a budget gate has none.
    pub(super) async fn wait_for_gate(
        &self,
        call_event: Option<EventBody>,
        gate: &ApprovalRequest,
    ) -> Result<Resolution, TurnEnd> {
        let mut routed = gate.clone();
        self.route_card(&mut routed.body).await?;
        let gate = &routed;
        // Park before the request is visible, so an instant answer finds the waiter.
        let parked = self.deps.hub.park(&self.session_id, &gate.body.approval_id);
        let commit = Commit {
            gate: Some(GateChange::Open(Box::new(gate.clone()))),
            ..Commit::default()
        };
        let mut events: Vec<EventBody> = call_event.into_iter().collect();
        crate::timeline::mark("turn: card built");
        events.push(EventBody::ApprovalRequest(Box::new(gate.body.clone())));
        // Boxed: a parked call's future keeps only what the wait needs, not room for these.
        Box::pin(self.commit(events, commit)).await?;
        // The reviewer's prediction runs beside the card, never in its way.
        self.deps.reviews.predict_later(
            &self.deps.config().config,
            &gate.body,
            crate::server::review::shadow::BUILT_IN,
        );
        Box::pin(self.notify(gate)).await;
        self.await_resolution(gate, parked).await
    }

    /// Tells the person (when `[notify]` is set) that the gate waits for them.
    async fn notify(&self, gate: &ApprovalRequest) {
        let live = self.deps.config();
        if !self.deps.notifier.is_on(&live.config) {
            return;
        }
        let title = match self.deps.hub.session(&self.session_id).await {
            Ok(Some(row)) => row.title,
            _ => String::new(),
        };
        self.deps
            .notifier
            .gate_opened(&live.config, &gate.body, &title);
    }

    /// The gate's resolution as stored, if it has one.
    async fn stored_resolution(
        &self,
        gate: &ApprovalRequest,
    ) -> Result<Option<Resolution>, StoreError> {
        Ok(self
            .deps
            .gates
            .get_gate(&self.session_id, &gate.body.approval_id)
            .await?
            .and_then(|row| row.resolution))
    }

    /// Waits on a gate opened before a restart: parks again with its original deadline.
    pub(super) async fn rejoin_gate(&self, gate: &ApprovalRequest) -> Result<Resolution, TurnEnd> {
        let parked = self.deps.hub.park(&self.session_id, &gate.body.approval_id);
        // An answer committed before we parked woke nobody: read it from the store.
        if let Some(resolution) = self.stored_resolution(gate).await? {
            self.note_started_in_log(gate, &resolution).await?;
            return Ok(resolution);
        }
        self.await_resolution(gate, parked).await
    }

    /// The resolution that stands: a person's, the deadline's, or the cancel's — whichever
    /// wins the compare-and-set.
    async fn await_resolution(
        &self,
        gate: &ApprovalRequest,
        parked: (
            crate::server::hub::ParkGuard,
            tokio::sync::oneshot::Receiver<crate::server::hub::Wake>,
        ),
    ) -> Result<Resolution, TurnEnd> {
        let (_guard, answer) = parked;
        // The turn's wall-clock budget does not run while a person is being asked.
        let _paused = self.waits.pause();
        let deadline = tokio::time::Instant::now() + until(&gate.body.expires_at);
        // Boxed: only taken after the wait, so no parked future reserves room for it.
        let server_says = |decision, by| {
            Box::pin(crate::server::gate::resolve::by_server(
                &self.deps.hub,
                &self.session_id,
                gate,
                decision,
                by,
            ))
        };
        // With a shared store the answer may come from another instance: the hub wakes us
        // when it catches up with that instance's commit (on its notification, or at the
        // latest at its next sweep), exactly as a local answer does.
        let resolution = tokio::select! {
            answered = answer => match answered {
                Ok(wake) => {
                    crate::timeline::mark("turn: woken by the answer");
                    if wake.tool_started {
                        self.mark_started(&gate.body.call_id);
                    }
                    return Ok(wake.resolution);
                }
                // The sender went away without an answer; read what the store says.
                Err(_) => server_says(Decision::Cancelled, AnsweredBy::System).await?,
            },
            _ = tokio::time::sleep_until(deadline) => server_says(Decision::Timeout, AnsweredBy::Timeout).await?,
            _ = self.cancel.cancelled() => server_says(Decision::Cancelled, AnsweredBy::System).await?,
        };
        // Lost the race to a person's answer, which may have started the tool with it.
        Box::pin(self.note_started_in_log(gate, &resolution)).await?;
        Ok(resolution)
    }

    /// For an answer that did not come through the wake-up: whether the log shows the call's
    /// `tool_started` committed with it (see `gate::resolve`), so it is not recorded twice.
    async fn note_started_in_log(
        &self,
        gate: &ApprovalRequest,
        resolution: &Resolution,
    ) -> Result<(), StoreError> {
        if !gate.body.kind.is_our_tool_call() || !resolution.decision.lets_it_run() {
            return Ok(());
        }
        let call_id = &gate.body.call_id;
        let started = self
            .deps
            .hub
            .history(&self.session_id, |h| h.started(call_id))
            .await?;
        if started {
            // Ours only while this instance still holds the turn's lease: after a pause longer
            // than the lease, another instance may have taken the turn over, started the call
            // and run it. A write fenced by the lease (nothing in it) says which; a lost lease
            // ends the turn here, as any of its fenced writes would, before the call could run
            // a second time.
            if self.deps.coordination.is_some() {
                let fence = Commit {
                    lease: Some(LeaseStep::Hold(self.turn_id.clone())),
                    ..Commit::default()
                };
                self.deps
                    .hub
                    .commit(&self.session_id, Vec::new(), fence, || ())
                    .await?;
            }
            self.mark_started(call_id);
        }
        Ok(())
    }

    pub(super) async fn after_gate(
        &self,
        call: &ToolCallRequest,
        gate: &ApprovalRequest,
        resolution: Resolution,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        // The card's own window, which a config change since cannot alter.
        let window = crate::text::duration_words(gate_window_secs(gate));
        let no_run = |status: ToolStatus, output: String| async move {
            self.finish_without_running(call, Vec::new(), status, output)
                .await
        };
        if gate.body.decision_kind == Some(DecisionKind::Plan) {
            return self.after_plan(call, gate, &resolution).await;
        }
        if gate.body.kind.is_our_question() {
            let (status, output) = gates_text::decision_outcome(gate, &resolution, &window);
            return no_run(status, output).await;
        }
        // The card's file changed before the answer: put the same call again, on a fresh card.
        if resolution.decision == Decision::Cancelled
            && resolution.actor == actors::STALE
            && !self.cancel.is_cancelled()
        {
            return Box::pin(self.ask_again(call, gate)).await;
        }
        // A turn being cancelled runs nothing more, whatever the gate says.
        if self.cancel.is_cancelled() && resolution.decision.lets_it_run() {
            return no_run(
                ToolStatus::Cancelled,
                "the turn was cancelled; this was not run".into(),
            )
            .await;
        }
        // Only a person's approval of a floor card lets the tool open floor files.
        let floor_cleared = gate.body.reason == GateReason::SafetyFloor
            && resolution.answered_by == AnsweredBy::User;
        match resolution.decision {
            Decision::Approve | Decision::AllowAlways => {
                self.execute(call, &call.args, floor_cleared).await
            }
            Decision::Edit => {
                let edited = resolution
                    .edits
                    .clone()
                    .unwrap_or_else(|| call.args.clone());
                // The model is told what ran (as the history folded from the log tells it).
                if resolution.edits.as_ref().is_some_and(|e| e.is_object()) {
                    self.note_edited(&call.id, &edited);
                }
                self.execute(call, &edited, floor_cleared).await
            }
            refused => {
                let (status, output) = not_run(refused, &resolution, &window);
                no_run(status, output).await
            }
        }
    }

    /// The same call on a fresh card (the old one was closed because what it showed changed),
    /// with the same reason; acted on like the first.
    async fn ask_again(
        &self,
        call: &ToolCallRequest,
        stale: &ApprovalRequest,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let Some(tool) = crate::server::tools::get(&call.name) else {
            return Err(TurnEnd::Failed(format!("unknown tool `{}`", call.name)));
        };
        let mut body = self.card(tool, call, stale.body.reason, None).await?;
        body.reason_detail = stale.body.reason_detail.clone();
        let fresh = ApprovalRequest {
            reviewer_concern: None,
            route_state: None,
            turn_id: self.turn_id.clone(),
            body,
        };
        let resolution = self.wait_for_gate(None, &fresh).await?;
        self.after_gate(call, &fresh, resolution).await
    }

    /// A plan card: approving leaves plan mode (for the mode picked on the card) and the turn
    /// goes on executing; anything else keeps plan mode and tells the agent why.
    async fn after_plan(
        &self,
        call: &ToolCallRequest,
        gate: &ApprovalRequest,
        resolution: &Resolution,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let (status, output) = if resolution.decision.lets_it_run() {
            // Whoever answered (a person, the timeout), the step-up's limit holds: no plan
            // leaves for a mode `approvals.require_passkey` forbids.
            let step_up = self.deps.live.get().config.approvals.require_passkey;
            let wanted = step_up.effective_mode(
                resolution
                    .execution_mode
                    .or(gate.body.execution_mode)
                    .unwrap_or(Mode::Ask),
            );
            let now = super::plan::leave_plan(
                &self.deps.hub,
                &self.session_id,
                wanted,
                &resolution.actor,
            )
            .await
            .map_err(|e| TurnEnd::Failed(format!("could not leave plan mode: {e}")))?;
            self.set_mode(now);
            let revised = resolution
                .edits
                .as_ref()
                .and_then(|e| e.as_str())
                .map(|r| format!("\nThe person revised it; follow this version:\n{r}"))
                .unwrap_or_default();
            (
                ToolStatus::Ok,
                format!(
                    "plan approved: now in {} mode; carry the plan out{revised}",
                    now.label()
                ),
            )
        } else {
            plan_kept(resolution)
        };
        self.finish_without_running(call, Vec::new(), status, output)
            .await
    }
}

/// What the agent is told of a call its card did not let run.
fn not_run(decision: Decision, resolution: &Resolution, window: &str) -> (ToolStatus, String) {
    match decision {
        Decision::Deny => (
            ToolStatus::Denied,
            gates_text::denied(resolution.reason.as_deref()),
        ),
        Decision::Timeout => (
            ToolStatus::Timeout,
            format!("no answer within {window}; the call was not run"),
        ),
        _ => (
            ToolStatus::Cancelled,
            "the turn was cancelled while this waited for approval; it was not run".into(),
        ),
    }
}

/// What the agent is told of a plan its card did not approve: it stays in plan mode.
fn plan_kept(resolution: &Resolution) -> (ToolStatus, String) {
    match resolution.decision {
        Decision::Deny => (
            ToolStatus::Denied,
            format!(
                "{}; still in plan mode",
                gates_text::denied(resolution.reason.as_deref())
            ),
        ),
        Decision::Timeout => (
            ToolStatus::Timeout,
            "no answer in time: still in plan mode; nothing was carried out".to_owned(),
        ),
        _ => (
            ToolStatus::Cancelled,
            "the turn was cancelled while the plan waited; still in plan mode".to_owned(),
        ),
    }
}

/// How long a card waited for its answer: from when it opened to its deadline.
fn gate_window_secs(gate: &ApprovalRequest) -> u64 {
    let (opened, due) = (
        gate.body.created_at.unix_ms(),
        gate.body.expires_at.unix_ms(),
    );
    match (opened, due) {
        (Some(opened), Some(due)) => u64::try_from(due.saturating_sub(opened) / 1000).unwrap_or(0),
        _ => 0,
    }
}
