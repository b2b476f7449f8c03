//! Figure 3, parked capacity: P pending gates over P/10 sessions held by the server; this
//! process's RSS (the server runs in-process, so the figure includes the benchmark client),
//! and the gate round trip measured while they are held.

use std::time::{Duration, Instant};

use super::harness::str_field;
use super::throughput::open_gates;
use super::{BenchServer, Counts, Figure, Result, common_conditions, percentile, round_trip};

/// The gates left pending on a server.
pub struct Parked {
    /// (session, approval), in the server's listing order.
    pub gates: Vec<(String, String)>,
    pub sessions: usize,
    pub create_secs: f64,
    /// Creation hit the time cap: fewer gates than asked.
    pub capped: bool,
    pub asked: usize,
}

/// Opens `counts.parked` gates (fewer if creation exceeds `counts.creation_cap`).
pub async fn park(server: &BenchServer, counts: Counts) -> Result<Parked> {
    let t0 = Instant::now();
    open_gates(
        server,
        counts.parked,
        counts.per_session,
        16,
        Some(counts.creation_cap),
    )
    .await?;
    // Messages in flight when the cap struck may still open gates: wait for a stable listing.
    let mut last = server.pending().await?.len();
    loop {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let now = server.pending().await?;
        if now.len() == last {
            let gates = now
                .iter()
                .map(|g| Ok((str_field(g, "session_id")?, str_field(g, "approval_id")?)))
                .collect::<Result<Vec<_>>>()?;
            let sessions = gates
                .iter()
                .map(|(s, _)| s.as_str())
                .collect::<std::collections::HashSet<_>>()
                .len();
            return Ok(Parked {
                capped: gates.len() < counts.parked,
                asked: counts.parked,
                sessions,
                gates,
                create_secs: t0.elapsed().as_secs_f64(),
            });
        }
        last = now.len();
    }
}

pub async fn measure(
    server: &BenchServer,
    parked: &Parked,
    baseline_mib: Option<f64>,
    counts: Counts,
) -> Result<Figure> {
    let rss = super::rss_mib().unwrap_or(f64::NAN);
    let cycles =
        round_trip::gate_cycles(server, counts.loaded_gates, super::timeline::AT_LOAD).await?;
    let p50 = percentile(&cycles.round_trip_ms, 50.0);
    let p99 = percentile(&cycles.round_trip_ms, 99.0);
    let p = parked.gates.len();
    let capped = if parked.capped {
        format!(
            " (asked {}, creation capped at {} s)",
            parked.asked,
            counts.creation_cap.as_secs()
        )
    } else {
        String::new()
    };
    Ok(Figure {
        id: 3,
        name: "parked capacity",
        values: vec![
            ("rss", rss, "MiB"),
            ("round trip p50 at load", p50, "ms"),
            ("round trip p99 at load", p99, "ms"),
        ],
        target: "RSS <= 250 MB with 10,000 gates over 1,000 sessions; round trip within 2x of figure 1",
        met: (p >= 10_000).then_some(rss <= 250.0 * 1_000_000.0 / 1_048_576.0),
        conditions: format!(
            "{p} pending gates over {} sessions{capped}, created in {:.1} s; RSS is VmRSS of the \
             whole process (server in-process plus the benchmark client; {:.1} MiB before this \
             server started, after earlier figures); round trip over {} gates on one more \
             session while they are held (compared with figure 1 below); {}",
            parked.sessions,
            parked.create_secs,
            baseline_mib.unwrap_or(f64::NAN),
            counts.loaded_gates,
            common_conditions()
        ),
    })
}
