//! `GET /api/v1/changes`: the server-wide change stream. One `change` message per notice
//! (`protocol::Change` as JSON: what kind of change, and the session), so the session list and
//! the Inbox refetch when something they show may have changed instead of polling.
//!
//! No ids and no replay: a notice only says "look again". A reader that falls behind gets one
//! `resync` notice; a client that reconnects refetches once on its own.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use tokio::sync::broadcast;

use super::{FeedToken, KEEP_ALIVE, revoke_checks};
use crate::protocol::Change;
use crate::server::core::Core;
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

/// The SSE event name of every notice.
pub const CHANGE_EVENT: &str = "change";

pub async fn changes(
    State(state): State<AppState>,
    who: Option<axum::Extension<Principal>>,
    presented: Option<axum::Extension<crate::server::logins::Presented>>,
) -> Result<impl IntoResponse, ApiError> {
    // Like a session's feed, the stream ends when its credential stops authenticating.
    let token = FeedToken::of_request(who, presented)?;
    let watch = Watch {
        live: state.core.changes(),
        core: state.core.clone(),
        token,
        recheck: revoke_checks(),
    };
    let frames = futures::stream::unfold(watch, |mut watch| async move {
        let frame = watch.next_frame().await?;
        Some((Ok::<_, Infallible>(frame), watch))
    });
    Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")))
}

/// One reader of the change stream.
struct Watch {
    core: Arc<Core>,
    live: broadcast::Receiver<Change>,
    token: FeedToken,
    recheck: tokio::time::Interval,
}

impl Watch {
    /// The next notice to send; `None` ends the stream (shutdown, or the credential gone).
    async fn next_frame(&mut self) -> Option<SseEvent> {
        loop {
            let received = tokio::select! {
                _ = self.core.shutdown().cancelled() => return None,
                _ = self.recheck.tick() => {
                    if !self.token.still_valid(&self.core).await {
                        return None;
                    }
                    continue;
                }
                received = self.live.recv() => received,
            };
            return notice_for(received, &mut self.live).map(|change| frame(&change));
        }
    }
}

/// The notice to send for what the receiver gave; `None` when the stream must end. A reader
/// that lagged gets one `resync` for whatever it missed, and for whatever is still queued
/// behind it (it starts again from now).
fn notice_for(
    received: Result<Change, broadcast::error::RecvError>,
    live: &mut broadcast::Receiver<Change>,
) -> Option<Change> {
    match received {
        Ok(change) => Some(change),
        Err(broadcast::error::RecvError::Lagged(_)) => {
            *live = live.resubscribe();
            Some(Change::resync())
        }
        Err(broadcast::error::RecvError::Closed) => None,
    }
}

fn frame(change: &Change) -> SseEvent {
    let json = serde_json::to_string(change).unwrap_or_else(|_| r#"{"kind":"resync"}"#.into());
    SseEvent::default().event(CHANGE_EVENT).data(json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ChangeKind;

    #[tokio::test]
    async fn a_reader_that_lagged_gets_one_resync_and_goes_on_from_now() {
        let (sender, mut live) = broadcast::channel(2);
        for _ in 0..5 {
            sender
                .send(Change::of(ChangeKind::TurnStarted, &"s".into()))
                .unwrap();
        }
        let received = live.recv().await;
        assert_eq!(notice_for(received, &mut live), Some(Change::resync()));
        assert!(live.try_recv().is_err(), "the backlog went with the resync");
        let renamed = Change::of(ChangeKind::SessionRenamed, &"s".into());
        sender.send(renamed.clone()).unwrap();
        let received = live.recv().await;
        assert_eq!(notice_for(received, &mut live), Some(renamed));
        drop(sender);
        let received = live.recv().await;
        assert_eq!(notice_for(received, &mut live), None);
    }
}
