//! Figure 10, a person's answer under a loopback flood: 1,100 connections that each send half
//! a request head and then nothing (what any process on the machine, the agent's own commands
//! included, can open), and meanwhile decisions made the way a person's browser arrives: on a
//! new connection. Reported: the decision's round trip (POST to its answer) with the flood
//! held and without it, and how many flood connections the server still held at the end.

use std::io::Write;
use std::time::{Duration, Instant};

use super::{BenchServer, Figure, Result, common_conditions, ms, percentile};
use crate::bench::error::BenchError;

/// Half-sent requests held open, as in the issue.
pub const FLOOD: usize = 1100;

/// The goal for one decision under the flood.
const GOAL: Duration = Duration::from_secs(3);

pub async fn run(server: &BenchServer, decisions: usize) -> Result<Figure> {
    let quiet = decide_each(server, decisions).await?;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let flood = tokio::task::spawn_blocking(move || half_sent(&addr, FLOOD))
        .await
        .map_err(|e| BenchError::Protocol(format!("flood task: {e}")))?;
    let opened = flood.len();
    let loaded = decide_each(server, decisions).await?;
    let still_open = flood.iter().filter(|s| still_connected(s)).count();
    drop(flood);
    let worst = loaded.iter().copied().fold(0.0, f64::max);
    Ok(Figure {
        id: 10,
        name: "decision under a loopback flood",
        values: vec![
            ("p50 flooded", percentile(&loaded, 50.0), "ms"),
            ("p99 flooded", percentile(&loaded, 99.0), "ms"),
            ("max flooded", worst, "ms"),
            ("p50 quiet", percentile(&quiet, 50.0), "ms"),
            ("flood connections still open", still_open as f64, ""),
        ],
        target: "each decision well under 3 s with 1,100 half-sent requests",
        met: Some(opened >= FLOOD * 9 / 10 && worst < ms(GOAL)),
        conditions: format!(
            "{opened} half-sent requests from loopback held while {decisions} decisions are made, \
             each on a new connection (a new client), in a shell card's round trip; the soft \
             open-file limit raised to the hard one; {}",
            common_conditions()
        ),
    })
}

/// `n` gates, each approved by a client of its own (a new connection); the answers' times.
async fn decide_each(server: &BenchServer, n: usize) -> Result<Vec<f64>> {
    let sid = server.create_session("ask").await?;
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        server.send_message(&sid, &format!("run: echo {i}")).await?;
        let aid = wait_gate(server, &sid).await?;
        let person = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()?;
        let t0 = Instant::now();
        let resp = person
            .post(format!(
                "{}/api/v1/sessions/{sid}/approvals/{aid}",
                server.base
            ))
            .bearer_auth(super::harness::TOKEN)
            .json(&serde_json::json!({"decision": "approve"}))
            .send()
            .await?;
        let took = t0.elapsed();
        if !resp.status().is_success() {
            return Err(BenchError::Status {
                what: "decision under the flood".into(),
                status: resp.status().as_u16(),
                body: resp.text().await.unwrap_or_default(),
            });
        }
        samples.push(ms(took));
        server.wait_idle(Duration::from_secs(30)).await?;
    }
    Ok(samples)
}

async fn wait_gate(server: &BenchServer, sid: &str) -> Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pending = server.pending().await?;
        if let Some(aid) = pending
            .iter()
            .find(|g| g["session_id"] == sid)
            .and_then(|g| g["approval_id"].as_str())
        {
            return Ok(aid.to_owned());
        }
        if Instant::now() > deadline {
            return Err(BenchError::Protocol("no gate within 30 s".into()));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Opens `n` connections that each send half a request head. Blocking.
fn half_sent(addr: &str, n: usize) -> Vec<std::net::TcpStream> {
    (0..n)
        .filter_map(|_| {
            let mut stream = std::net::TcpStream::connect(addr).ok()?;
            stream
                .write_all(b"GET /api/v1/sessions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .ok()?;
            Some(stream)
        })
        .collect()
}

/// Whether the server still holds the connection (a peek that would block: nothing read, not
/// closed).
fn still_connected(stream: &std::net::TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut byte = [0u8; 1];
    matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}
