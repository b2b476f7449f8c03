//! Parked turns: approval id → the waiting turn's wake-up channel.
//!
//! The registry is only how a waiting task wakes up; the gate's truth is in the store, where
//! resolving is a compare-and-set. Whoever wins the CAS (a tab, the timeout, a cancel) wakes
//! the waiter with the stored resolution; a loser reads the winner's resolution instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::protocol::Resolution;

#[derive(Clone, Default)]
pub struct GateRegistry {
    // std Mutex: held for a map operation only, never across an await.
    parked: Arc<Mutex<HashMap<String, oneshot::Sender<Resolution>>>>,
}

/// Removes the entry when the waiting turn stops waiting, however it stops.
pub struct ParkGuard {
    registry: GateRegistry,
    approval_id: String,
}

impl Drop for ParkGuard {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.approval_id);
    }
}

impl GateRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Resolution>>> {
        self.parked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Parks a waiter for `approval_id`; keep the guard alive while waiting.
    pub fn park(&self, approval_id: &str) -> (ParkGuard, oneshot::Receiver<Resolution>) {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(approval_id.to_owned(), tx);
        (
            ParkGuard {
                registry: self.clone(),
                approval_id: approval_id.to_owned(),
            },
            rx,
        )
    }

    /// Hands a committed resolution to the waiter, if one is parked. `false` when none is
    /// (it already left, or the gate belongs to a turn this process is not running).
    pub fn wake(&self, resolution: Resolution) -> bool {
        let waiter = self.lock().remove(&resolution.approval_id);
        match waiter {
            Some(tx) => tx.send(resolution).is_ok(),
            None => false,
        }
    }

    pub fn is_parked(&self, approval_id: &str) -> bool {
        self.lock().contains_key(approval_id)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Decision;

    fn resolution(id: &str, decision: Decision) -> Resolution {
        Resolution::plain(
            id,
            decision,
            crate::protocol::AnsweredBy::User,
            "browser",
            crate::protocol::Timestamp::default(),
        )
    }

    #[tokio::test]
    async fn exactly_one_of_fifty_concurrent_wakers_reaches_the_waiter() {
        let registry = GateRegistry::default();
        let (guard, rx) = registry.park("g");
        let mut tasks = Vec::new();
        for i in 0..50 {
            let registry = registry.clone();
            tasks.push(tokio::spawn(async move {
                let decision = if i % 2 == 0 {
                    Decision::Approve
                } else {
                    Decision::Deny
                };
                registry.wake(resolution("g", decision))
            }));
        }
        let mut woke = 0;
        for t in tasks {
            if t.await.unwrap() {
                woke += 1;
            }
        }
        assert_eq!(woke, 1);
        assert!(rx.await.is_ok());
        drop(guard);
        assert!(registry.is_empty());
    }

    #[tokio::test]
    async fn dropping_the_guard_removes_the_entry_on_every_exit_path() {
        let registry = GateRegistry::default();
        {
            let (_guard, _rx) = registry.park("a");
            assert!(registry.is_parked("a"));
        }
        assert!(!registry.is_parked("a"));
        // A waiting task that is cancelled (aborted) also leaves no entry.
        let r = registry.clone();
        let task = tokio::spawn(async move {
            let (_guard, rx) = r.park("b");
            let _ = rx.await;
        });
        tokio::task::yield_now().await;
        while !registry.is_parked("b") {
            tokio::task::yield_now().await;
        }
        task.abort();
        let _ = task.await;
        assert!(registry.is_empty());
        assert!(!registry.wake(resolution("b", Decision::Approve)));
    }
}
