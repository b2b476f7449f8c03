//! Plan mode's record, as a turn changes it: where an approved plan returns to, and leaving
//! plan mode (a `mode_changed` event, under the session's serial lock).

use crate::protocol::{EventBody, Mode, ModeSource, SessionId};
use crate::server::hub::Hub;
use crate::server::store::{NewEvent, StoreError};

/// Where a plan returns to by default: the mode before plan, else `ask`.
pub async fn pre_plan_mode(hub: &Hub, session_id: &SessionId) -> Mode {
    match hub.session(session_id).await {
        Ok(Some(row)) => row
            .pre_plan_mode
            .and_then(|stored| stored.known())
            .filter(|m| *m != Mode::Plan)
            .unwrap_or(Mode::Ask),
        _ => Mode::Ask,
    }
}

/// Leaves plan mode for `next` (an approved plan card, answered by `actor`); a no-op when the
/// session already left plan mode. Returns the mode now in force.
pub async fn leave_plan(
    hub: &Hub,
    session_id: &SessionId,
    next: Mode,
    actor: &str,
) -> Result<Mode, StoreError> {
    let session = hub.enter(session_id);
    let _serial = session.serial().await;
    let row = hub
        .session(session_id)
        .await?
        .ok_or_else(|| StoreError::UnknownSession(session_id.to_string()))?;
    let previous = row.mode();
    if previous != Mode::Plan {
        return Ok(previous);
    }
    let event = NewEvent::new(
        None,
        EventBody::ModeChanged {
            previous,
            next,
            source: ModeSource::User,
            actor: (!actor.is_empty()).then(|| actor.to_owned()),
        },
    );
    hub.append(session_id, vec![event], Some(next)).await?;
    Ok(next)
}
