//! Figure 4, decision throughput: G gates opened across sessions (`parallel:` batches), then
//! approved by C concurrent clients, each gate once; decisions per second of wall time.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::harness::str_field;
use super::{BenchError, BenchServer, Counts, Figure, Result, common_conditions};

/// A message that opens `n` gates at once in `ask` mode, each writing a file of the batch's
/// own (`batch` names it): a card binds the file it diffs, so two sessions' cards for one file
/// would make each other stale.
pub fn batch_message(batch: usize, n: usize) -> String {
    let mut text = String::from("parallel:\n");
    for i in 0..n {
        text.push_str(&format!("write bench/{batch}-{i}.txt: {i}\n"));
    }
    text
}

/// Opens `total` gates, `per_session` per new `ask` session, `concurrency` messages at a time;
/// returns the (session, approval) pairs once all are pending.
pub async fn open_gates(
    server: &BenchServer,
    total: usize,
    per_session: usize,
    concurrency: usize,
    cap: Option<Duration>,
) -> Result<Vec<(String, String)>> {
    let started = Instant::now();
    let sessions = total.div_ceil(per_session);
    let mut made: HashSet<String> = HashSet::new();
    let mut stream = futures::stream::iter(0..sessions)
        .map(|i| async move {
            let n = per_session.min(total - i * per_session);
            let sid = server.create_session("ask").await?;
            server.send_message(&sid, &batch_message(i, n)).await?;
            Ok::<_, BenchError>(sid)
        })
        .buffer_unordered(concurrency);
    while let Some(sid) = stream.next().await {
        made.insert(sid?);
        if cap.is_some_and(|c| started.elapsed() > c) {
            break;
        }
    }
    drop(stream);
    // Wait until every gate of those sessions is pending.
    let expected = made.len() * per_session;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let pending = server.pending().await?;
        let mut ours = Vec::new();
        for g in &pending {
            let sid = str_field(g, "session_id")?;
            if made.contains(&sid) {
                ours.push((sid, str_field(g, "approval_id")?));
            }
        }
        if ours.len() >= expected.min(total) {
            return Ok(ours);
        }
        if Instant::now() > deadline {
            return Err(BenchError::Protocol(format!(
                "only {} of {expected} gates pending after 10 minutes",
                ours.len()
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub async fn run(server: &BenchServer, counts: Counts) -> Result<Figure> {
    let per_session = 10;
    let gates = open_gates(server, counts.throughput_gates, per_session, 16, None).await?;
    let g = gates.len();
    let queue = Arc::new(Mutex::new(gates.into_iter().collect::<VecDeque<_>>()));
    let t0 = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..counts.clients {
        let queue = queue.clone();
        let http = server.http.clone();
        let base = server.base.clone();
        workers.push(tokio::spawn(async move {
            let mut failed = 0usize;
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some((sid, aid)) = next else { break };
                let resp = http
                    .post(format!("{base}/api/v1/sessions/{sid}/approvals/{aid}"))
                    .json(&serde_json::json!({ "decision": "approve" }))
                    .send()
                    .await;
                if !resp.is_ok_and(|r| r.status().is_success()) {
                    failed += 1;
                }
            }
            failed
        }));
    }
    let mut failed = 0;
    for w in workers {
        failed += w
            .await
            .map_err(|e| BenchError::Protocol(format!("client task: {e}")))?;
    }
    let elapsed = t0.elapsed();
    let rate = (g - failed) as f64 / elapsed.as_secs_f64();
    server.wait_idle(Duration::from_secs(300)).await?;
    Ok(Figure {
        id: 4,
        name: "decision throughput",
        values: vec![("rate", rate, "decisions/s")],
        target: ">= 5000 decisions/s",
        met: Some(rate >= 5000.0 && failed == 0),
        conditions: format!(
            "{g} gates over {} sessions ({per_session} per `parallel:` batch), {} concurrent \
             clients, wall time of the decision POSTs ({failed} failed); the approved file \
             writes run meanwhile; {}",
            g.div_ceil(per_session),
            counts.clients,
            common_conditions()
        ),
    })
}
