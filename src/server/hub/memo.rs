//! The history memo of a live session: caught up from the store when read, dropped with the
//! entry (and then rebuilt from the log).

use super::Hub;
use crate::server::conversation::history::SessionHistory;
use crate::server::store::StoreError;

/// Events read from the store per page while catching up.
const PAGE: u32 = 1000;

impl Hub {
    /// Brings the session's history up to the log's end and reads it with `read`.
    pub async fn history<T>(
        &self,
        session_id: &str,
        read: impl FnOnce(&SessionHistory) -> T,
    ) -> Result<T, StoreError> {
        let handle = self.enter(session_id);
        let mut memo = handle.session.history.lock().await;
        let history = memo.get_or_insert_with(SessionHistory::default);
        loop {
            let page = self
                .store()
                .events_after(session_id, history.through_seq(), PAGE)
                .await?;
            let full = page.len() == PAGE as usize;
            page.iter().for_each(|e| history.apply(e));
            if !full {
                break;
            }
        }
        Ok(read(history))
    }
}
