//! Every session's live state in one place: its locks, its feed channel, its history memo, its
//! running turn and its parked gates — one map, one lock order, one eviction rule.
//!
//! The log (the store) is the truth; this is only what live work needs in memory, and all of
//! it can be rebuilt from the log.
//!
//! **Eviction rule:** an entry lives while something holds it — a running turn, a parked gate,
//! a feed subscriber, or an operation in progress — and is dropped the moment the last holder
//! lets go (`Handle`'s drop). So a session with no subscriber, no running turn and no parked
//! gate costs nothing; the next use rebuilds it (its history memo from the log).
//!
//! **Lock order** (take them in this order, never the other way round):
//! 1. `Session::serial` — an operation's read-then-append (a mode change, a new message);
//! 2. `Session::append` — commit then publish, so live events go out in seq order;
//! 3. `Session::history` — the memo, while it catches up from the store;
//! 4. the std mutexes (the map, the feed sender, the turn slot, the parked gates) — held for a
//!    lookup or an insert only, never across an await and never while taking another lock.
//!
//! Files: `feed.rs` (commit, publish, subscribe, catch up), `turns.rs` (the running turn),
//! `parked.rs` (gates waiting for an answer), `memo.rs` (the history memo), `follow.rs` (the
//! other instances' signals, with a shared store).

mod feed;
mod follow;
mod memo;
mod parked;
mod turns;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Mutex as AsyncMutex, broadcast, oneshot};

use crate::server::conversation::history::SessionHistory;
use crate::server::store::Store;

pub use feed::{FeedItem, Subscription, event_json};
pub use parked::{ParkGuard, Wake};
pub use turns::TurnLease;

/// A plain mutex whose data stays usable after a panic elsewhere (every critical section here
/// is a map or slot update that cannot be left half-done).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The live state of one session.
struct Session {
    id: String,
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
    parked: Mutex<HashMap<String, oneshot::Sender<Wake>>>,
}

impl Session {
    fn new(id: &str) -> Session {
        Session {
            id: id.to_owned(),
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

struct Shared {
    store: Arc<dyn Store>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// The hub: cheap to clone, one per server.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
}

/// A hold on one session's live state. While any exists the entry stays; dropping the last
/// one drops the entry (the eviction rule).
pub struct Handle {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl Clone for Handle {
    fn clone(&self) -> Self {
        Handle {
            shared: Arc::clone(&self.shared),
            session: Arc::clone(&self.session),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut sessions = lock(&self.shared.sessions);
        // The map's own reference and this one: nobody else holds the entry.
        if Arc::strong_count(&self.session) == 2
            && let Some(entry) = sessions.get(&self.session.id)
            && Arc::ptr_eq(entry, &self.session)
        {
            sessions.remove(&self.session.id);
        }
    }
}

impl Hub {
    pub fn new(store: Arc<dyn Store>) -> Hub {
        Hub {
            shared: Arc::new(Shared {
                store,
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    /// The session's live state, created on first use.
    pub fn enter(&self, session_id: &str) -> Handle {
        let session = Arc::clone(
            lock(&self.shared.sessions)
                .entry(session_id.to_owned())
                .or_insert_with(|| Arc::new(Session::new(session_id))),
        );
        Handle {
            shared: Arc::clone(&self.shared),
            session,
        }
    }

    /// The session's live state if it has any (a lookup never creates an entry).
    pub fn get(&self, session_id: &str) -> Option<Handle> {
        let session = lock(&self.shared.sessions).get(session_id).cloned()?;
        Some(Handle {
            shared: Arc::clone(&self.shared),
            session,
        })
    }

    /// How many sessions have live state right now.
    pub fn live_sessions(&self) -> usize {
        lock(&self.shared.sessions).len()
    }
}

impl Handle {
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// Serializes an operation's read-then-append on this session (1 in the lock order).
    pub async fn serial(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.session.serial.lock().await
    }
}

#[cfg(test)]
mod tests;
