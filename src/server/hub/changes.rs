//! The server-wide change stream: a notice whenever what the session list or the Inbox shows
//! may have changed (a session created, renamed or deleted; its mode; a turn started or ended;
//! a gate opened or resolved), so pages refetch on news instead of polling.
//!
//! Notices come from where the hub learns of each change: its commits (`feed.rs`), its session
//! rows (`log.rs`), and the other instances' appends on a shared store (`follow.rs`). They are
//! only a wake-up: a receiver that lags gets one `resync` (the door's to send), never a replay.

use tokio::sync::broadcast;

use super::Hub;
use crate::protocol::{Change, ChangeKind, Event, EventBody, SessionId};
use crate::server::store::StoreError;

/// Notices held for a slow reader before it lags (and is told to resync).
pub(super) const CAPACITY: usize = 256;
/// The most events of another instance's append read to tell what it changed.
const READ_AT_MOST: u64 = 1000;

/// What an event changes for the session list or the Inbox, if anything.
pub fn change_of(body: &EventBody) -> Option<ChangeKind> {
    match body {
        EventBody::UserMessage { .. } => Some(ChangeKind::TurnStarted),
        EventBody::TurnFinished { .. } => Some(ChangeKind::TurnFinished),
        EventBody::ModeChanged { .. } => Some(ChangeKind::ModeChanged),
        EventBody::ApprovalRequest(_) => Some(ChangeKind::ApprovalOpened),
        EventBody::ApprovalResolved(_) => Some(ChangeKind::ApprovalResolved),
        // A waiting card now carries the reviewer's concern: the Inbox lists it again.
        EventBody::ReviewConcern { .. } => Some(ChangeKind::ApprovalOpened),
        // An approval toward its quorum, or an escalation: the Inbox lists the card again.
        EventBody::ApprovalGiven { .. } | EventBody::ApprovalEscalated { .. } => {
            Some(ChangeKind::ApprovalOpened)
        }
        _ => None,
    }
}

/// The notices of committed events: one per kind, in the order they first appear.
fn notices_of(session_id: &SessionId, events: &[Event]) -> Vec<Change> {
    let mut kinds: Vec<ChangeKind> = Vec::new();
    for kind in events.iter().filter_map(|e| change_of(&e.body)) {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
        .into_iter()
        .map(|kind| Change::of(kind, session_id))
        .collect()
}

impl Hub {
    /// A receiver of every notice from now on (the `/changes` stream holds one).
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.shared.changes.subscribe()
    }

    /// Tells whoever listens; nobody listening costs nothing.
    pub(super) fn notice(&self, change: Change) {
        if self.shared.changes.receiver_count() > 0 {
            let _ = self.shared.changes.send(change);
        }
    }

    /// The notices of events this instance committed.
    pub(super) fn notice_committed(&self, session_id: &SessionId, events: &[Event]) {
        if self.shared.changes.receiver_count() == 0 {
            return;
        }
        for change in notices_of(session_id, events) {
            self.notice(change);
        }
    }

    /// The notices of another instance's append of `first..=last`: read from the store (only
    /// while someone listens); a read that fails, or a range too long to read, is a resync.
    pub(super) async fn notice_appended_elsewhere(
        &self,
        session_id: &SessionId,
        first: u64,
        last: u64,
    ) {
        if self.shared.changes.receiver_count() == 0 {
            return;
        }
        let count = last.saturating_sub(first).saturating_add(1);
        if count > READ_AT_MOST {
            return self.notice(Change::resync());
        }
        let limit = u32::try_from(count).unwrap_or(u32::MAX);
        let read: Result<Vec<Event>, StoreError> = self
            .log()
            .events_after(session_id, first.saturating_sub(1), limit)
            .await;
        match read {
            Ok(events) => self.notice_committed(session_id, &events),
            Err(err) => {
                tracing::debug!(session = %session_id, error = %err, "could not read another instance's append; resync");
                self.notice(Change::resync());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::protocol::{Mode, TurnStatus};
    use crate::server::config::Synchronous;
    use crate::server::store::NewEvent;
    use crate::server::store::sqlite::SqliteStore;

    fn said(text: &str) -> NewEvent {
        NewEvent::new(
            Some(&"turn".into()),
            EventBody::UserMessage {
                text: text.into(),
                approval_mode: Mode::Ask,
            },
        )
    }

    fn next(changes: &mut broadcast::Receiver<Change>) -> Option<(ChangeKind, String)> {
        let change = changes.try_recv().ok()?;
        let sid = change.session_id.map(SessionId::into_string);
        Some((change.kind, sid.unwrap_or_default()))
    }

    /// Two hubs over one store stand for two instances: what the other commits reaches this
    /// one's stream only when it is told of the append (a signal), read from the store.
    #[tokio::test]
    async fn sessions_commits_and_another_instances_appends_make_notices() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Arc::new(SqliteStore::open(&url, Synchronous::Normal).await.unwrap());
        let (here, there) = (Hub::new(store.clone(), None), Hub::new(store, None));
        let mut changes = here.changes();
        let sid: SessionId = "S".into();
        let said_by = |kind| Some((kind, "S".to_owned()));

        here.create_session(&crate::server::store::conformance::session("S"))
            .await
            .unwrap();
        assert_eq!(next(&mut changes), said_by(ChangeKind::SessionCreated));
        here.append(&sid, vec![said("hi")], None).await.unwrap();
        assert_eq!(next(&mut changes), said_by(ChangeKind::TurnStarted));
        assert_eq!(next(&mut changes), None);

        let stored = there
            .append(&sid, vec![said("elsewhere")], None)
            .await
            .unwrap();
        assert_eq!(next(&mut changes), None, "not told yet");
        let seq = stored[0].seq.unwrap();
        here.notice_appended_elsewhere(&sid, seq, seq).await;
        assert_eq!(next(&mut changes), said_by(ChangeKind::TurnStarted));

        assert!(here.rename_session(&sid, "Named", None).await.unwrap());
        assert_eq!(next(&mut changes), said_by(ChangeKind::SessionRenamed));
        assert!(
            !here
                .rename_session(&sid, "Again", Some("New session"))
                .await
                .unwrap()
        );
        assert_eq!(next(&mut changes), None, "a rename that changed nothing");
        assert!(here.delete_session(&sid).await.unwrap());
        assert_eq!(next(&mut changes), said_by(ChangeKind::SessionDeleted));
    }

    fn ev(seq: u64, body: EventBody) -> Event {
        Event {
            seq: Some(seq),
            at: "t".into(),
            turn_id: None,
            body,
        }
    }

    #[test]
    fn only_what_the_list_or_the_inbox_shows_makes_a_notice_once_per_kind() {
        let sid: SessionId = "s".into();
        let events = [
            ev(
                1,
                EventBody::UserMessage {
                    text: "hi".into(),
                    approval_mode: Mode::Ask,
                },
            ),
            ev(
                2,
                EventBody::AssistantMessage {
                    text: "a".into(),
                    html: String::new(),
                },
            ),
            ev(
                3,
                EventBody::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                },
            ),
            ev(
                4,
                EventBody::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                },
            ),
        ];
        let kinds: Vec<ChangeKind> = notices_of(&sid, &events).iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [ChangeKind::TurnStarted, ChangeKind::TurnFinished]);
        assert!(notices_of(&sid, &events[1..2]).is_empty());
    }
}
