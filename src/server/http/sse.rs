//! The live event feed: replay from the cursor, then follow, with no gap and no duplicate;
//! and (`changes.rs`) the server-wide change stream the session list and the Inbox follow.
//!
//! **Invariant 5** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): only this module knows SSE framing; subscribe, replay, then follow.

mod changes;
mod slots;

pub use changes::changes;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use http::HeaderMap;
use serde::Deserialize;
use tokio::sync::broadcast;

use crate::protocol::{Event, SessionId};
use crate::server::core::Core;
use crate::server::http::error::ApiError;
use crate::server::hub::{FeedItem, event_json};
use crate::server::principal::Principal;
use crate::server::state::AppState;

pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);
const REPLAY_PAGE: u32 = 500;

#[derive(Deserialize)]
pub struct FeedQuery {
    after: Option<String>,
}

fn parse_cursor(raw: Option<&str>, name: &str) -> Result<u64, ApiError> {
    match raw.map(str::trim) {
        None | Some("") => Ok(0),
        Some(v) => v.parse().map_err(|_| {
            ApiError::InvalidRequest(format!("{name} must be a non-negative integer, got `{v}`"))
        }),
    }
}

pub async fn feed(
    State(state): State<AppState>,
    Path(sid): Path<String>,
    Query(query): Query<FeedQuery>,
    who: Option<axum::Extension<Principal>>,
    presented: Option<axum::Extension<crate::server::logins::Presented>>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let after = parse_cursor(query.after.as_deref(), "after")?;
    let last_event_id = parse_cursor(
        headers.get("last-event-id").and_then(|v| v.to_str().ok()),
        "Last-Event-ID",
    )?;
    let cursor = after.max(last_event_id);
    // A feed ends when the credential it was opened with stops authenticating as it did
    // (checked every few seconds): a token revoked, a browser signed out. The request was
    // authorized once; the stream must not outlive the credential. Without the presented
    // credential in hand there is nothing to check it by: refused.
    let token = Some(FeedToken::of_request(who, presented)?);
    let session = state
        .core
        .existing_session_id(&crate::server::core::ids::session_id(&sid)?)
        .await?;
    let subscription = state.core.subscribe(&session);
    let pump = Pump {
        core: state.core.clone(),
        session,
        last: cursor,
        live: subscription.receiver,
        _held: subscription.handle,
        ready: VecDeque::new(),
        caught_up: false,
        token,
        recheck: revoke_checks(),
    };
    // The response body polls the pump directly: no task or channel per subscriber between
    // the broadcast and the socket.
    let frames = futures::stream::unfold(pump, |mut pump| async move {
        let frame = pump.next_frame().await?;
        Some((Ok::<_, Infallible>(frame), pump))
    });
    Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")))
}

fn frame(event: &Event) -> SseEvent {
    frame_with(event, &event_json(event))
}

/// The frame of an event whose JSON is already encoded (live items carry theirs).
fn frame_with(event: &Event, json: &str) -> SseEvent {
    let frame = SseEvent::default().event(event.kind()).data(json);
    match event.seq {
        Some(seq) => frame.id(seq.to_string()),
        None => frame,
    }
}

/// One subscriber's position: the last seq sent, the live receiver, and frames read from the
/// store but not sent yet.
struct Pump {
    core: Arc<Core>,
    session: SessionId,
    last: u64,
    live: broadcast::Receiver<Arc<FeedItem>>,
    /// Keeps the session's live state while this feed is open.
    _held: crate::server::hub::Handle,
    ready: VecDeque<SseEvent>,
    caught_up: bool,
    /// The named token this feed was opened with (checked for revocation).
    token: Option<FeedToken>,
    recheck: tokio::time::Interval,
}

/// The exact credential a stream was opened with, and who it was then.
pub(super) struct FeedToken {
    presented: crate::server::logins::Presented,
    opened: Principal,
    /// This stream's place in its credential's count (`slots.rs`), given back when it ends;
    /// none for an admin credential (it may do anything a flood of streams could).
    _slot: Option<slots::Slot>,
}

