//! Escalation (issue 41): a routed card nobody answered by its `escalate_at` goes also to its
//! route's `escalate_to` — marked in the store with its audit entry (once), announced
//! (`approval_escalated`) and pushed to the people it adds. Its deadline and its timeout's
//! outcome stay as they were.
//!
//! One task watches every waiting card: at start (a card whose time passed while the server
//! was down escalates then), whenever a card opens, and at the next escalation time.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::Core;
use super::routes::APPROVAL_ESCALATED;
use crate::protocol::{ApprovalRequest, ChangeKind, EventBody, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::store::{NewEvent, StoreError};

/// The longest the task sleeps without looking again (a card opened on another instance is
/// seen by then).
const LOOK_AGAIN: Duration = Duration::from_secs(30);
/// A sleep that does not end by itself (a year).
const FOREVER: Duration = Duration::from_secs(365 * 86_400);

/// Who the audit names for an escalation: the route, on its clock.
const ESCALATION_ACTOR: &str = "escalation";

impl Core {
    /// Starts the task that escalates routed cards when their time comes.
    pub fn escalate_when_due(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        let mut changes = self.hub.changes();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let Some(wait) = next_look(&me).await else {
                    return;
                };
                // Until it is time, or a card opens while some route escalates (a server
                // without one reads nothing until then).
                let sleep = tokio::time::sleep(wait.unwrap_or(FOREVER));
                tokio::pin!(sleep);
                loop {
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = &mut sleep => break,
                        change = changes.recv() => match change {
                            Ok(change) if change.kind == ChangeKind::ApprovalOpened && escalating(&me) => break,
                            Ok(_) => {}
                            Err(RecvError::Lagged(_)) => break,
                            Err(RecvError::Closed) => return,
                        },
                    }
                }
            }
        });
    }

    /// Escalates every waiting card whose time has come; when the next one's comes (ms).
    async fn escalate_due(&self) -> Result<Option<i64>, StoreError> {
        let pending = self.repos.gates.pending_gates(None).await?;
        let now = Timestamp::now_ms();
        let mut next: Option<i64> = None;
        for gate in &pending {
            let Some(at) = gate
                .body
                .route
                .as_ref()
                .and_then(|r| r.escalate_at.as_ref())
            else {
                continue;
            };
            if at.has_passed(now) {
                self.escalate(gate).await?;
            } else if let Some(ms) = at.unix_ms() {
                next = Some(next.map_or(ms, |n| n.min(ms)));
            }
        }
        Ok(next)
    }

    /// Routes one card also to its `escalate_to`, once: the mark and its audit entry in one
    /// transaction, then the event every tab follows, then the pushes.
    async fn escalate(&self, gate: &ApprovalRequest) -> Result<(), StoreError> {
        let (session, id) = (&gate.body.session_id, &gate.body.approval_id);
        if self.repos.quorum.escalated_at(session, id).await?.is_some() {
            return Ok(());
        }
        let Some(route) = &gate.body.route else {
            return Ok(());
        };
        let audit = AuditDraft {
            actor: ESCALATION_ACTOR.into(),
            action: APPROVAL_ESCALATED,
            subject: id.to_string(),
            detail: json!({
                "session_id": session, "escalate_to": route.escalate_to,
                "escalate_at": route.escalate_at, "expires_at": gate.body.expires_at,
            }),
        };
        let now = Timestamp::now();
        if !self
            .repos
            .quorum
            .mark_escalated(session, id, &now, audit)
            .await?
        {
            return Ok(());
        }
        let event = NewEvent::new(
            Some(&gate.turn_id),
            EventBody::ApprovalEscalated {
                approval_id: id.clone(),
                escalate_to: route.escalate_to.clone(),
            },
        );
        let gates = self.repos.gates.as_ref();
        self.hub
            .commit_while_waiting(session, id, gates, vec![event])
            .await?;
        let title = match self.hub.session(session).await {
            Ok(Some(row)) => row.title,
            _ => String::new(),
        };
        let live = self.config();
        self.notifier
            .gate_escalated(&live.config, &gate.body, &title);
        tracing::info!(approval_id = %id, "a card nobody answered went also to its escalate_to");
        Ok(())
    }
}

/// Whether any route in force escalates.
fn escalating(me: &Weak<Core>) -> bool {
    me.upgrade().is_some_and(|core| {
        let live = core.config();
        live.config
            .approvals
            .route
            .iter()
            .any(|r| r.escalate_after_secs.is_some())
    })
}

/// Escalates what is due; how long until the next look (`Some(None)`: only when a card
/// opens; `None`: the server is gone).
async fn next_look(me: &Weak<Core>) -> Option<Option<Duration>> {
    let core = me.upgrade()?;
    let next = match core.escalate_due().await {
        Ok(next) => next,
        Err(e) => {
            tracing::warn!(error = %e, "could not escalate the cards that are due; trying again");
            return Some(Some(LOOK_AGAIN));
        }
    };
    drop(core);
    let wait = match next {
        Some(ms) => {
            let left = u64::try_from(ms.saturating_sub(Timestamp::now_ms())).unwrap_or(0);
            Some(Duration::from_millis(left).min(LOOK_AGAIN))
        }
        None if escalating(me) => Some(LOOK_AGAIN),
        None => None,
    };
    Some(wait.map(|w| w.max(Duration::from_millis(20))))
}
