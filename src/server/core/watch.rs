//! Cards whose agent is gone close by themselves. A hook that waits on a gate says so on every
//! long-poll (`?watch=<secs>`): "if no poll of mine is waiting on this card for that long, I am
//! gone". A hook killed outright (SIGKILL, the terminal closed, the machine asleep) cannot
//! cancel its card; without this its card would stay answerable until its deadline, and an
//! answer to it would be audited as a decision on a call nobody was waiting for.
//!
//! Kept in memory: after a restart the hook's next poll says it again (a hook that died while
//! Countersign was down leaves its card to the deadline). Not on a shared store, where one
//! hook's polls may reach different instances and no instance sees them all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The reason a lapsed card is closed with: the one a hook sends when its agent stops it.
pub const WHY_GONE: &str = "agent_gone";
/// The shortest and longest lapse a poll may ask for.
pub const MIN_WATCH: Duration = Duration::from_secs(5);
pub const MAX_WATCH: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Watch {
    /// Polls waiting on the card now.
    active: u32,
    /// Bumped by every poll, so a lapse timer knows whether a poll came after it started.
    generation: u64,
}

/// The cards being watched on this instance.
#[derive(Clone, Default)]
pub struct GateWatches {
    inner: Arc<Mutex<HashMap<String, Watch>>>,
}

/// One poll's presence; dropping it (the poll answered, or its connection closed) starts the
/// lapse timer when it was the last.
pub struct Watching {
    watches: GateWatches,
    approval_id: String,
    lapse: Duration,
    on_lapse: Option<Box<dyn FnOnce() + Send>>,
}

impl GateWatches {
    /// A poll of `approval_id` begins; `on_lapse` runs (once) if no poll is waiting on it for
    /// `lapse` after this one ends.
    pub fn poll_begins(
        &self,
        approval_id: &str,
        lapse: Duration,
        on_lapse: impl FnOnce() + Send + 'static,
    ) -> Watching {
        let mut map = self.lock();
        let watch = map.entry(approval_id.to_owned()).or_default();
        watch.active += 1;
        watch.generation += 1;
        Watching {
            watches: self.clone(),
            approval_id: approval_id.to_owned(),
            lapse,
            on_lapse: Some(Box::new(on_lapse)),
        }
    }

    /// Whether a poll is waiting on the card now (tests).
    #[cfg(test)]
    pub fn is_watched(&self, approval_id: &str) -> bool {
        self.lock().get(approval_id).is_some_and(|w| w.active > 0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Watch>> {
        // A panic while holding this lock leaves only counters; keep going with them.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the card lapsed: no poll now and none since `generation`. Forgets it if so.
    fn lapsed(&self, approval_id: &str, generation: u64) -> bool {
        let mut map = self.lock();
        match map.get(approval_id) {
            Some(w) if w.active == 0 && w.generation == generation => {
                map.remove(approval_id);
                true
            }
            _ => false,
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let generation = {
            let mut map = self.watches.lock();
            let Some(watch) = map.get_mut(&self.approval_id) else {
                return;
            };
            watch.active = watch.active.saturating_sub(1);
            if watch.active > 0 {
                return;
            }
            watch.generation
        };
        let (watches, approval_id, lapse) =
            (self.watches.clone(), self.approval_id.clone(), self.lapse);
        let Some(on_lapse) = self.on_lapse.take() else {
            return;
        };
        // Drop can run outside a runtime (a test's last handle); then nobody is waiting anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                tokio::time::sleep(lapse).await;
                if watches.lapsed(&approval_id, generation) {
                    on_lapse();
                }
            });
        }
    }
}

/// The card is done with (resolved): nothing to watch.
impl GateWatches {
    pub fn forget(&self, approval_id: &str) {
        let mut map = self.lock();
        if map.get(approval_id).is_some_and(|w| w.active == 0) {
            map.remove(approval_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn counter() -> (Arc<AtomicU32>, impl Fn() -> Box<dyn FnOnce() + Send>) {
        let fired = Arc::new(AtomicU32::new(0));
        let f = fired.clone();
        (fired, move || {
            let f = f.clone();
            Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            })
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_card_lapses_only_when_no_poll_follows_in_time() {
        let watches = GateWatches::default();
        let (fired, on_lapse) = counter();
        let lapse = Duration::from_secs(10);
        // A poll, then the next one 9 s later: no lapse.
        drop(watches.poll_begins("a", lapse, on_lapse()));
        tokio::time::sleep(Duration::from_secs(9)).await;
        let second = watches.poll_begins("a", lapse, on_lapse());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        assert!(watches.is_watched("a"));
        // Two polls at once; one ends: the other still watches.
        let third = watches.poll_begins("a", lapse, on_lapse());
        drop(second);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        // The last ends and none follows: it lapses once.
        drop(third);
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        assert!(!watches.is_watched("a"));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
    }
}
