//! Keeping this instance's hub in step with the others on a shared store: their commits reach
//! this instance's subscribers and wake the turns parked here, and what they change reaches
//! this instance's change stream; their cancel requests reach the turns running here.
//!
//! Notifications only wake: what was committed is always read from the store by seq, so a
//! lost notification delays an event (until the sweep, every `SWEEP`) but never loses or
//! reorders it.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Hub;
use crate::server::store::Signal;

/// How often watched sessions are compared with the store even without a notification.
pub const SWEEP: Duration = Duration::from_secs(2);

impl Hub {
    /// Follows the other instances' signals until `stop` fires.
    pub fn follow(&self, mut signals: mpsc::UnboundedReceiver<Signal>, stop: CancellationToken) {
        let hub = self.clone();
        tokio::spawn(async move {
            let mut sweep = tokio::time::interval(SWEEP);
            sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let outcome = tokio::select! {
                    () = stop.cancelled() => return,
                    signal = signals.recv() => match signal {
                        Some(Signal::Appended { session_id, first, last }) => {
                            hub.notice_appended_elsewhere(&session_id, first, last).await;
                            hub.catch_up(&session_id, Some(first)).await
                        }
                        Some(Signal::CancelRequested { session_id }) => {
                            hub.cancel(&session_id);
                            Ok(())
                        }
                        Some(Signal::Missed) => {
                            hub.notice(crate::protocol::Change::resync());
                            hub.sweep().await
                        }
                        None => return,
                    },
                    _ = sweep.tick() => hub.sweep().await,
                };
                if let Err(err) = outcome {
                    tracing::warn!(error = %err, "could not catch up with the other instances");
                }
            }
        });
    }
}
