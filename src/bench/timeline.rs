//! `bench --timeline`: the step-by-step profile of figures 1 and 2. While the gate cycles run,
//! the server and the client mark fixed points (`crate::timeline::mark`); afterwards each
//! window (decision POST → `tool_result`, message POST → `approval_request`) becomes a table of
//! the median time from the window's start to each point, so a latency figure shows where its
//! time goes: which step is a disk sync, which a hand-off between threads, which CPU.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

static WANTED: AtomicBool = AtomicBool::new(false);
static TAKEN: Mutex<Vec<Timeline>> = Mutex::new(Vec::new());

/// `--timeline` was given.
pub fn want() {
    WANTED.store(true, Ordering::Relaxed);
}

/// Starts recording marks if `--timeline` was given; `keep_windows` ends it.
pub fn start() {
    if WANTED.load(Ordering::Relaxed) {
        crate::timeline::record();
    }
}

/// What the gate cycles of a figure group are reported as: (round trip, suspend).
pub type Names = (&'static str, &'static str);

/// Figures 1 and 2 (the gate cycles on an idle server).
pub const IDLE: Names = ("[1] gate round trip", "[2] suspend");

/// Figure 3's cycles, with 10,000 gates parked.
pub const AT_LOAD: Names = ("[3] gate round trip at load", "[3] suspend at load");

/// Ends a recording `start` began and keeps the timelines of its two windows for the report.
pub fn keep_windows(names: Names) {
    if !WANTED.load(Ordering::Relaxed) {
        return;
    }
    let marks = crate::timeline::take();
    let windows = [
        (
            names.0,
            "client: decision POST sent",
            "client: tool_result read",
        ),
        (
            names.1,
            "client: message POST sent",
            "client: approval_request read",
        ),
    ];
    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
    for (figure, from, to) in windows {
        taken.extend(window(figure, &marks, from, to));
    }
}

/// The timelines kept so far (for the report, once).
pub fn taken() -> Vec<Timeline> {
    std::mem::take(&mut *TAKEN.lock().unwrap_or_else(|p| p.into_inner()))
}

/// One point of a window: its median time from the window's start, in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub point: &'static str,
    /// The point's occurrence within the window (1 for the first time it is reached).
    pub nth: usize,
    pub median_us: f64,
}

/// A window's steps, over the cycles whose points came in the most common order.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub figure: &'static str,
    pub cycles: usize,
    pub in_order: usize,
    pub steps: Vec<Step>,
    /// Where the slowest 1 % of the cycles spent their time (the p99's profile).
    pub tail: Option<Tail>,
}

