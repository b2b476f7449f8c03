//! The live event feed: replay from the cursor, then follow, with no gap and no duplicate.
//!
//! **Invariant:** only this module knows SSE framing. The order of operations is what makes
//! the join exact: subscribe first, then replay from the store, then forward live events
//! whose seq is past the last one sent (a jump or a lagged receiver re-reads the store).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use http::HeaderMap;
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::protocol::Event;
use crate::server::core::Core;
use crate::server::error::ApiError;
use crate::server::event_log::FeedItem;
use crate::server::state::AppState;

const KEEP_ALIVE: Duration = Duration::from_secs(15);
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
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let after = parse_cursor(query.after.as_deref(), "after")?;
    let last_event_id = parse_cursor(
        headers.get("last-event-id").and_then(|v| v.to_str().ok()),
        "Last-Event-ID",
    )?;
    let cursor = after.max(last_event_id);
    let session = state.core.existing_session_id(&sid).await?;
    let live = state.core.log.subscribe(&session);
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(pump(state.core.clone(), session, cursor, live, tx));
    Ok(Sse::new(ReceiverStream::new(rx))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")))
}

type Outbox = mpsc::Sender<Result<SseEvent, Infallible>>;

fn frame(event: &Event) -> SseEvent {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned());
    let frame = SseEvent::default().event(event.kind()).data(data);
    match event.seq {
        Some(seq) => frame.id(seq.to_string()),
        None => frame,
    }
}

/// Sends every stored event after `last`; returns the new last seq, or `None` if the client
/// left or the store failed (the stream then ends and the client reconnects from its cursor).
async fn catch_up(core: &Core, session: &str, mut last: u64, out: &Outbox) -> Option<u64> {
    loop {
        let page = match core
            .log
            .store()
            .events_after(session, last, REPLAY_PAGE)
            .await
        {
            Ok(page) => page,
            Err(err) => {
                tracing::warn!(%session, error = %err, "feed replay failed; closing stream");
                return None;
            }
        };
        let full = page.len() == REPLAY_PAGE as usize;
        for event in &page {
            out.send(Ok(frame(event))).await.ok()?;
            last = event.seq.unwrap_or(last);
        }
        if !full {
            return Some(last);
        }
    }
}

async fn pump(
    core: Arc<Core>,
    session: String,
    cursor: u64,
    mut live: broadcast::Receiver<Arc<FeedItem>>,
    out: Outbox,
) {
    let Some(mut last) = catch_up(&core, &session, cursor, &out).await else {
        return;
    };
    loop {
        let item = tokio::select! {
            _ = core.shutdown.cancelled() => return,
            _ = out.closed() => return,
            item = live.recv() => item,
        };
        match item {
            Ok(item) => match &*item {
                FeedItem::Durable(event) => {
                    let seq = event.seq.unwrap_or(0);
                    if seq <= last {
                        continue;
                    }
                    if seq == last + 1 {
                        if out.send(Ok(frame(event))).await.is_err() {
                            return;
                        }
                        last = seq;
                    } else {
                        match catch_up(&core, &session, last, &out).await {
                            Some(l) => last = l,
                            None => return,
                        }
                    }
                }
                FeedItem::Transient { base_seq, event } => {
                    if *base_seq >= last && out.send(Ok(frame(event))).await.is_err() {
                        return;
                    }
                }
            },
            Err(broadcast::error::RecvError::Lagged(_)) => {
                match catch_up(&core, &session, last, &out).await {
                    Some(l) => last = l,
                    None => return,
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
