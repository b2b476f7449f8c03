//! Figure 1, gate round trip: with the session's SSE feed open and its turn parked on a gate,
//! the time from sending the decision POST to the `tool_result` event arriving on the feed.
//! The same loop also times figure 2 (suspend), see `suspend.rs`.

use std::time::Instant;

use serde_json::Value;

use super::harness::str_field;
use super::{BenchServer, Figure, Result, common_conditions, ms, percentile};

/// The message that opens exactly one gate in `ask` mode: a file write (an `edit`-class tool),
/// so the figure times the gate rather than a process spawn.
pub const ONE_GATE: &str = "write bench/gate.txt: x";

/// Per-gate samples in milliseconds, and what a whole cycle cost the process.
pub struct Cycles {
    pub suspend_ms: Vec<f64>,
    pub round_trip_ms: Vec<f64>,
    /// What the process (server and client, all threads) spent inside the timed windows.
    pub round_trip_cost: Cost,
    pub suspend_cost: Cost,
}

/// Mean CPU time and context switches of the process within one timed window: with the wall
/// time, the profile of a latency figure (CPU-bound, or waiting on the disk and hand-offs).
#[derive(Default)]
pub struct Cost {
    pub cpu_ms: f64,
    pub switches: f64,
}

impl Cost {
    /// Adds the usage between `from` and now.
    fn add_since(&mut self, from: (f64, u64)) {
        let (cpu, switches) = super::cpu_and_switches();
        self.cpu_ms += cpu - from.0;
        self.switches += switches.saturating_sub(from.1) as f64;
    }

    fn mean(&mut self, n: usize) {
        self.cpu_ms /= n.max(1) as f64;
        self.switches /= n.max(1) as f64;
    }

    /// For a figure's conditions.
    pub fn describe(&self) -> String {
        format!(
            "each took {:.2} ms of CPU (server and client, all threads) and {:.0} context switches (mean)",
            self.cpu_ms, self.switches
        )
    }
}

/// `n` turns one after another on a new `ask` session: message → gate → approve → result.
/// With `--timeline`, their steps are kept under `names`.
pub async fn gate_cycles(
    server: &BenchServer,
    n: usize,
    names: super::timeline::Names,
) -> Result<Cycles> {
    let sid = server.create_session("ask").await?;
    let mut feed = server.events(&sid, 0).await?;
    let mut out = Cycles {
        suspend_ms: Vec::with_capacity(n),
        round_trip_ms: Vec::with_capacity(n),
        round_trip_cost: Cost::default(),
        suspend_cost: Cost::default(),
    };
    super::timeline::start();
    for _ in 0..n {
        let usage = super::cpu_and_switches();
        crate::timeline::mark("client: message POST sent");
        let t0 = Instant::now();
        let (sent, request) = tokio::join!(server.send_message(&sid, ONE_GATE), async {
            let ev = feed.next_of("approval_request").await;
            crate::timeline::mark("client: approval_request read");
            (ev, t0.elapsed())
        });
        sent?;
        let (request, suspend) = request;
        out.suspend_cost.add_since(usage);
        let request: Value = serde_json::from_str(&request?.data)?;
        let aid = str_field(&request, "approval_id")?;

        let usage = super::cpu_and_switches();
        crate::timeline::mark("client: decision POST sent");
        let t1 = Instant::now();
        let (decided, result) = tokio::join!(server.approve(&sid, &aid), async {
            let ev = feed.next_of("tool_result").await;
            crate::timeline::mark("client: tool_result read");
            (ev, t1.elapsed())
        });
        decided?;
        let (result, round_trip) = result;
        out.round_trip_cost.add_since(usage);
        result?;
        feed.next_of("turn_finished").await?;
        out.suspend_ms.push(ms(suspend));
        out.round_trip_ms.push(ms(round_trip));
    }
    super::timeline::keep_windows(names);
    out.round_trip_cost.mean(n);
    out.suspend_cost.mean(n);
    Ok(out)
}

pub fn figure(cycles: &Cycles, n: usize) -> Figure {
    let p50 = percentile(&cycles.round_trip_ms, 50.0);
    let p99 = percentile(&cycles.round_trip_ms, 99.0);
    Figure {
        id: 1,
        name: "gate round trip",
        values: vec![("p50", p50, "ms"), ("p99", p99, "ms")],
        target: "p50 <= 1 ms, p99 <= 3 ms",
        met: Some(p50 <= 1.0 && p99 <= 3.0),
        conditions: format!(
            "{n} gates in sequence on one session, decision POST -> tool_result on the open SSE \
             feed; the gated tool is `{ONE_GATE}` (a real file write is inside the timing); two \
             commits inside (`approval_resolved` + `tool_started`, then `tool_result`); {}; {}",
            cycles.round_trip_cost.describe(),
            common_conditions()
        ),
    }
}
