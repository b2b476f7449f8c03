//! The order a batch's calls go into the log: the model's. Each call of a parallel batch is
//! checked, decided and (when asked) put on a card on its own, so the quickest would be
//! recorded first and the page, and the conversation read back from the log, would list the
//! calls in another order than the model made them. A call's `tool_call` waits instead until
//! every call before it was recorded (or ended without being recorded). Only the recording
//! waits: cards still open side by side and calls still run in parallel.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::protocol::CallId;

/// The calls of the batch being recorded that are not in the log yet, in the model's order.
#[derive(Default)]
pub(super) struct CallOrder {
    not_recorded: Mutex<VecDeque<CallId>>,
    changed: tokio::sync::Notify,
}

impl CallOrder {
    /// A new batch: its calls, in the order the model made them.
    pub(super) fn begin(&self, calls: impl IntoIterator<Item = CallId>) {
        *self.lock() = calls.into_iter().collect();
        self.changed.notify_waiters();
    }

    /// Waits until every call before `call_id` in its batch is recorded or gone (at once for a
    /// call of no batch).
    pub(super) async fn wait_for_turn(&self, call_id: &CallId) {
        loop {
            // Registered before the check, so a change between the two is not missed.
            let changed = self.changed.notified();
            let next = self
                .lock()
                .iter()
                .position(|c| c == call_id)
                .is_none_or(|at| at == 0);
            if next {
                return;
            }
            changed.await;
        }
    }

    /// A guard that, when dropped, takes `call_id` off the list (recorded, or ended without
    /// being recorded: either way it holds up no one after it).
    pub(super) fn recorded_on_drop(&self, call_id: CallId) -> Recorded<'_> {
        Recorded {
            order: self,
            call_id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<CallId>> {
        self.not_recorded.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// See [`CallOrder::recorded_on_drop`].
pub(super) struct Recorded<'a> {
    order: &'a CallOrder,
    call_id: CallId,
}

impl Drop for Recorded<'_> {
    fn drop(&mut self) {
        let removed = {
            let mut waiting = self.order.lock();
            let before = waiting.len();
            waiting.retain(|c| c != &self.call_id);
            waiting.len() != before
        };
        if removed {
            self.order.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// The last call is ready first and the first last: they are still recorded first to last,
    /// and a call that ends without being recorded holds up no one.
    #[tokio::test]
    async fn calls_are_recorded_in_the_models_order_whoever_is_ready_first() {
        let order = Arc::new(CallOrder::default());
        let ids: Vec<CallId> = ["c1", "c2", "gone", "c3"]
            .into_iter()
            .map(CallId::from)
            .collect();
        order.begin(ids.clone());
        let log = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = ids
            .iter()
            .zip([30u64, 20, 5, 0])
            .map(|(id, ready_after)| {
                let (order, log, id) = (Arc::clone(&order), Arc::clone(&log), id.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ready_after)).await;
                    if id.as_str() == "gone" {
                        // Refused before its turn came: its guard goes, nothing is recorded.
                        drop(order.recorded_on_drop(id));
                        return;
                    }
                    order.wait_for_turn(&id).await;
                    let _recorded = order.recorded_on_drop(id.clone());
                    log.lock().unwrap().push(id.to_string());
                })
            })
            .collect();
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .expect("no call waits for good")
                .expect("the task ran");
        }
        assert_eq!(*log.lock().unwrap(), ["c1", "c2", "c3"]);
        // A call of no batch is never held up.
        tokio::time::timeout(
            Duration::from_secs(1),
            order.wait_for_turn(&CallId::from("other")),
        )
        .await
        .expect("not held up");
    }
}
