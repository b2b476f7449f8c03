//! The session's log as live work sees it: durable appends to the store, then a broadcast of
//! what was committed to whoever watches, plus transient deltas that are never stored.
//!
//! **Invariant 5** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): an event is published only after its commit, in seq order.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::broadcast;

use super::{Handle, Hub, lock};
use crate::protocol::{Event, EventBody, Mode, SessionId, Timestamp, TurnId};
use crate::server::store::{Commit, NewEvent, StoreError};

/// Live capacity per watched session; a subscriber that falls further behind re-reads the
/// store.
const CHANNEL_CAPACITY: usize = 1024;
/// Events read per page while catching up from the store.
const PAGE: u32 = 1000;

/// Sends committed events to the session's subscribers (if any) and notes the last seq.
fn publish(handle: &Handle, events: &[Event]) {
    let sender = handle.sender();
    for event in events {
        let Some(seq) = event.seq else { continue };
        // Never backwards: a catch-up may re-read what a commit already published.
        if seq <= handle.session.last_published.load(Ordering::Acquire) {
            continue;
        }
        handle.session.last_published.store(seq, Ordering::Release);
        let Some(sender) = sender.as_ref().filter(|s| s.receiver_count() > 0) else {
            continue; // nobody is watching this session right now
        };
        let json = event_json(event);
        let _ = sender.send(Arc::new(FeedItem::Durable {
            event: event.clone(),
            json,
        }));
    }
}

/// What subscribers of a session receive. Each carries its event's JSON, encoded once here
/// rather than once per subscriber.
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

/// A feed's hold on a session: the receiver, and the handle that keeps the entry alive while
/// it watches.
pub struct Subscription {
    pub handle: Handle,
    pub receiver: broadcast::Receiver<Arc<FeedItem>>,
}

impl Handle {
    /// The sender, if anyone ever subscribed (and the session was not forgotten since).
    fn sender(&self) -> Option<broadcast::Sender<Arc<FeedItem>>> {
        lock(&self.session.feed).clone()
    }
}

impl Hub {
    /// Subscribe before reading the store, so nothing committed in between is missed.
    pub fn subscribe(&self, session_id: &SessionId) -> Subscription {
        let handle = self.enter(session_id);
        let receiver = {
            let mut feed = lock(&handle.session.feed);
            match feed.as_ref() {
                Some(sender) => sender.subscribe(),
                None => {
                    let (sender, receiver) = broadcast::channel(CHANNEL_CAPACITY);
                    *feed = Some(sender);
                    receiver
                }
            }
        };
        Subscription { handle, receiver }
    }

    pub async fn append(
        &self,
        session_id: &SessionId,
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
        session_id: &SessionId,
        events: Vec<NewEvent>,
        commit: Commit,
        on_commit: impl FnOnce(),
    ) -> Result<Vec<Event>, StoreError> {
        let handle = self.enter(session_id);
        let _ordered = handle.session.append.lock().await;
        self.commit_ordered(&handle, events, commit, on_commit)
            .await
    }

    /// Appends `events` only while the gate `approval_id` still waits, checked under the
    /// session's append lock so no answer this instance commits can land in between; `None`
    /// when it no longer waits. (The reviewer's concern: never after the answer.)
    pub async fn commit_while_waiting(
        &self,
        session_id: &SessionId,
        approval_id: &crate::protocol::ApprovalId,
        gates: &dyn crate::server::store::GateRepo,
        events: Vec<NewEvent>,
    ) -> Result<Option<Vec<Event>>, StoreError> {
        let handle = self.enter(session_id);
        let _ordered = handle.session.append.lock().await;
        let waiting = gates
            .get_gate(session_id, approval_id)
            .await?
            .is_some_and(|gate| gate.resolution.is_none());
        if !waiting {
            return Ok(None);
        }
        let stored = self
            .commit_ordered(&handle, events, Commit::default(), || ())
            .await?;
        Ok(Some(stored))
    }

    /// The append itself, its publishing and notices; the caller holds the append lock.
    async fn commit_ordered(
        &self,
        handle: &Handle,
        events: Vec<NewEvent>,
        commit: Commit,
        on_commit: impl FnOnce(),
    ) -> Result<Vec<Event>, StoreError> {
        let session_id = handle.session_id();
        let stored = self.log().append(session_id, events, commit).await?;
        crate::timeline::mark("hub: store returned");
        on_commit();
        // Another instance appended in between (only with a shared store): what it wrote goes
        // out first, so subscribers still get every event in seq order.
        let first = stored.first().and_then(|e| e.seq).unwrap_or(0);
        let published = handle.session.last_published.load(Ordering::Acquire);
        if published > 0 && first > published + 1 {
            self.publish_stored(handle, published, Some(first - 1))
                .await?;
        }
        publish(handle, &stored);
        crate::timeline::mark("hub: published");
        self.notice_committed(session_id, &stored);
        self.fold_committed(handle, &stored).await;
        Ok(stored)
    }

