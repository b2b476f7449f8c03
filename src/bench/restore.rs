//! Figure 6, restore: the server-rendered page `/sessions/{sid}` of a session with E events
//! and one pending gate; p50 of full page loads.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::round_trip::ONE_GATE;
use super::{BenchError, BenchServer, Counts, Figure, Result, common_conditions, ms, percentile};

/// Read-only tool calls per filler message: under the default budget of 50 per turn.
const CALLS_PER_TURN: usize = 45;

/// The session's page loaded `loads` times in sequence: each load's ms, and the page's size.
async fn load_page(server: &BenchServer, sid: &str, loads: usize) -> Result<(Vec<f64>, usize)> {
    let url = format!("{}/sessions/{sid}", server.base);
    let mut samples = Vec::with_capacity(loads);
    let mut bytes = 0usize;
    for _ in 0..loads {
        let t0 = Instant::now();
        let resp = server.http.get(&url).send().await?;
        let status = resp.status();
        let body = resp.text().await?;
        let d = t0.elapsed();
        if !status.is_success() {
            return Err(BenchError::Status {
                what: "session page".into(),
                status: status.as_u16(),
                body: body.chars().take(200).collect(),
            });
        }
        bytes = body.len();
        samples.push(ms(d));
    }
    Ok((samples, bytes))
}

pub async fn run(server: &BenchServer, counts: Counts) -> Result<Figure> {
    let sid = server.create_session("ask").await?;
    let mut feed = server.events(&sid, 0).await?;
    let filler = "list\n".repeat(CALLS_PER_TURN);
    let mut events = 0u64;
    // Each filler turn adds about 3 events per call plus a few.
    while events + 10 < counts.restore_events as u64 {
        server.send_message(&sid, &filler).await?;
        feed.next_of("turn_finished").await?;
        events = server.cursor(&sid).await?;
    }
    server.send_message(&sid, ONE_GATE).await?;
    feed.next_of("approval_request").await?;
    drop(feed);
    events = server.cursor(&sid).await?;

    let (samples, bytes) = load_page(server, &sid, counts.page_loads).await?;
    let p50 = percentile(&samples, 50.0);
    let p99 = percentile(&samples, 99.0);
    // Leave the server idle: answer the gate.
    let pending = server.pending().await?;
    if let Some(aid) = pending
        .iter()
        .find(|g| g.get("session_id").and_then(Value::as_str) == Some(sid.as_str()))
        .and_then(|g| g.get("approval_id").and_then(Value::as_str))
    {
        server.approve(&sid, aid).await?;
    }
    server.wait_idle(Duration::from_secs(60)).await?;
    Ok(Figure {
        id: 6,
        name: "restore",
        values: vec![("p50", p50, "ms"), ("p99", p99, "ms")],
        target: "p50 <= 30 ms with 10,000 events and one pending gate",
        met: (events >= 10_000).then_some(p50 <= 30.0),
        conditions: format!(
            "GET /sessions/{{sid}} (SSR HTML, {} KiB, uncompressed) of a session with {events} \
             events and one pending gate, {} loads in sequence; {}",
            bytes / 1024,
            counts.page_loads,
            common_conditions()
        ),
    })
}
