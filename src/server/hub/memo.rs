//! The history memo of a live session: kept current by the session's own commits, caught up
//! from the store when that cannot be known, dropped with the entry (and then rebuilt from the
//! log).
//!
//! **Why commits feed it:** a turn reads its history several times per step (its start, the
//! card's hand-approval count, a resumed gate). With a store only this instance writes, every
//! event of the session passes through `Hub::commit`, which folds it in; a read then needs no
//! trip to the store. With a shared store other instances append too, so a read always asks
//! the store for what came after the memo.

use std::sync::atomic::Ordering;

use super::{Handle, Hub};
use crate::protocol::{Event, SessionId};
use crate::server::conversation::history::SessionHistory;
use crate::server::store::StoreError;

/// Events read from the store per page while catching up.
const PAGE: u32 = 1000;

impl Hub {
    /// Brings the session's history up to the log's end and reads it with `read`.
    pub async fn history<T>(
        &self,
        session_id: &SessionId,
        read: impl FnOnce(&SessionHistory) -> T,
    ) -> Result<T, StoreError> {
        let handle = self.enter(session_id);
        let shared = self.shared_store();
        // On a store of its own, a commit in flight folds its events in before this reads (it
        // holds `append` until then), so "the memo has what was published" means "the memo
        // has the whole log". A shared store is read to its end every time instead, and waiting
        // for `append` would only put this read behind commits of several milliseconds.
        let _ordered = match shared {
            false => Some(handle.session.append.lock().await),
            true => None,
        };
        let mut memo = handle.session.history.lock().await;
        let current = !shared
            && memo.as_ref().is_some_and(|h| {
                h.through_seq() >= handle.session.last_published.load(Ordering::Acquire)
            });
        let history = memo.get_or_insert_with(SessionHistory::default);
        if !current {
            loop {
                let page = self
                    .log()
                    .events_after(session_id, history.through_seq(), PAGE)
                    .await?;
                let full = page.len() == PAGE as usize;
                page.iter().for_each(|e| history.apply(e));
                if !full {
                    break;
                }
            }
        }
        Ok(read(history))
    }

    /// Folds events just committed into the memo, when they follow on from it (with a shared
    /// store another instance's events may come between; the next read fetches them). The
    /// caller holds the session's `append` lock.
    pub(super) async fn fold_committed(&self, handle: &Handle, events: &[Event]) {
        // A shared store's memo is only a head start for the next read, which reads on from
        // it: a commit does not wait behind a read in flight to fold its events in.
        let mut memo = if self.shared_store() {
            match handle.session.history.try_lock() {
                Ok(memo) => memo,
                Err(_) => return,
            }
        } else {
            handle.session.history.lock().await
        };
        let Some(history) = memo.as_mut() else {
            return;
        };
        if events.first().and_then(|e| e.seq) == Some(history.through_seq() + 1) {
            events.iter().for_each(|e| history.apply(e));
        }
    }
}