impl FeedToken {
    /// The credential a stream's request presented; without it in hand there is nothing to
    /// check the stream by later: refused.
    pub(super) fn of_request(
        who: Option<axum::Extension<Principal>>,
        presented: Option<axum::Extension<crate::server::logins::Presented>>,
    ) -> Result<FeedToken, ApiError> {
        match (who.map(|w| w.0), presented.map(|p| p.0)) {
            (Some(opened), Some(presented)) => Ok(FeedToken {
                _slot: (opened.scope() != crate::server::principal::Scope::Admin)
                    .then(|| slots::Slot::take(&presented))
                    .transpose()?,
                presented,
                opened,
            }),
            _ => Err(ApiError::Unauthorized),
        }
    }

    /// Whether it still authenticates as it did: not revoked, not made again under its name
    /// with another secret, its stored scope still the one it had (a store that cannot answer
    /// keeps the stream: the next check asks again).
    pub(super) async fn still_valid(&self, core: &Core) -> bool {
        match core.who_presented(&self.presented).await {
            Ok(now) => now.as_ref() == Some(&self.opened),
            Err(_) => true,
        }
    }
}

/// The first check one period after the feed opens (the request was just authorized); a
/// stalled client that resumes gets one check, not a burst.
pub(super) fn revoke_checks() -> tokio::time::Interval {
    let mut checks =
        tokio::time::interval_at(tokio::time::Instant::now() + REVOKE_CHECK, REVOKE_CHECK);
    checks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    checks
}

/// How often a named token's open feed checks that the token still exists.
const REVOKE_CHECK: Duration = Duration::from_secs(5);

impl Pump {
    /// The next frame to send; `None` ends the stream (shutdown, session gone, or a store
    /// failure: the client reconnects from its cursor).
    async fn next_frame(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Some(frame);
            }
            if !self.caught_up {
                self.catch_up_page().await?;
                continue;
            }
            let item = tokio::select! {
                _ = self.core.shutdown().cancelled() => return None,
                _ = self.recheck.tick(), if self.token.is_some() => {
                    if !self.token_still_valid().await {
                        return None;
                    }
                    continue;
                }
                item = self.live.recv() => item,
            };
            match item {
                Ok(item) => match &*item {
                    FeedItem::Durable { event, json } => {
                        let seq = event.seq.unwrap_or(0);
                        if seq <= self.last {
                            continue;
                        }
                        if seq == self.last + 1 {
                            self.last = seq;
                            crate::timeline::mark("feed: frame out");
                            return Some(frame_with(event, json));
                        }
                        // A jump: something was missed; re-read the store from the cursor.
                        self.caught_up = false;
                    }
                    FeedItem::Transient {
                        base_seq,
                        event,
                        json,
                    } => {
                        if *base_seq >= self.last {
                            return Some(frame_with(event, json));
                        }
                    }
                },
                Err(broadcast::error::RecvError::Lagged(_)) => self.caught_up = false,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Whether the exact token this feed was opened with still authenticates as it did then:
    /// not revoked, not made again under its name with another secret, its stored scope still
    /// the one it had (a store that cannot answer keeps the feed: the next check asks again).
    async fn token_still_valid(&self) -> bool {
        match &self.token {
            Some(token) => token.still_valid(&self.core).await,
            None => true,
        }
    }

    /// Reads one page of stored events after the cursor into `ready`; a short page means the
    /// store has nothing more, so live events take over.
    async fn catch_up_page(&mut self) -> Option<()> {
        let page = match self
            .core
            .feed_page(&self.session, self.last, REPLAY_PAGE)
            .await
        {
            Ok(page) => page,
            Err(err) => {
                tracing::warn!(session = %self.session, error = %err, "feed replay failed; closing stream");
                return None;
            }
        };
        self.caught_up = page.len() < REPLAY_PAGE as usize;
        for event in &page {
            self.ready.push_back(frame(event));
            self.last = event.seq.unwrap_or(self.last);
        }
        Some(())
    }
}
