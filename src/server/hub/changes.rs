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
    use super::*;
    use crate::protocol::{Mode, TurnStatus};

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
