//! What the doors read besides operations: a session's feed (subscribe, then pages of the log),
//! the store's health, and the server's life (shutdown, recovery, the other instances).

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Core;
use crate::protocol::{Event, SessionId, TurnId};
use crate::server::hub::Subscription;
use crate::server::store::{Signal, StoreError};

impl Core {
    /// A live subscription to an existing session's events (subscribe before reading pages,
    /// so nothing committed in between is missed).
    pub fn subscribe(&self, session_id: &SessionId) -> Subscription {
        self.hub.subscribe(session_id)
    }

    /// The server-wide change stream: a notice whenever what the session list or the Inbox
    /// shows may have changed.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<crate::protocol::Change> {
        self.hub.changes()
    }

    /// One page of the session's stored events with `seq > after`, oldest first.
    pub async fn feed_page(
        &self,
        session_id: &SessionId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        self.hub.events_after(session_id, after, limit).await
    }

    /// Whether the store can take writes and answer reads; `Err` says why not, in words.
    pub async fn health(&self) -> Result<(), String> {
        self.hub.health().await
    }

    /// Fired once on graceful shutdown.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// How many sessions have live state right now (the bench's check that nothing leaks).
    pub fn live_sessions(&self) -> usize {
        self.hub.live_sessions()
    }

    /// The turn running in the session on this instance, if any.
    pub fn running_turn_id(&self, session_id: &SessionId) -> Option<TurnId> {
        self.hub.running_turn_id(session_id)
    }

    /// The conversation as the model is sent it, rebuilt from the log if it is not live.
    pub async fn conversation(
        &self,
        session_id: &SessionId,
    ) -> Result<Vec<crate::server::conversation::ChatMessage>, StoreError> {
        self.hub
            .history(session_id, |h| {
                h.messages().iter().map(|m| (**m).clone()).collect()
            })
            .await
    }

    /// Several instances on one database: follows the others' commits and keeps this one's
    /// turn leases (taking over the turns of instances that stopped), until shutdown.
    pub fn share_with_others(
        self: &std::sync::Arc<Self>,
        signals: mpsc::UnboundedReceiver<Signal>,
    ) {
        self.hub.follow(signals, self.shutdown.clone());
        let leases = std::sync::Arc::clone(self);
        let stop = self.shutdown.clone();
        tokio::spawn(async move { leases.agent.keep_leases(stop).await });
    }

    /// After a start: repairs unreadable modes and resumes the turns the last run left
    /// unfinished; `(repaired, resumed)`.
    pub async fn recover_turns(&self) -> Result<(usize, usize), StoreError> {
        let repaired = self.agent.restore_modes().await?;
        let resumed = self.agent.resume_unfinished().await?;
        Ok((repaired, resumed))
    }

    /// Ends every turn task as a crash would, waiting up to `limit`; `false` when some were
    /// still stopping.
    pub async fn stop_turns(&self, limit: std::time::Duration) -> bool {
        self.agent.stop(limit).await
    }
}
