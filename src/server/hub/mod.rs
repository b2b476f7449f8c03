//! Every session's live state in one place: its locks, its feed channel, its history memo, its
//! running turn and its parked gates — one map, one lock order, one eviction rule.
//!
//! The log (the store) is the truth; this is only what live work needs in memory, and all of
//! it can be rebuilt from the log.
//!
//! **Eviction rule:** an entry lives while something holds it — a running turn, a parked gate,
//! a feed subscriber, or an operation in progress — and is dropped the moment the last holder
//! lets go. The map holds only a `Weak` to each session, and the entry leaves in
//! `Drop for Session`, which runs exactly once, after the last `Arc` is gone: no count is ever
//! read while another holder may be letting go at the same moment. So a session with no
//! subscriber, no running turn and no parked gate costs nothing; the next use rebuilds it (its
//! history memo from the log).
//!
//! **Lock order** (take them in this order, never the other way round):
//! 1. `Session::serial` — an operation's read-then-append (a mode change, a new message);
//! 2. `Session::append` — commit then publish, so live events go out in seq order;
//! 3. `Session::history` — the memo, while it catches up from the store;
//! 4. the std mutexes (the map, the feed sender, the turn slot, the parked gates) — held for a
//!    lookup or an insert only, never across an await and never while taking another lock.
//!
//! The hub is the only holder of the event log (`EventLog`): it exposes commit (`feed.rs`),
//! reads and session rows (`log.rs`), subscribe and history, never the log itself.
//!
//! Files: `feed.rs` (commit, publish, subscribe, catch up), `turns.rs` (the running turn),
//! `parked.rs` (gates waiting for an answer), `memo.rs` (the history memo), `follow.rs` (the
//! other instances' signals, with a shared store), `changes.rs` (the server-wide notices that
//! the session list or the Inbox may have changed).

mod changes;
mod feed;
mod follow;
mod log;
mod memo;
mod parked;
mod turns;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::{Mutex as AsyncMutex, broadcast, oneshot};

use crate::protocol::{ApprovalId, SessionId};
use crate::server::conversation::history::SessionHistory;
use crate::server::store::{Coordination, EventLog};

pub use changes::change_of;
pub use feed::{FeedItem, Subscription, event_json};
pub use parked::{ParkGuard, Wake};
pub use turns::TurnLease;

/// A plain mutex whose data stays usable after a panic elsewhere (every critical section here
/// is a map or slot update that cannot be left half-done).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every live session by id. Only `Weak`s: the holders own the sessions, the map only finds
/// them. No `Arc<Session>` may be dropped while this is locked (its drop takes the lock).
type SessionMap = Mutex<HashMap<SessionId, Weak<Session>>>;

/// The live state of one session.
struct Session {
    id: SessionId,
    /// The map this session is listed in, which its drop takes it out of.
    map: Arc<SessionMap>,
    /// 1 in the lock order.
    serial: AsyncMutex<()>,
    /// 2 in the lock order.
    append: AsyncMutex<()>,
    /// 3 in the lock order.
    history: AsyncMutex<Option<SessionHistory>>,
    /// Created by the first subscriber: an entry nobody watches carries no channel.
    feed: Mutex<Option<broadcast::Sender<Arc<FeedItem>>>>,
    /// The last seq published (transient events carry it, to be dropped once stale).
    last_published: AtomicU64,
    running: Mutex<Option<turns::RunningTurn>>,
    parked: Mutex<HashMap<ApprovalId, oneshot::Sender<Wake>>>,
}

