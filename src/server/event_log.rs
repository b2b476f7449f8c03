//! The event log as the rest of the server sees it: durable appends to the store, then a
//! per-session broadcast of what was committed, plus transient deltas that are never stored.
//!
//! **Invariant:** an event is published only after its commit, and events of one session are
//! published in seq order (one async lock per session spans commit → publish). That is what
//! lets the SSE feed join replay and live without gaps or duplicates.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::store::{Commit, NewEvent, Store, StoreError};
use crate::protocol::{Event, EventBody, Mode, Timestamp};

/// Live capacity per session; a subscriber that falls further behind re-reads the store.
const CHANNEL_CAPACITY: usize = 1024;

/// What subscribers of a session receive. Each carries its event's JSON, encoded once here
/// rather than once per subscriber (a thousand feeds on one session share one encoding).
#[derive(Debug)]
pub enum FeedItem {
    /// A committed event (has a seq).
    Durable { event: Event, json: String },
    /// A transient event; `base_seq` is the last committed seq when it was sent, so a feed that
    /// has already sent later events (e.g. the final `assistant_message`) can drop it as stale.
    Transient {
        base_seq: u64,
        event: Event,
        json: String,
    },
}

/// An event's wire JSON (what the SSE feed sends as `data`).
pub fn event_json(event: &Event) -> String {
    serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned())
}

struct SessionChannel {
    sender: broadcast::Sender<Arc<FeedItem>>,
    /// Held from commit to publish; its value is the last published seq.
    append_lock: tokio::sync::Mutex<()>,
    last_published: AtomicU64,
}

pub struct EventLog {
    store: Arc<dyn Store>,
    // A std mutex: held only to look up or insert an entry, never across an await.
    channels: Mutex<HashMap<String, Arc<SessionChannel>>>,
}

impl EventLog {
    pub fn new(store: Arc<dyn Store>) -> Self {
        EventLog {
            store,
            channels: Mutex::new(HashMap::new()),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    fn channel(&self, session_id: &str) -> Arc<SessionChannel> {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        channels
            .entry(session_id.to_owned())
            .or_insert_with(|| {
                let (sender, _) = broadcast::channel(CHANNEL_CAPACITY);
                Arc::new(SessionChannel {
                    sender,
                    append_lock: tokio::sync::Mutex::new(()),
                    last_published: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// Subscribe before reading the store, so nothing committed in between is missed.
    pub fn subscribe(&self, session_id: &str) -> broadcast::Receiver<Arc<FeedItem>> {
        self.channel(session_id).sender.subscribe()
    }

    pub async fn append(
        &self,
        session_id: &str,
        events: Vec<NewEvent>,
        set_mode: Option<Mode>,
    ) -> Result<Vec<Event>, StoreError> {
        self.commit(session_id, events, Commit::mode(set_mode), || ())
            .await
    }

    /// Appends with `commit`'s side changes (mode, gate, rule use) in the same transaction,
    /// runs `on_commit` after the commit but before anyone is told, then publishes.
    /// `on_commit` is how in-memory state (e.g. "no turn running") changes before a client can
    /// react to the event that announces it.
    pub async fn commit(
        &self,
        session_id: &str,
        events: Vec<NewEvent>,
        commit: Commit,
        on_commit: impl FnOnce(),
    ) -> Result<Vec<Event>, StoreError> {
        let channel = self.channel(session_id);
        let _ordered = channel.append_lock.lock().await;
        let stored = self.store.append(session_id, events, commit).await?;
        on_commit();
        for event in &stored {
            if let Some(seq) = event.seq {
                channel.last_published.store(seq, Ordering::Release);
            }
            if channel.sender.receiver_count() == 0 {
                continue; // nobody is watching this session right now
            }
            let json = event_json(event);
            let _ = channel.sender.send(Arc::new(FeedItem::Durable {
                event: event.clone(),
                json,
            }));
        }
        Ok(stored)
    }

    /// Sends a transient event to whoever is watching; it is never stored or replayed.
    pub fn publish_transient(&self, session_id: &str, turn_id: Option<&str>, body: EventBody) {
        let channel = self.channel(session_id);
        if channel.sender.receiver_count() == 0 {
            return;
        }
        let event = Event {
            seq: None,
            at: Timestamp::now(),
            turn_id: turn_id.map(str::to_owned),
            body,
        };
        let base_seq = channel.last_published.load(Ordering::Acquire);
        let json = event_json(&event);
        let _ = channel.sender.send(Arc::new(FeedItem::Transient {
            base_seq,
            event,
            json,
        }));
    }

    /// Drops a deleted session's channel: its subscribers see the stream close.
    pub fn forget(&self, session_id: &str) {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        channels.remove(session_id);
    }

    /// Every event of a session, oldest first, read in pages.
    pub async fn all_events(&self, session_id: &str) -> Result<Vec<Event>, StoreError> {
        self.events_since(session_id, 0).await
    }

    /// Every event with `seq > after`, oldest first, read in pages.
    pub async fn events_since(
        &self,
        session_id: &str,
        mut after: u64,
    ) -> Result<Vec<Event>, StoreError> {
        let mut all = Vec::new();
        loop {
            let page = self.store.events_after(session_id, after, 1000).await?;
            let Some(last) = page.last().and_then(|e| e.seq) else {
                return Ok(all);
            };
            after = last;
            let full = page.len() == 1000;
            all.extend(page);
            if !full {
                return Ok(all);
            }
        }
    }
}
