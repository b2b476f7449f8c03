//! The log's reads and its session rows, through the hub: whoever is not the hub reads the log
//! here, and writes events only through `commit` (`feed.rs`).

use super::Hub;
use crate::protocol::{Change, ChangeKind, Event, SessionId};
use crate::server::store::{SessionRow, StoreError};

impl Hub {
    /// Whether the store can take writes and answer reads; `Err` says why not, in words.
    pub async fn health(&self) -> Result<(), String> {
        self.log().health().await
    }

    pub async fn create_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        self.log().create_session(row).await?;
        self.notice(Change::of(ChangeKind::SessionCreated, &row.id));
        Ok(())
    }

    /// Every session, newest first.
    pub async fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.log().list_sessions().await
    }

    pub async fn session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        self.log().get_session(id).await
    }

    /// Removes the session and its log; `false` when it did not exist.
    pub async fn delete_session(&self, id: &SessionId) -> Result<bool, StoreError> {
        let deleted = self.log().delete_session(id).await?;
        if deleted {
            self.notice(Change::of(ChangeKind::SessionDeleted, id));
        }
        Ok(deleted)
    }

    /// Renames the session (with `only_if`, only while its title is still that); whether it
    /// changed.
    pub async fn rename_session(
        &self,
        id: &SessionId,
        title: &str,
        only_if: Option<&str>,
    ) -> Result<bool, StoreError> {
        let renamed = self.log().set_session_title(id, title, only_if).await?;
        if renamed {
            self.notice(Change::of(ChangeKind::SessionRenamed, id));
        }
        Ok(renamed)
    }

    /// One page of events with `seq > after`, oldest first, at most `limit`.
    pub async fn events_after(
        &self,
        session_id: &SessionId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        self.log().events_after(session_id, after, limit).await
    }

    /// The seq where the turn holding `seq` starts (its `user_message`).
    pub async fn turn_start_at_or_before(
        &self,
        session_id: &SessionId,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.log().turn_start_at_or_before(session_id, seq).await
    }

    /// Sessions whose last turn never finished (restart recovery).
    pub async fn unfinished_turns(&self) -> Result<Vec<SessionId>, StoreError> {
        self.log().sessions_with_unfinished_turns().await
    }
}
