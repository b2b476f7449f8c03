//! Startup recovery: every turn the last process left unfinished is resumed from the log.
//!
//! The resumed turn (see `resume.rs`) first finishes the calls it had recorded — pending gates
//! are parked again with their original deadline, expired ones resolve `timeout` at once, a
//! tool that had started is reported `interrupted` and never re-run — then asks the model
//! again and goes on to a normal `turn_finished`. A turn that died during a model call simply
//! makes that call again: model calls have no side effects.
//!
//! Session modes are checked too: a stored mode that does not parse falls back to `ask`
//! (fail closed) with a `mode_changed` event of source `restore`.

use crate::protocol::{Event, EventBody, Mode, ModeSource};
use crate::server::hub::{Hub, TurnLease};
use crate::server::store::{NewEvent, StoreError};

pub const INTERRUPTED_OUTPUT: &str = "the server stopped while this ran; it was not run again";

/// The last mode the log shows in force, if any.
pub fn last_mode_in_log(events: &[Event]) -> Option<Mode> {
    events.iter().rev().find_map(|e| match &e.body {
        EventBody::ModeChanged { next, .. } => Some(*next),
        EventBody::UserMessage { approval_mode, .. } => Some(*approval_mode),
        _ => None,
    })
}

/// Replaces unreadable mode records with `ask`; returns how many were repaired.
pub async fn restore_modes(hub: &Hub) -> Result<usize, StoreError> {
    let mut repaired = 0;
    for row in hub.sessions().await? {
        if row.approval_mode.known().is_some() {
            continue;
        }
        let events = hub.all_events(&row.id).await?;
        let previous = last_mode_in_log(&events).unwrap_or(Mode::Ask);
        tracing::warn!(session = %row.id, stored = %row.approval_mode, "unreadable approval mode; falling back to ask");
        let event = NewEvent::new(
            None,
            EventBody::ModeChanged {
                previous,
                next: Mode::Ask,
                source: ModeSource::Restore,
                actor: None,
            },
        );
        hub.append(&row.id, vec![event], Some(Mode::Ask)).await?;
        repaired += 1;
    }
    Ok(repaired)
}

/// Claims every turn the last process left unfinished, with the mode to resume it in.
pub async fn unfinished_turns(hub: &Hub) -> Result<Vec<(TurnLease, Mode)>, StoreError> {
    let sessions = hub.unfinished_turns().await?;
    let mut claimed = Vec::new();
    for session_id in sessions {
        let Some(row) = hub.session(&session_id).await? else {
            continue;
        };
        let events = hub.all_events(&session_id).await?;
        let Some(turn_id) = events
            .iter()
            .rev()
            .find(|e| matches!(e.body, EventBody::UserMessage { .. }))
            .and_then(|e| e.turn_id.clone())
        else {
            continue;
        };
        let Some(lease) = hub.try_start(&session_id, &turn_id) else {
            continue;
        };
        let mode = row.mode();
        tracing::info!(session = %session_id, turn = %turn_id, mode = mode.as_str(), "resuming a turn");
        claimed.push((lease, mode));
    }
    Ok(claimed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(body: EventBody) -> Event {
        Event {
            seq: Some(1),
            at: "t".into(),
            turn_id: None,
            body,
        }
    }

    #[test]
    fn the_last_mode_in_the_log_wins() {
        assert_eq!(last_mode_in_log(&[]), None);
        let events = vec![
            ev(EventBody::UserMessage {
                text: "a".into(),
                approval_mode: Mode::Yolo,
            }),
            ev(EventBody::ModeChanged {
                previous: Mode::Yolo,
                next: Mode::Plan,
                source: ModeSource::User,
                actor: None,
            }),
            ev(EventBody::AssistantMessage {
                text: "x".into(),
                html: String::new(),
            }),
        ];
        assert_eq!(last_mode_in_log(&events), Some(Mode::Plan));
    }
}