    /// Publishes what the store holds after the last published seq (up to `through`), and
    /// wakes the turns parked here on gates those events resolved. The caller holds the
    /// session's `append` lock.
    async fn publish_stored(
        &self,
        handle: &Handle,
        mut after: u64,
        through: Option<u64>,
    ) -> Result<(), StoreError> {
        loop {
            let page = self
                .log()
                .events_after(handle.session_id(), after, PAGE)
                .await?;
            let page: Vec<Event> = page
                .into_iter()
                .filter(|e| through.is_none_or(|t| e.seq.unwrap_or(0) <= t))
                .collect();
            let Some(last) = page.last().and_then(|e| e.seq) else {
                return Ok(());
            };
            publish(handle, &page);
            for event in &page {
                if let EventBody::ApprovalResolved(resolution) = &event.body {
                    self.wake(handle.session_id(), resolution.clone());
                }
            }
            if page.len() < PAGE as usize || through.is_some_and(|t| last >= t) {
                return Ok(());
            }
            after = last;
        }
    }

    /// Brings the session's live state up to the store's end: what other instances committed
    /// goes out to this instance's subscribers, in seq order, and wakes what it resolved.
    /// `hint` is the first seq a notification announced (where to start when nothing was
    /// published here yet). A session without live state here needs nothing.
    pub async fn catch_up(
        &self,
        session_id: &SessionId,
        hint: Option<u64>,
    ) -> Result<(), StoreError> {
        let Some(handle) = self.get(session_id) else {
            return Ok(());
        };
        let _ordered = handle.session.append.lock().await;
        let published = handle.session.last_published.load(Ordering::Acquire);
        let after = match (published, hint) {
            (0, Some(first)) => first.saturating_sub(1),
            (published, _) => published,
        };
        self.publish_stored(&handle, after, None).await
    }

    /// The sessions this instance watches or waits in (subscribers, parked gates): those whose
    /// other-instance events it must not miss.
    pub fn watched_sessions(&self) -> Vec<(SessionId, u64)> {
        self.live()
            .iter()
            .filter(|s| {
                lock(&s.feed)
                    .as_ref()
                    .is_some_and(|f| f.receiver_count() > 0)
                    || !lock(&s.parked).is_empty()
            })
            .map(|s| (s.id.clone(), s.last_published.load(Ordering::Acquire)))
            .collect()
    }

    /// Catches up every watched session the store has moved past: the safety net under
    /// notifications, which may be lost.
    pub async fn sweep(&self) -> Result<(), StoreError> {
        let watched = self.watched_sessions();
        if watched.is_empty() {
            return Ok(());
        }
        let ids: Vec<SessionId> = watched.iter().map(|(id, _)| id.clone()).collect();
        let Some(coordination) = &self.shared.coordination else {
            return Ok(());
        };
        let stored = coordination.last_seqs(&ids).await?;
        for (id, last_seq) in stored {
            let published = watched
                .iter()
                .find(|(w, _)| *w == id)
                .map_or(0, |(_, seq)| *seq);
            if last_seq > published {
                self.catch_up(&id, None).await?;
            }
        }
        Ok(())
    }

    /// Sends a transient event to whoever is watching; it is never stored or replayed.
    pub fn publish_transient(
        &self,
        session_id: &SessionId,
        turn_id: Option<&TurnId>,
        body: EventBody,
    ) {
        let Some(handle) = self.get(session_id) else {
            return;
        };
        let Some(sender) = handle.sender().filter(|s| s.receiver_count() > 0) else {
            return;
        };
        let event = Event {
            seq: None,
            at: Timestamp::now(),
            turn_id: turn_id.cloned(),
            body,
        };
        let base_seq = handle.session.last_published.load(Ordering::Acquire);
        let json = event_json(&event);
        let _ = sender.send(Arc::new(FeedItem::Transient {
            base_seq,
            event,
            json,
        }));
    }

    /// A deleted session: its subscribers see their stream end, its memo goes.
    pub fn forget(&self, session_id: &SessionId) {
        if let Some(handle) = self.get(session_id) {
            lock(&handle.session.feed).take();
            if let Ok(mut memo) = handle.session.history.try_lock() {
                memo.take();
            }
        }
    }

    /// Every event of a session, oldest first, read in pages.
    pub async fn all_events(&self, session_id: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.events_since(session_id, 0).await
    }

    /// Every event with `seq > after`, oldest first, read in pages.
    pub async fn events_since(
        &self,
        session_id: &SessionId,
        mut after: u64,
    ) -> Result<Vec<Event>, StoreError> {
        let mut all = Vec::new();
        loop {
            let page = self.log().events_after(session_id, after, 1000).await?;
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
