//! Turns parked on a gate: approval id → the waiting turn's wake-up channel, per session.
//!
//! Only how a waiting task wakes up; the gate's truth is in the store, where resolving is a
//! compare-and-set. Whoever wins it (a tab, the timeout, a cancel) wakes the waiter with the
//! stored resolution; a loser reads the winner's resolution instead.

use tokio::sync::oneshot;

use super::{Handle, Hub, lock};
use crate::protocol::{ApprovalId, Resolution, SessionId};

/// What a parked turn is woken with.
#[derive(Debug)]
pub struct Wake {
    pub resolution: Resolution,
    /// The call's `tool_started` was committed with the resolution (the answer came while the
    /// turn was parked here), so the turn runs the tool without recording that again.
    pub tool_started: bool,
}

/// Removes the entry when the waiting turn stops waiting, however it stops; holds the
/// session's live state meanwhile.
pub struct ParkGuard {
    handle: Handle,
    approval_id: ApprovalId,
}

impl Drop for ParkGuard {
    fn drop(&mut self) {
        lock(&self.handle.session.parked).remove(&self.approval_id);
    }
}

impl Hub {
    /// Parks a waiter for `approval_id` in `session_id`; keep the guard alive while waiting.
    pub fn park(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> (ParkGuard, oneshot::Receiver<Wake>) {
        let handle = self.enter(session_id);
        let (tx, rx) = oneshot::channel();
        lock(&handle.session.parked).insert(approval_id.clone(), tx);
        (
            ParkGuard {
                handle,
                approval_id: approval_id.clone(),
            },
            rx,
        )
    }

    /// Hands a committed resolution to the waiter, if one is parked. `false` when none is
    /// (it already left, or the gate belongs to a turn this process is not running).
    pub fn wake(&self, session_id: &SessionId, resolution: Resolution) -> bool {
        self.wake_with(
            session_id,
            Wake {
                resolution,
                tool_started: false,
            },
        )
    }

    /// `wake`, saying whether the call's `tool_started` was committed with the resolution.
    pub fn wake_with(&self, session_id: &SessionId, wake: Wake) -> bool {
        let Some(handle) = self.get(session_id) else {
            return false;
        };
        let waiter = lock(&handle.session.parked).remove(&wake.resolution.approval_id);
        match waiter {
            Some(tx) => tx.send(wake).is_ok(),
            None => false,
        }
    }

    pub fn is_parked(&self, session_id: &SessionId, approval_id: &ApprovalId) -> bool {
        self.get(session_id)
            .is_some_and(|h| lock(&h.session.parked).contains_key(approval_id))
    }
}