/// A point reached in one window: (point, occurrence, µs from the window's start).
type Reached = (&'static str, usize, f64);

/// The windows that start at mark `from` and end at mark `to`, folded into one timeline;
/// `None` when no window is complete.
pub fn window(
    figure: &'static str,
    marks: &[(&'static str, Instant)],
    from: &str,
    to: &str,
) -> Option<Timeline> {
    let mut cycles: Vec<Vec<Reached>> = Vec::new();
    let mut current: Option<(Instant, Vec<Reached>)> = None;
    for &(point, at) in marks {
        if point == from {
            current = Some((at, vec![(point, 1, 0.0)]));
            continue;
        }
        let Some((start, steps)) = current.as_mut() else {
            continue;
        };
        let nth = 1 + steps.iter().filter(|(p, _, _)| *p == point).count();
        let us = at.saturating_duration_since(*start).as_secs_f64() * 1e6;
        steps.push((point, nth, us));
        if point == to
            && let Some((_, steps)) = current.take()
        {
            cycles.push(steps);
        }
    }
    let order = |c: &[Reached]| -> Vec<(&'static str, usize)> {
        c.iter().map(|(p, n, _)| (*p, *n)).collect()
    };
    let mut counts: HashMap<Vec<(&'static str, usize)>, usize> = HashMap::new();
    for cycle in &cycles {
        *counts.entry(order(cycle)).or_default() += 1;
    }
    let (common, in_order) = counts.into_iter().max_by_key(|(_, n)| *n)?;
    let slowest = tail(&cycles, &common);
    let chosen: Vec<&Vec<_>> = cycles.iter().filter(|c| order(c) == common).collect();
    let steps = common
        .iter()
        .enumerate()
        .map(|(i, &(point, nth))| Step {
            point,
            nth,
            median_us: median(chosen.iter().map(|c| c[i].2).collect()),
        })
        .collect();
    Some(Timeline {
        figure,
        cycles: cycles.len(),
        in_order,
        steps,
        tail: slowest,
    })
}

/// One point of a window's slowest cycles: how long the step into it took there, beside how
/// long it takes in a typical cycle — so a tail figure shows which step grows.
#[derive(Debug, Clone, PartialEq)]
pub struct TailStep {
    pub point: &'static str,
    pub nth: usize,
    /// Median time from the previous point to this one, over every cycle that reached it.
    pub typical_us: f64,
    /// The same over the slowest cycles that reached it.
    pub tail_us: f64,
    /// How many of the slowest cycles reached it.
    pub reached: usize,
}

/// The slowest 1 % of a window's cycles, step by step.
#[derive(Debug, Clone, PartialEq)]
pub struct Tail {
    /// How many cycles are in the tail (at least one).
    pub cycles: usize,
    /// The fastest of them, in µs: the window's 99th percentile.
    pub from_us: f64,
    /// The median cycle, in µs, for scale.
    pub median_us: f64,
    pub steps: Vec<TailStep>,
}

/// A point as the tables name it: `feed: frame out (#2)` for its second occurrence.
fn point_name(point: &str, nth: usize) -> String {
    match nth {
        1 => point.to_owned(),
        _ => format!("{point} (#{nth})"),
    }
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(0.0)
}

/// The slowest 1 % of `cycles` (by the time to their last point), each step's time beside a
/// typical cycle's. Steps come in the order of `common` (the most common order), then any the
/// tail reached that the common order has not.
fn tail(cycles: &[Vec<Reached>], common: &[(&'static str, usize)]) -> Option<Tail> {
    let total = |c: &Vec<Reached>| c.last().map_or(0.0, |(_, _, us)| *us);
    let mut totals: Vec<f64> = cycles.iter().map(total).collect();
    totals.sort_by(f64::total_cmp);
    let count = totals.len().div_ceil(100).max(1);
    let from_us = *totals.get(totals.len().checked_sub(count)?)?;
    let slowest: Vec<&Vec<Reached>> = cycles.iter().filter(|c| total(c) >= from_us).collect();
    // Each cycle's steps as (point, nth) → µs since the point before it.
    let deltas = |c: &Vec<Reached>| -> Vec<((&'static str, usize), f64)> {
        c.iter()
            .scan(0.0, |before, &(point, nth, us)| {
                let step = us - *before;
                *before = us;
                Some(((point, nth), step))
            })
            .collect()
    };
    let mut order: Vec<(&'static str, usize)> = common.to_vec();
    for cycle in &slowest {
        for &(point, nth, _) in cycle.iter() {
            if !order.contains(&(point, nth)) {
                order.push((point, nth));
            }
        }
    }
    let of = |which: &[&Vec<Reached>], key: (&'static str, usize)| -> Vec<f64> {
        which
            .iter()
            .flat_map(|c| deltas(c))
            .filter(|(k, _)| *k == key)
            .map(|(_, us)| us)
            .collect()
    };
    let all: Vec<&Vec<Reached>> = cycles.iter().collect();
    let steps = order
        .into_iter()
        .filter_map(|key| {
            let in_tail = of(&slowest, key);
            (!in_tail.is_empty()).then(|| TailStep {
                point: key.0,
                nth: key.1,
                typical_us: median(of(&all, key)),
                reached: in_tail.len(),
                tail_us: median(in_tail),
            })
        })
        .collect();
    Some(Tail {
        cycles: slowest.len(),
        from_us,
        median_us: median(totals),
        steps,
    })
}

impl Timeline {
    /// The table printed under the figures.
    pub fn text(&self) -> String {
        let mut out = format!(
            "timeline of {}: median µs from the first point, over the {} of {} cycles whose points came in the most common order\n     at µs   step µs  point\n",
            self.figure, self.in_order, self.cycles
        );
        let mut before = 0.0;
        for step in &self.steps {
            out.push_str(&format!(
                "{:>10.1}{:>10.1}  {}\n",
                step.median_us,
                step.median_us - before,
                point_name(step.point, step.nth)
            ));
            before = step.median_us;
        }
        if let Some(tail) = &self.tail {
            out.push_str(&format!(
                "its slowest {} cycles (from {:.1} µs; the median cycle {:.1} µs): the step into each point, median µs\n   typical      tail  reached  point\n",
                tail.cycles, tail.from_us, tail.median_us
            ));
            for step in &tail.steps {
                out.push_str(&format!(
                    "{:>10.1}{:>10.1}{:>9}  {}\n",
                    step.typical_us,
                    step.tail_us,
                    step.reached,
                    point_name(step.point, step.nth)
                ));
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        json!({
            "figure": self.figure,
            "cycles": self.cycles,
            "in_order": self.in_order,
            "steps": self.steps.iter().map(|s| json!({
                "point": s.point, "nth": s.nth, "median_us": s.median_us,
            })).collect::<Vec<_>>(),
            "tail": self.tail.as_ref().map(|t| json!({
                "cycles": t.cycles, "from_us": t.from_us, "median_us": t.median_us,
                "steps": t.steps.iter().map(|s| json!({
                    "point": s.point, "nth": s.nth, "typical_us": s.typical_us,
                    "tail_us": s.tail_us, "reached": s.reached,
                })).collect::<Vec<_>>(),
            })),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn windows_fold_into_medians_of_the_most_common_order() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let marks = vec![
            ("noise before", at(0)),
            // Three windows: two with the order start, a, b, a, end; one with b first.
            ("start", at(100)),
            ("a", at(110)),
            ("b", at(130)),
            ("a", at(140)),
            ("end", at(200)),
            ("between windows", at(250)),
            ("start", at(1000)),
            ("a", at(1030)),
            ("b", at(1050)),
            ("a", at(1060)),
            ("end", at(1300)),
            ("start", at(2000)),
            ("b", at(2001)),
            ("end", at(2002)),
            // An unfinished window is left out.
            ("start", at(3000)),
            ("a", at(3001)),
        ];
        let timeline = window("fig", &marks, "start", "end").unwrap();
        assert_eq!((timeline.cycles, timeline.in_order), (3, 2));
        let steps: Vec<(&str, usize, f64)> = timeline
            .steps
            .iter()
            .map(|s| (s.point, s.nth, s.median_us.round()))
            .collect();
        // Medians of two: the upper one (index len / 2).
        assert_eq!(
            steps,
            vec![
                ("start", 1, 0.0),
                ("a", 1, 30.0),
                ("b", 1, 50.0),
                ("a", 2, 60.0),
                ("end", 1, 300.0)
            ]
        );
        // The slowest 1 % of three cycles is one, the second (300 µs); each of its steps
        // beside the median step of every cycle that reached the point.
        let tail = timeline.tail.clone().unwrap();
        assert_eq!(
            (tail.cycles, tail.from_us.round(), tail.median_us.round()),
            (1, 300.0, 100.0)
        );
        let tail_steps: Vec<(&str, usize, f64, f64)> = tail
            .steps
            .iter()
            .map(|s| (s.point, s.nth, s.typical_us.round(), s.tail_us.round()))
            .collect();
        assert_eq!(
            tail_steps,
            vec![
                ("start", 1, 0.0, 0.0),
                ("a", 1, 30.0, 30.0),
                ("b", 1, 20.0, 20.0),
                ("a", 2, 10.0, 10.0),
                ("end", 1, 60.0, 240.0)
            ]
        );
        let text = timeline.text();
        assert!(text.contains("2 of 3 cycles"), "{text}");
        assert!(text.contains("a (#2)"), "{text}");
        assert!(
            text.contains("its slowest 1 cycles (from 300.0 µs"),
            "{text}"
        );
        assert!(window("fig", &marks, "start", "never").is_none());
    }
}
