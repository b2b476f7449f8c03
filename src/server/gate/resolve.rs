//! Committing a gate's resolution: the compare-and-set in the store, with its
//! `approval_resolved` event in the same transaction, then waking the parked turn.
//!
//! **Invariant:** a gate resolves exactly once. Whoever loses the compare-and-set (a tab, the
//! deadline, a cancel) reads the winner's resolution; nothing is appended for the loser.

use crate::protocol::{
    AnsweredBy, ApprovalRequest, Decision, EventBody, Resolution, Rule, Timestamp,
};
use crate::server::hub::Hub;
use crate::server::principal::actors;
use crate::server::store::{Commit, GateChange, NewEvent, StoreError};

/// Commits `resolution` (and the rule Allow always creates) and wakes the waiting turn.
pub async fn commit(
    hub: &Hub,
    session_id: &str,
    request: &ApprovalRequest,
    resolution: Resolution,
    new_rule: Option<Rule>,
) -> Result<Resolution, StoreError> {
    commit_with(hub, session_id, request, resolution, new_rule, None).await
}

/// Commits a resolution the policy gave at once; a standing rule that answered has its use
/// counted in the same transaction.
pub async fn commit_rule_use(
    hub: &Hub,
    session_id: &str,
    request: &ApprovalRequest,
    resolution: Resolution,
    rule_used: Option<String>,
) -> Result<Resolution, StoreError> {
    commit_with(hub, session_id, request, resolution, None, rule_used).await
}

/// The compare-and-set with what commits beside it, then the wake-up.
async fn commit_with(
    hub: &Hub,
    session_id: &str,
    request: &ApprovalRequest,
    resolution: Resolution,
    new_rule: Option<Rule>,
    rule_used: Option<String>,
) -> Result<Resolution, StoreError> {
    let event = NewEvent::new(
        Some(&request.turn_id),
        EventBody::ApprovalResolved(resolution.clone()),
    );
    let commit = Commit {
        gate: Some(GateChange::Resolve {
            resolution: resolution.clone(),
            new_rule,
        }),
        rule_used,
        ..Commit::default()
    };
    hub.commit(session_id, vec![event], commit, || ()).await?;
    hub.wake(session_id, resolution.clone());
    Ok(resolution)
}

/// Resolves a gate with the server's own answer (timeout, cancel) unless someone already
/// did; either way returns the resolution that stands, and wakes the waiting turn.
pub async fn by_server(
    hub: &Hub,
    session_id: &str,
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
