//! Which turn a session is running, how to cancel it, and how to wait for its end. The log
//! says what a turn did; this says which task is doing it.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Handle, Hub, lock};
use crate::protocol::{SessionId, TurnId};

pub(super) struct RunningTurn {
    turn_id: TurnId,
    cancel: CancellationToken,
    finished: watch::Receiver<bool>,
    /// Set when the turn has decided how it ends; a cancel after that is too late.
    sealed: bool,
    /// Set when another instance took the turn over: this task must not write for it again.
    lost: bool,
}

/// Given to the task that runs a turn: holds the session's live state for the turn's life;
/// dropping it marks the turn finished for waiters.
pub struct TurnLease {
    pub turn_id: TurnId,
    pub cancel: CancellationToken,
    finished: watch::Sender<bool>,
    handle: Handle,
}

impl TurnLease {
    pub fn session_id(&self) -> &SessionId {
        self.handle.session_id()
    }
}

impl Drop for TurnLease {
    fn drop(&mut self) {
        let _ = self.finished.send(true);
        // Release the slot if this turn still holds it (the normal path released it already,
        // right after `turn_finished` committed).
        let mut running = lock(&self.handle.session.running);
        if running.as_ref().is_some_and(|t| t.turn_id == self.turn_id) {
            running.take();
        }
    }
}

impl Hub {
    /// Claims the session for a new turn; `None` when one is already running.
    pub fn try_start(&self, session_id: &SessionId, turn_id: &TurnId) -> Option<TurnLease> {
        let handle = self.enter(session_id);
        let cancel = CancellationToken::new();
        let (finished_tx, finished_rx) = watch::channel(false);
        {
            let mut running = lock(&handle.session.running);
            if running.is_some() {
                return None;
            }
            *running = Some(RunningTurn {
                turn_id: turn_id.clone(),
                cancel: cancel.clone(),
                finished: finished_rx,
                sealed: false,
                lost: false,
            });
        }
        Some(TurnLease {
            turn_id: turn_id.clone(),
            cancel,
            finished: finished_tx,
            handle,
        })
    }

    fn with_running<T>(
        &self,
        session_id: &SessionId,
        f: impl FnOnce(&mut Option<RunningTurn>) -> T,
    ) -> Option<T> {
        let handle = self.get(session_id)?;
        let mut running = lock(&handle.session.running);
        Some(f(&mut running))
    }

    /// Fixes how the turn ends: returns whether a cancel was requested, and makes any later
    /// cancel answer "no turn running", so a cancel that was answered 200 is never followed
    /// by a `completed` turn.
    pub fn seal(&self, session_id: &SessionId, turn_id: &TurnId) -> bool {
        self.with_running(session_id, |running| match running {
            Some(turn) if &turn.turn_id == turn_id => {
                turn.sealed = true;
                turn.cancel.is_cancelled()
            }
            _ => false,
        })
        .unwrap_or(false)
    }

    /// Releases the session, if `turn_id` still holds it.
    pub fn finish(&self, session_id: &SessionId, turn_id: &TurnId) {
        self.with_running(session_id, |running| {
            if running.as_ref().is_some_and(|t| &t.turn_id == turn_id) {
                running.take();
            }
        });
    }

    /// Whether `turn_id` is running in the session and a cancel has been requested for it.
    pub fn is_cancelling(&self, session_id: &SessionId, turn_id: &TurnId) -> bool {
        self.with_running(session_id, |running| {
            running
                .as_ref()
                .is_some_and(|t| &t.turn_id == turn_id && t.cancel.is_cancelled())
        })
        .unwrap_or(false)
    }

    pub fn running_turn_id(&self, session_id: &SessionId) -> Option<TurnId> {
        self.with_running(session_id, |running| {
            running.as_ref().map(|t| t.turn_id.clone())
        })
        .flatten()
    }

    /// The turns this instance runs, as `(session, turn)`.
    pub fn running_turns(&self) -> Vec<(SessionId, TurnId)> {
        self.live()
            .iter()
            .filter_map(|s| {
                lock(&s.running)
                    .as_ref()
                    .map(|t| (s.id.clone(), t.turn_id.clone()))
            })
            .collect()
    }

    /// Another instance took the turn over: its task here stops at its next await and writes
    /// nothing more (its writes would be refused anyway: the lease fences them).
    pub fn lose(&self, session_id: &SessionId, turn_id: &TurnId) {
        self.with_running(session_id, |running| {
            if let Some(turn) = running.as_mut().filter(|t| &t.turn_id == turn_id) {
                turn.lost = true;
                turn.cancel.cancel();
            }
        });
    }

    /// Whether the turn was taken over by another instance (see `lose`).
    pub fn is_lost(&self, session_id: &SessionId, turn_id: &TurnId) -> bool {
        self.with_running(session_id, |running| {
            running
                .as_ref()
                .is_some_and(|t| &t.turn_id == turn_id && t.lost)
        })
        .unwrap_or(false)
    }

    /// Signals cancellation; returns the turn id that was asked to stop.
    pub fn cancel(&self, session_id: &SessionId) -> Option<TurnId> {
        self.with_running(session_id, |running| {
            let turn = running.as_ref().filter(|t| !t.sealed)?;
            turn.cancel.cancel();
            Some(turn.turn_id.clone())
        })
        .flatten()
    }

    /// Cancels the session's turn (if any) and waits up to `limit` for its task to end.
    pub async fn cancel_and_wait(&self, session_id: &SessionId, limit: Duration) -> bool {
        let finished = self.with_running(session_id, |running| {
            running.as_ref().map(|turn| {
                turn.cancel.cancel();
                turn.finished.clone()
            })
        });
        match finished.flatten() {
            Some(finished) => wait_finished(finished, limit).await,
            None => true,
        }
    }
}

async fn wait_finished(mut finished: watch::Receiver<bool>, limit: Duration) -> bool {
    tokio::time::timeout(limit, finished.wait_for(|done| *done))
        .await
        .map(|r| r.is_ok())
        .unwrap_or(false)
        // A dropped sender also means the task is gone.
        || *finished.borrow()
}
