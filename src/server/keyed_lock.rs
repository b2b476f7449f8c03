//! One async lock per key (here: per session), created on first use.
//!
//! Used where a read-then-append must not interleave with another (the session's mode: a
//! `mode_changed` event's `previous` must be the mode actually in force).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

#[derive(Default)]
pub struct KeyedLocks {
    // std Mutex: held only to find or insert the per-key lock.
    locks: Mutex<HashMap<String, Arc<AsyncMutex<()>>>>,
}

impl KeyedLocks {
    pub async fn lock(&self, key: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self
                .locks
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // Drop idle entries now and then so deleted sessions do not accumulate.
            if locks.len() > 1024 {
                locks.retain(|_, l| Arc::strong_count(l) > 1);
            }
            locks.entry(key.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }
}
