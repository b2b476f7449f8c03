//! Figure 7, recovery: with P gates pending, the server is stopped and a new one started on
//! the same data directory; the time from calling start until the inbox lists all P again and
//! a decision on the last one succeeds.

use std::path::Path;
use std::time::{Duration, Instant};

use super::capacity::Parked;
use super::{BenchError, BenchServer, Figure, Result, common_conditions};

pub async fn run(dir: &Path, parked: &Parked) -> Result<Figure> {
    let p = parked.gates.len();
    let Some((last_sid, last_aid)) = parked.gates.last().cloned() else {
        return Err(BenchError::Protocol("no parked gates to recover".into()));
    };
    let t0 = Instant::now();
    let server = BenchServer::start(dir, None).await?;
    let started = t0.elapsed();
    let result = async {
        let mut polls = 0usize;
        loop {
            polls += 1;
            let listed = server.pending().await?.len();
            if listed >= p {
                break;
            }
            if t0.elapsed() > Duration::from_secs(300) {
                return Err(BenchError::Protocol(format!(
                    "only {listed} of {p} gates listed 5 minutes after restart"
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let listed_at = t0.elapsed();
        loop {
            match server.approve(&last_sid, &last_aid).await {
                Ok(()) => break,
                Err(e) if t0.elapsed() > Duration::from_secs(300) => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        Ok((listed_at, t0.elapsed(), polls))
    }
    .await;
    server.stop().await?;
    let (listed_at, total, polls) = result?;
    let secs = total.as_secs_f64();
    Ok(Figure {
        id: 7,
        name: "recovery",
        values: vec![
            ("re-parked", secs, "s"),
            ("server start", started.as_secs_f64(), "s"),
            ("all listed", listed_at.as_secs_f64(), "s"),
        ],
        target: "10,000 pending gates re-parked <= 2 s after start",
        met: (p >= 10_000).then_some(secs <= 2.0),
        conditions: format!(
            "{p} pending gates over {} sessions; graceful stop, new server on the same data \
             dir; timed from the start call until GET /api/v1/approvals lists all {p} ({polls} \
             polls) and approving the last one succeeds; {}",
            parked.sessions,
            common_conditions()
        ),
    })
}