impl Session {
    fn new(id: &SessionId, map: Arc<SessionMap>) -> Session {
        Session {
            id: id.clone(),
            map,
            serial: AsyncMutex::new(()),
            append: AsyncMutex::new(()),
            history: AsyncMutex::new(None),
            feed: Mutex::new(None),
            last_published: AtomicU64::new(0),
            running: Mutex::new(None),
            parked: Mutex::new(HashMap::new()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let mut sessions = lock(&self.map);
        // Only this session's own entry: an `enter` that found this one already dying has put
        // its successor under the same id.
        if sessions
            .get(&self.id)
            .is_some_and(|entry| std::ptr::eq(entry.as_ptr(), self))
        {
            sessions.remove(&self.id);
        }
    }
}

struct Shared {
    /// The log: only the hub holds it, so every append is a hub commit (and is published).
    log: Arc<dyn EventLog>,
    /// Only on a store several instances share.
    coordination: Option<Arc<dyn Coordination>>,
    sessions: Arc<SessionMap>,
    /// The server-wide change stream (`changes.rs`).
    changes: broadcast::Sender<crate::protocol::Change>,
    /// The reviewer's predictions, which every resolution is compared with (`gate::resolve`);
    /// set once at start, none in tests that do not review.
    reviews: std::sync::OnceLock<Arc<dyn crate::server::store::review::ReviewRepo>>,
}

/// The hub: cheap to clone, one per server.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
}

/// A hold on one session's live state. While any exists the entry stays; when the last one
/// (or the last other holder) goes, the session's drop takes the entry out (the eviction rule).
#[derive(Clone)]
pub struct Handle {
    session: Arc<Session>,
}

impl Hub {
    /// The hub over `log`, the only holder of it; `coordination` when other instances share
    /// the store.
    pub fn new(log: Arc<dyn EventLog>, coordination: Option<Arc<dyn Coordination>>) -> Hub {
        Hub {
            shared: Arc::new(Shared {
                log,
                coordination,
                sessions: Arc::new(Mutex::new(HashMap::new())),
                changes: broadcast::channel(changes::CAPACITY).0,
                reviews: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Gives the hub the reviewer's predictions, so each resolution carries and records the
    /// one made for its card. Once; a second call changes nothing.
    pub fn set_reviews(&self, reviews: Arc<dyn crate::server::store::review::ReviewRepo>) {
        let _ = self.shared.reviews.set(reviews);
    }

    /// The reviewer's predictions, when the server keeps them.
    pub fn reviews(&self) -> Option<&Arc<dyn crate::server::store::review::ReviewRepo>> {
        self.shared.reviews.get()
    }

    fn log(&self) -> &dyn EventLog {
        self.shared.log.as_ref()
    }

    /// Whether other instances write to the same store.
    fn shared_store(&self) -> bool {
        self.shared.coordination.is_some()
    }

    /// The session's live state, created on first use.
    pub fn enter(&self, session_id: &SessionId) -> Handle {
        let mut sessions = lock(&self.shared.sessions);
        // A session whose last holder is letting go right now does not upgrade: it gets a
        // successor, and its own drop leaves the successor's entry alone.
        let session = match sessions.get(session_id).and_then(Weak::upgrade) {
            Some(session) => session,
            None => {
                let session = Arc::new(Session::new(session_id, Arc::clone(&self.shared.sessions)));
                sessions.insert(session_id.to_owned(), Arc::downgrade(&session));
                session
            }
        };
        drop(sessions);
        Handle { session }
    }

    /// The session's live state if it has any (a lookup never creates an entry).
    pub fn get(&self, session_id: &SessionId) -> Option<Handle> {
        let session = lock(&self.shared.sessions)
            .get(session_id)
            .and_then(Weak::upgrade)?;
        Some(Handle { session })
    }

    /// Every session with live state now. The map's lock is let go before this returns, so
    /// a caller may take a session's own locks (the lock order) and drop the last holder.
    fn live(&self) -> Vec<Arc<Session>> {
        lock(&self.shared.sessions)
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// How many sessions have live state right now.
    pub fn live_sessions(&self) -> usize {
        lock(&self.shared.sessions).len()
    }
}

impl Handle {
    pub fn session_id(&self) -> &SessionId {
        &self.session.id
    }

    /// Serializes an operation's read-then-append on this session (1 in the lock order).
    pub async fn serial(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.session.serial.lock().await
    }
}

#[cfg(test)]
mod tests;
