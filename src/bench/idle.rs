//! Figure 9, idle sessions: N sessions that each ran one short turn with their feed open, then
//! closed it. The hub drops a session nobody holds (no feed, no turn, no parked gate), so they
//! should cost next to nothing; the figure is this process's RSS growth over the server's
//! start, and how many sessions the hub still holds.

use futures::StreamExt;

use super::{BenchServer, Figure, Result, common_conditions, rss_mib};

/// A turn with no tool call: the demo agent answers in words.
const SHORT_TURN: &str = "hello";

/// Clients working side by side.
const CLIENTS: usize = 8;

/// The goal: 3,000 idle sessions within 15 MiB of the server's start.
const GOAL_MIB: f64 = 15.0;
const GOAL_SESSIONS: usize = 3_000;

pub async fn run(server: &BenchServer, sessions: usize) -> Result<Figure> {
    // Warm up first (the first turn loads the demo agent's and SQLite's working set).
    one_session(server).await?;
    settle(server).await?;
    let baseline = rss_mib().unwrap_or(f64::NAN);
    let t0 = std::time::Instant::now();
    let results: Vec<Result<()>> = futures::stream::iter(0..sessions)
        .map(|_| one_session(server))
        .buffer_unordered(CLIENTS)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>>>()?;
    let elapsed = t0.elapsed().as_secs_f64();
    settle(server).await?;
    let after = rss_mib().unwrap_or(f64::NAN);
    let live = server.live_sessions();
    let growth = after - baseline;
    Ok(Figure {
        id: 9,
        name: "idle sessions",
        values: vec![
            ("rss growth", growth, "MiB"),
            (
                "per session",
                growth * 1024.0 / sessions.max(1) as f64,
                "KiB",
            ),
            ("sessions held in memory", live as f64, ""),
        ],
        target: "<= 15 MiB for 3,000 idle sessions",
        met: (sessions >= GOAL_SESSIONS).then_some(growth <= GOAL_MIB && live == 0),
        conditions: format!(
            "{sessions} sessions, each: create, open its feed, one turn without tools, feed \
             closed ({elapsed:.1} s, {CLIENTS} clients); RSS is VmRSS of the whole process \
             (server and benchmark client) from {baseline:.1} MiB after a warm-up turn to \
             {after:.1} MiB once all were idle; {}",
            common_conditions()
        ),
    })
}

/// One session through its life: created, watched while its one turn runs, then let go.
async fn one_session(server: &BenchServer) -> Result<()> {
    let sid = server.create_session("ask").await?;
    let mut feed = server.events(&sid, 0).await?;
    server.send_message(&sid, SHORT_TURN).await?;
    feed.next_of("turn_finished").await?;
    Ok(())
}

/// Waits until no turn runs, then a moment for the last feeds to close.
async fn settle(server: &BenchServer) -> Result<()> {
    server.wait_idle(std::time::Duration::from_secs(60)).await?;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    Ok(())
}
