//! Turn ownership on a shared store: this instance renews the leases of the turns it runs and
//! takes over the turns whose lease lapsed (their instance died, was paused or cut off).
//!
//! A takeover resumes the turn from the log exactly as a restart does (`resume.rs`): a pending
//! gate keeps its id and deadline, a tool that had started is reported `interrupted` and never
//! re-run, an approved tool that never started runs once. A lease this instance lost (another
//! took the turn while this one was paused) stops the turn here without another write: the
//! lease fences every write of the turn in the store.

use super::service::Agent;
use crate::protocol::SessionId;
use crate::server::store::{LEASE_RENEW, LeasedTurn, StoreError};

/// What a renewal says about a turn running here.
#[derive(Debug, PartialEq)]
enum Standing {
    Held,
    CancelRequested,
    /// Another instance owns its lease now: it took the turn over.
    Lost,
}

/// Reads the turn's lease after a renewal. No lease at all is not a loss: the turn's message
/// is still being committed (the lease comes with it) or its end just was (the lease goes
/// with it).
fn standing(lease: Option<&LeasedTurn>) -> Standing {
    match lease {
        Some(lease) if !lease.mine => Standing::Lost,
        Some(lease) if lease.cancel_requested => Standing::CancelRequested,
        _ => Standing::Held,
    }
}

impl Agent {
    /// Renews and takes over every `LEASE_RENEW` until `stop` fires (a shared store only).
    pub async fn keep_leases(&self, stop: tokio_util::sync::CancellationToken) {
        let mut tick = tokio::time::interval(LEASE_RENEW);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(err) = self.renew_leases().await {
                tracing::warn!(error = %err, "could not renew this instance's turn leases");
            }
            if let Err(err) = self.take_over_lapsed().await {
                tracing::warn!(error = %err, "could not look for turns to take over");
            }
        }
    }

    /// Extends the leases of the turns running here; a turn whose lease another instance
    /// took stops here; a cancel requested elsewhere reaches the turn.
    async fn renew_leases(&self) -> Result<(), StoreError> {
        let hub = &self.deps().hub;
        let Some(coordination) = &self.deps().coordination else {
            return Ok(());
        };
        let running = hub.running_turns();
        if running.is_empty() {
            return Ok(());
        }
        let sessions: Vec<SessionId> = running.iter().map(|(s, _)| s.clone()).collect();
        let held = coordination.renew_leases(&sessions).await?;
        for (session_id, turn_id) in &running {
            let lease = held
                .iter()
                .find(|l| &l.session_id == session_id && &l.turn_id == turn_id);
            match standing(lease) {
                Standing::Held => {}
                Standing::CancelRequested => {
                    hub.cancel(session_id);
                }
                Standing::Lost => {
                    tracing::warn!(session = %session_id, turn = %turn_id, "lost this turn's lease; another instance drives it now");
                    hub.lose(session_id, turn_id);
                }
            }
        }
        Ok(())
    }

    /// Takes over the turns whose lease lapsed (and this instance's own leases on turns it
    /// does not run: a restart, or a turn whose task died); returns how many it started.
    pub(super) async fn take_over_lapsed(&self) -> Result<usize, StoreError> {
        let hub = &self.deps().hub;
        let Some(coordination) = &self.deps().coordination else {
            return Ok(0);
        };
        let running: Vec<SessionId> = hub.running_turns().into_iter().map(|(s, _)| s).collect();
        let claimed = coordination.claim_lapsed_turns(&running).await?;
        let mut started = 0;
        for LeasedTurn {
            session_id,
            turn_id,
            cancel_requested,
            ..
        } in claimed
        {
            let Some(row) = hub.session(&session_id).await? else {
                continue;
            };
            // Already running here: the claim only renewed it.
            let Some(lease) = hub.try_start(&session_id, &turn_id) else {
                continue;
            };
            let mode = row.mode();
            tracing::info!(session = %session_id, turn = %turn_id, mode = mode.as_str(), "taking a turn over");
            self.start(lease, mode);
            if cancel_requested {
                hub.cancel(&session_id);
            }
            started += 1;
        }
        Ok(started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(mine: bool, cancel_requested: bool) -> LeasedTurn {
        LeasedTurn {
            session_id: "s".into(),
            turn_id: "t".into(),
            mine,
            cancel_requested,
        }
    }

    #[test]
    fn only_a_lease_held_by_another_instance_is_a_loss() {
        assert_eq!(
            standing(None),
            Standing::Held,
            "starting or ending: not lost"
        );
        assert_eq!(standing(Some(&lease(true, false))), Standing::Held);
        assert_eq!(
            standing(Some(&lease(true, true))),
            Standing::CancelRequested
        );
        assert_eq!(standing(Some(&lease(false, false))), Standing::Lost);
        assert_eq!(standing(Some(&lease(false, true))), Standing::Lost);
    }
}
