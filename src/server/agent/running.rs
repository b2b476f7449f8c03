//! Which session has a turn running right now, and how to cancel it or wait for its end.
//!
//! In memory only: the log says what a turn did; this says which task is doing it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

struct RunningTurn {
    turn_id: String,
    cancel: CancellationToken,
    finished: watch::Receiver<bool>,
    /// Set when the turn has decided how it ends; a cancel after that is too late.
    sealed: bool,
}

/// Given to the task that runs a turn; dropping it marks the turn finished for waiters.
pub struct TurnLease {
    pub turn_id: String,
    pub cancel: CancellationToken,
    finished: watch::Sender<bool>,
}

impl Drop for TurnLease {
    fn drop(&mut self) {
        let _ = self.finished.send(true);
    }
}

#[derive(Default)]
pub struct RunningTurns {
    // std Mutex: every critical section is a map operation, never an await.
    turns: Mutex<HashMap<String, RunningTurn>>,
}

impl RunningTurns {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RunningTurn>> {
        self.turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Claims the session for a new turn; `None` when one is already running.
    pub fn try_start(&self, session_id: &str, turn_id: &str) -> Option<TurnLease> {
        let mut turns = self.lock();
        if turns.contains_key(session_id) {
            return None;
        }
        let cancel = CancellationToken::new();
        let (finished_tx, finished_rx) = watch::channel(false);
        turns.insert(
            session_id.to_owned(),
            RunningTurn {
                turn_id: turn_id.to_owned(),
                cancel: cancel.clone(),
                finished: finished_rx,
                sealed: false,
            },
        );
        Some(TurnLease {
            turn_id: turn_id.to_owned(),
            cancel,
            finished: finished_tx,
        })
    }

    /// Fixes how the turn ends: returns whether a cancel was requested, and makes any later
    /// cancel answer "no turn running", so a cancel that was answered 200 is never followed
    /// by a `completed` turn.
    pub fn seal(&self, session_id: &str, turn_id: &str) -> bool {
        let mut turns = self.lock();
        match turns.get_mut(session_id) {
            Some(turn) if turn.turn_id == turn_id => {
                turn.sealed = true;
                turn.cancel.is_cancelled()
            }
            _ => false,
        }
    }

    /// Releases the session, if `turn_id` still holds it.
    pub fn finish(&self, session_id: &str, turn_id: &str) {
        let mut turns = self.lock();
        if turns.get(session_id).is_some_and(|t| t.turn_id == turn_id) {
            turns.remove(session_id);
        }
    }

    /// Whether `turn_id` is running in the session and a cancel has been requested for it.
    pub fn is_cancelling(&self, session_id: &str, turn_id: &str) -> bool {
        self.lock()
            .get(session_id)
            .is_some_and(|t| t.turn_id == turn_id && t.cancel.is_cancelled())
    }

    pub fn running_turn_id(&self, session_id: &str) -> Option<String> {
        self.lock().get(session_id).map(|t| t.turn_id.clone())
    }

    /// Signals cancellation; returns the turn id that was asked to stop.
    pub fn cancel(&self, session_id: &str) -> Option<String> {
        let turns = self.lock();
        let turn = turns.get(session_id).filter(|t| !t.sealed)?;
        turn.cancel.cancel();
        Some(turn.turn_id.clone())
    }

    /// Cancels the session's turn (if any) and waits up to `limit` for its task to end.
    pub async fn cancel_and_wait(&self, session_id: &str, limit: Duration) -> bool {
        let finished = {
            let turns = self.lock();
            match turns.get(session_id) {
                Some(turn) => {
                    turn.cancel.cancel();
                    turn.finished.clone()
                }
                None => return true,
            }
        };
        wait_finished(finished, limit).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_turn_per_session_and_cancel_wakes_waiters() {
        let turns = RunningTurns::default();
        let lease = turns.try_start("s", "t1").unwrap();
        assert!(turns.try_start("s", "t2").is_none());
        assert!(turns.try_start("other", "t3").is_some());
        assert_eq!(turns.running_turn_id("s").as_deref(), Some("t1"));
        let cancel = lease.cancel.clone();
        let task = tokio::spawn(async move {
            cancel.cancelled().await;
            drop(lease);
        });
        assert!(turns.cancel_and_wait("s", Duration::from_secs(5)).await);
        task.await.unwrap();
        turns.finish("s", "t-other");
        assert!(
            turns.running_turn_id("s").is_some(),
            "wrong turn id must not release"
        );
        turns.finish("s", "t1");
        assert!(turns.running_turn_id("s").is_none());
        assert_eq!(turns.cancel("s"), None);
    }
}
