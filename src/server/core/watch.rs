//! Cards whose agent is gone close by themselves. A hook that waits on a gate says so on every
//! long-poll (`?watch=<secs>`): "if no poll of mine is waiting on this card for that long, I am
//! gone". A hook killed outright (SIGKILL, the terminal closed, the machine asleep) cannot
//! cancel its card; without this its card would stay answerable until its deadline, and an
//! answer to it would be audited as a decision on a call nobody was waiting for.
//!
//! Two clocks, by how the last poll ended. A poll the server answered (its wait ran out) is
//! followed by the next one at once, so the lapse the poll named ([`Watching::finish`]) is only
//! a fallback for a hook that died between two polls, or whose machine went silent without
//! closing its connection. A poll whose connection closed while it waited (the process died:
//! the kernel closes its sockets, and the server drops the poll's future) is given
//! [`DISCONNECT_GRACE`] for a new poll to arrive — a client that merely reconnects does so
//! within it — and then its card closes.
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
/// How long a card whose poll's connection closed mid-wait waits for a new poll before it
/// closes: a hook that is alive and reconnects (after a network blip, a proxy's cut, its own
/// poll timeout) polls again well within it; one that died never does. With the close itself,
/// a killed hook's card is closed within 5 s.
pub const DISCONNECT_GRACE: Duration = Duration::from_millis(2500);

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

/// One poll's presence; dropping it starts the lapse timer when it was the last: the lapse the
/// poll named after [`Watching::finish`] (the poll was answered), [`DISCONNECT_GRACE`] when it
/// is dropped unfinished (its connection closed while it waited).
pub struct Watching {
    watches: GateWatches,
    approval_id: String,
    lapse: Duration,
    finished: bool,
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
            finished: false,
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

impl Watching {
    /// The poll was answered (its client reads the answer and polls again at once): the card
    /// keeps the whole lapse the poll named. Without this, an ending poll counts as a closed
    /// connection.
    pub fn finish(mut self) {
        self.finished = true;
    }

    /// How long the card waits for the next poll after this one.
    fn gap(&self) -> Duration {
        if self.finished {
            self.lapse
        } else {
            self.lapse.min(DISCONNECT_GRACE)
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
            (self.watches.clone(), self.approval_id.clone(), self.gap());
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
        // A poll answered, then the next one 9 s later: no lapse.
        watches.poll_begins("a", lapse, on_lapse()).finish();
        tokio::time::sleep(Duration::from_secs(9)).await;
        let second = watches.poll_begins("a", lapse, on_lapse());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        assert!(watches.is_watched("a"));
        // Two polls at once; one's connection closes: the other still watches.
        let third = watches.poll_begins("a", lapse, on_lapse());
        drop(second);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        // The last is answered and none follows: it lapses once, after the whole lapse.
        third.finish();
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0, "not before the lapse");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        assert!(!watches.is_watched("a"));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_poll_whose_connection_closes_lapses_after_the_grace_unless_one_follows() {
        let watches = GateWatches::default();
        let (fired, on_lapse) = counter();
        let lapse = Duration::from_secs(15);
        // The client reconnects within the grace: its card stays.
        drop(watches.poll_begins("a", lapse, on_lapse()));
        tokio::time::sleep(DISCONNECT_GRACE / 2).await;
        let again = watches.poll_begins("a", lapse, on_lapse());
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        // Its connection closes and nothing follows (the process died): closed after the
        // grace, well within 5 s, and once.
        drop(again);
        tokio::time::sleep(DISCONNECT_GRACE - Duration::from_millis(100)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        assert!(DISCONNECT_GRACE < Duration::from_secs(4));
        // A lapse shorter than the grace is kept as asked.
        let (fired, on_lapse) = counter();
        drop(watches.poll_begins("b", Duration::from_secs(1), on_lapse()));
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(fired.load(Ordering::SeqCst), 1);
    }
}
