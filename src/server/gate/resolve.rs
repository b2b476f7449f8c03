//! Committing a gate's resolution: the compare-and-set in the store, with its
//! `approval_resolved` event in the same transaction, then waking the parked turn. The one
//! place gates resolve, so it is also where the reviewer's prediction meets the answer
//! (`review::met`): carried on the resolution, recorded after the commit.
//!
//! **Invariants 29, 17** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): a gate resolves once; an answer may commit `tool_started` with it.

use crate::protocol::{
    AnsweredBy, ApprovalRequest, Decision, EventBody, Resolution, Rule, SessionId, Timestamp,
};
use crate::server::hub::{Hub, Wake};
use crate::server::principal::actors;
use crate::server::store::{Commit, GateChange, LeaseStep, NewEvent, StoreError};

/// Commits `resolution` (and the rule Allow always creates) and wakes the waiting turn.
pub async fn commit(
    hub: &Hub,
    session_id: &SessionId,
    request: &ApprovalRequest,
    resolution: Resolution,
    new_rule: Option<Rule>,
) -> Result<Resolution, StoreError> {
    commit_with(hub, session_id, request, resolution, new_rule).await
}

/// The compare-and-set with what commits beside it, then the wake-up.
async fn commit_with(
    hub: &Hub,
    session_id: &SessionId,
    request: &ApprovalRequest,
    resolution: Resolution,
    new_rule: Option<Rule>,
) -> Result<Resolution, StoreError> {
    let mut resolution = resolution;
    if let Some(reviews) = hub.reviews() {
        crate::server::review::met::attach(reviews.as_ref(), &mut resolution).await;
    }
    let resolved = NewEvent::new(
        Some(&request.turn_id),
        EventBody::ApprovalResolved(resolution.clone()),
    );
    let commit = Commit {
        gate: Some(GateChange::Resolve {
            resolution: resolution.clone(),
            new_rule,
        }),
        ..Commit::default()
    };
    crate::timeline::mark("resolve: gate checked");
    let tool_started = match starts_tool_here(hub, session_id, request, &resolution) {
        true => commit_and_start(hub, session_id, request, resolved, commit).await?,
        false => {
            hub.commit(session_id, vec![resolved], commit, || ())
                .await?;
            false
        }
    };
    hub.wake_with(
        session_id,
        Wake {
            resolution: resolution.clone(),
            tool_started,
        },
    );
    // What the answer met, recorded beside it: never in the answer's way.
    if let Some(reviews) = hub.reviews() {
        let (reviews, met) = (std::sync::Arc::clone(reviews), resolution.clone());
        tokio::spawn(
            async move { crate::server::review::met::record(reviews.as_ref(), &met).await },
        );
    }
    Ok(resolution)
}

/// Commits the answer with the call's `tool_started`, written for the turn and so fenced by
/// its lease like the turn's own writes; when another instance holds the turn now, the
/// answer alone (nothing is started for it). Whether the tool was started.
async fn commit_and_start(
    hub: &Hub,
    session_id: &SessionId,
    request: &ApprovalRequest,
    resolved: NewEvent,
    commit: Commit,
) -> Result<bool, StoreError> {
    let started = NewEvent::new(
        Some(&request.turn_id),
        EventBody::ToolStarted {
            call_id: request.body.call_id.clone(),
        },
    );
    let fenced = Commit {
        lease: Some(LeaseStep::Hold(request.turn_id.clone())),
        ..commit.clone()
    };
    match hub
        .commit(session_id, vec![resolved.clone(), started], fenced, || ())
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::LeaseLost(_)) => {
            hub.commit(session_id, vec![resolved], commit, || ())
                .await?;
            Ok(false)
        }
        Err(other) => Err(other),
    }
}

/// Whether the call's `tool_started` commits with this resolution: a tool gate answered so
/// that it runs, whose turn waits on this instance and is not being cancelled (that turn acts
/// on the answer at once). Anywhere else the turn records `tool_started` itself.
fn starts_tool_here(
    hub: &Hub,
    session_id: &SessionId,
    request: &ApprovalRequest,
    resolution: &Resolution,
) -> bool {
    request.body.kind.is_our_tool_call()
        && request.body.decision_kind.is_none()
        && resolution.decision.lets_it_run()
        && hub.is_parked(session_id, &request.body.approval_id)
        && !hub.is_cancelling(session_id, &request.turn_id)
}

/// Resolves a gate with the server's own answer (timeout, cancel) unless someone already
/// did; either way returns the resolution that stands, and wakes the waiting turn.
pub async fn by_server(
    hub: &Hub,
    session_id: &SessionId,
    request: &ApprovalRequest,
    decision: Decision,
    answered_by: AnsweredBy,
) -> Result<Resolution, StoreError> {
    // The server answers only for the deadline and for a cancel.
    let actor = match answered_by {
        AnsweredBy::Timeout => actors::TIMEOUT,
        _ => actors::CANCEL,
    };
    let resolution = Resolution::plain(
        &request.body.approval_id,
        decision,
        answered_by,
        actor,
        Timestamp::now(),
    );
    match commit(hub, session_id, request, resolution, None).await {
        Ok(r) => Ok(r),
        Err(StoreError::AlreadyResolved(winner)) => Ok(*winner),
        Err(other) => Err(other),
    }
}
