//! The budget kill-switch: per-turn ceilings on tool calls, model tokens and wall time, in
//! every mode (yolo included). Crossing one suspends the turn on a `budget` card: continue
//! with a fresh allowance, or stop (a stop or a timeout ends the turn `stopped`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

// tokio's clock, so tests can stop and advance time instead of sleeping.
use tokio::time::Instant;

use crate::server::config::BudgetConfig;

/// The tool name a budget card carries (it gates the turn, not a tool).
pub const BUDGET_TOOL: &str = "budget";

/// The time a turn spent waiting for a person. The wall-clock budget does not count it: a
/// 600 s turn budget must not run out while a card waits its 30 minutes.
///
/// Several gates of one batch wait side by side; the clock is paused while at least one does,
/// so overlapping waits count once.
#[derive(Default)]
pub struct WaitClock {
    state: Mutex<WaitState>,
}

#[derive(Default)]
struct WaitState {
    waiting: usize,
    since: Option<Instant>,
    total: Duration,
}

impl WaitClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, WaitState> {
        // Plain counters: a panic elsewhere cannot leave them half-updated.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pauses the budget clock until the guard drops.
    pub fn pause(self: &Arc<Self>) -> WaitGuard {
        let mut state = self.lock();
        if state.waiting == 0 {
            state.since = Some(Instant::now());
        }
        state.waiting += 1;
        WaitGuard(Arc::clone(self))
    }

    /// Everything waited so far, the wait in progress included.
    pub fn total(&self) -> Duration {
        let state = self.lock();
        state.total + state.since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

/// Resumes the budget clock when the last waiting gate is done.
pub struct WaitGuard(Arc<WaitClock>);

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.waiting = state.waiting.saturating_sub(1);
        if state.waiting == 0
            && let Some(since) = state.since.take()
        {
            state.total += since.elapsed();
        }
    }
}

/// What one allowance has used so far.
pub struct Budget {
    limits: BudgetConfig,
    tool_calls: u64,
    tokens: u64,
    since: Instant,
    waits: Arc<WaitClock>,
    /// `waits.total()` when this allowance began.
    waited_before: Duration,
}

impl Budget {
    pub fn new(limits: BudgetConfig, waits: Arc<WaitClock>) -> Self {
        Budget {
            limits,
            tool_calls: 0,
            tokens: 0,
            since: Instant::now(),
            waited_before: waits.total(),
            waits,
        }
    }

    /// How many more tool calls this allowance covers (`None`: no ceiling).
    pub fn calls_left(&self) -> Option<u64> {
        (self.limits.max_tool_calls > 0)
            .then(|| self.limits.max_tool_calls.saturating_sub(self.tool_calls))
    }

    /// Wall time of this allowance, without the time spent waiting for a person.
    fn active_time(&self) -> Duration {
        let waited = self.waits.total().saturating_sub(self.waited_before);
        self.since.elapsed().saturating_sub(waited)
    }

    pub fn spend_tokens(&mut self, tokens: u64) {
        self.tokens = self.tokens.saturating_add(tokens);
    }

    pub fn spend_calls(&mut self, calls: usize) {
        self.tool_calls = self.tool_calls.saturating_add(calls as u64);
    }

    /// A fresh allowance, after the person chose to continue.
    pub fn refresh(&mut self) {
        self.tool_calls = 0;
        self.tokens = 0;
        self.since = Instant::now();
        self.waited_before = self.waits.total();
    }

    /// The ceiling this allowance has reached, in words; `None` while within budget.
    pub fn exceeded(&self) -> Option<String> {
        let limits = &self.limits;
        if limits.max_tool_calls > 0 && self.tool_calls >= limits.max_tool_calls {
            return Some(format!(
                "{} of {} tool calls used",
                self.tool_calls, limits.max_tool_calls
            ));
        }
        if limits.max_tokens > 0 && self.tokens >= limits.max_tokens {
            return Some(format!(
                "{} of {} model tokens used",
                self.tokens, limits.max_tokens
            ));
        }
        let elapsed = self.active_time();
        if limits.max_turn_secs > 0 && elapsed >= Duration::from_secs(limits.max_turn_secs) {
            return Some(format!(
                "{} s of {} s used",
                elapsed.as_secs(),
                limits.max_turn_secs
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(calls: u64, tokens: u64, secs: u64) -> BudgetConfig {
        BudgetConfig {
            max_tool_calls: calls,
            max_tokens: tokens,
            max_turn_secs: secs,
        }
    }

    fn budget(calls: u64, tokens: u64, secs: u64) -> Budget {
        Budget::new(limits(calls, tokens, secs), Arc::default())
    }

    #[test]
    fn each_ceiling_trips_and_a_refresh_resets_it() {
        let mut b = budget(3, 100, 600);
        b.spend_calls(2);
        assert_eq!(b.exceeded(), None);
        b.spend_calls(1);
        assert_eq!(b.exceeded().unwrap(), "3 of 3 tool calls used");
        b.refresh();
        assert_eq!(b.exceeded(), None);
        b.spend_tokens(150);
        assert!(b.exceeded().unwrap().contains("model tokens"));
        let b = budget(3, 100, 0);
        assert_eq!(b.exceeded(), None, "zero means no ceiling");
        assert_eq!(budget(0, 0, 0).calls_left(), None);
    }

    #[test]
    fn calls_left_counts_down_to_zero() {
        let mut b = budget(3, 0, 0);
        assert_eq!(b.calls_left(), Some(3));
        b.spend_calls(2);
        assert_eq!(b.calls_left(), Some(1));
        b.spend_calls(5);
        assert_eq!(b.calls_left(), Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn time_spent_waiting_for_a_person_is_not_counted() {
        let waits = Arc::new(WaitClock::default());
        let b = Budget::new(limits(0, 0, 10), Arc::clone(&waits));
        tokio::time::advance(Duration::from_secs(4)).await;
        {
            // Two gates waiting side by side: the clock is paused once, not twice.
            let _first = waits.pause();
            tokio::time::advance(Duration::from_secs(100)).await;
            let _second = waits.pause();
            tokio::time::advance(Duration::from_secs(100)).await;
            assert_eq!(b.exceeded(), None, "a waiting gate pauses the turn's clock");
        }
        assert_eq!(
            waits.total(),
            Duration::from_secs(200),
            "overlapping waits count once"
        );
        assert_eq!(b.exceeded(), None, "4 s of 10 s used");
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(b.exceeded().unwrap(), "10 s of 10 s used");
        let mut b = b;
        b.refresh();
        assert_eq!(b.exceeded(), None, "a fresh allowance starts from zero");
    }
}
