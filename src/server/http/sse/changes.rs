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
            let change = match received {
                Ok(change) => change,
                // Whatever was missed, one resync covers it.
                Err(broadcast::error::RecvError::Lagged(_)) => Change::resync(),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            return Some(frame(&change));
        }
    }
}

fn frame(change: &Change) -> SseEvent {
    let json = serde_json::to_string(change).unwrap_or_else(|_| r#"{"kind":"resync"}"#.into());
    SseEvent::default().event(CHANGE_EVENT).data(json)
}
