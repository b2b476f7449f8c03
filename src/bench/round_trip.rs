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
    /// Wall time of one whole cycle (message to `turn_finished`), mean.
    pub cycle_ms: f64,
    /// CPU time of the process (server and client, all threads) per cycle, mean.
    pub cpu_ms_per_cycle: f64,
    /// Context switches of the process per cycle, mean.
    pub switches_per_cycle: f64,
}

/// `n` turns one after another on a new `ask` session: message → gate → approve → result.
pub async fn gate_cycles(server: &BenchServer, n: usize) -> Result<Cycles> {
    let sid = server.create_session("ask").await?;
    let mut feed = server.events(&sid, 0).await?;
    let mut out = Cycles {
        suspend_ms: Vec::with_capacity(n),
        round_trip_ms: Vec::with_capacity(n),
        cycle_ms: 0.0,
        cpu_ms_per_cycle: 0.0,
        switches_per_cycle: 0.0,
    };
    let (cpu0, switches0) = super::cpu_and_switches();
    let started = Instant::now();
    for _ in 0..n {
        let t0 = Instant::now();
        let (sent, request) = tokio::join!(server.send_message(&sid, ONE_GATE), async {
            let ev = feed.next_of("approval_request").await;
            (ev, t0.elapsed())
        });
        sent?;
        let (request, suspend) = request;
        let request: Value = serde_json::from_str(&request?.data)?;
        let aid = str_field(&request, "approval_id")?;

        let t1 = Instant::now();
        let (decided, result) = tokio::join!(server.approve(&sid, &aid), async {
            let ev = feed.next_of("tool_result").await;
            (ev, t1.elapsed())
        });
        decided?;
        let (result, round_trip) = result;
        result?;
        feed.next_of("turn_finished").await?;
        out.suspend_ms.push(ms(suspend));
        out.round_trip_ms.push(ms(round_trip));
    }
    let (cpu1, switches1) = super::cpu_and_switches();
    let cycles = n.max(1) as f64;
    out.cycle_ms = ms(started.elapsed()) / cycles;
    out.cpu_ms_per_cycle = (cpu1 - cpu0) / cycles;
    out.switches_per_cycle = switches1.saturating_sub(switches0) as f64 / cycles;
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
             commits inside (`approval_resolved` + `tool_started`, then `tool_result`); a whole \
             cycle (message to turn_finished, six commits) took {:.2} ms of wall time, {:.2} ms \
             of CPU (server and client) and {:.0} context switches; {}",
            cycles.cycle_ms,
            cycles.cpu_ms_per_cycle,
            cycles.switches_per_cycle,
            common_conditions()
        ),
    }
}
