//! Where one request's time goes, step by step: `mark` notes that a fixed point of the gate
//! path was reached, and `countersign bench --timeline` prints the median time of each point
//! from the start of its figure's window.
//!
//! **Why marks and not a sampling profiler:** the round trip is a chain of hand-offs between
//! threads (HTTP, the SQLite writer, the turn, the blocking pool, the feed); a profile of CPU
//! shows none of the waiting in between, the marks show all of it.
//!
//! Recording is off unless the bench turns it on: then a mark costs one relaxed atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static RECORDING: AtomicBool = AtomicBool::new(false);
static MARKS: Mutex<Vec<(&'static str, Instant)>> = Mutex::new(Vec::new());

/// Notes that `point` was reached now (only while recording).
pub fn mark(point: &'static str) {
    if RECORDING.load(Ordering::Relaxed) {
        let now = Instant::now();
        MARKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((point, now));
    }
}

/// Starts recording (dropping whatever an earlier recording left).
pub fn record() {
    MARKS.lock().unwrap_or_else(|p| p.into_inner()).clear();
    RECORDING.store(true, Ordering::Relaxed);
}

/// Stops recording and hands over the marks, in the order they were taken.
pub fn take() -> Vec<(&'static str, Instant)> {
    RECORDING.store(false, Ordering::Relaxed);
    std::mem::take(&mut *MARKS.lock().unwrap_or_else(|p| p.into_inner()))
}
