//! Figure 5, fan-out: S SSE subscribers on one session; one message is posted and each
//! subscriber's delivery time of its `user_message` event is taken from the POST.

use std::time::{Duration, Instant};

use futures::StreamExt;

use super::harness::RawFeed;
use super::{BenchError, BenchServer, Figure, Result, common_conditions, ms, percentile};

/// Delivery times (ms from the request) of one event of type `kind` to every feed.
async fn deliver(
    feeds: Vec<RawFeed>,
    kind: &'static str,
    send: impl Future<Output = Result<()>>,
) -> Result<(Vec<f64>, Vec<RawFeed>)> {
    let t0 = Instant::now();
    let readers: Vec<_> = feeds
        .into_iter()
        .map(|mut feed| {
            tokio::spawn(async move {
                feed.wait_for(kind).await?;
                Ok::<_, BenchError>((t0.elapsed(), feed))
            })
        })
        .collect();
    send.await?;
    let mut samples = Vec::with_capacity(readers.len());
    let mut feeds = Vec::with_capacity(readers.len());
    for r in readers {
        let (d, feed) = r
            .await
            .map_err(|e| BenchError::Protocol(format!("subscriber task: {e}")))??;
        samples.push(ms(d));
        feeds.push(feed);
    }
    Ok((samples, feeds))
}

pub async fn run(server: &BenchServer, subscribers: usize) -> Result<Figure> {
    let sid = server.create_session("ask").await?;
    let after = server.cursor(&sid).await?;
    let feeds = futures::stream::iter(0..subscribers)
        .map(|_| server.raw_feed(&sid, after))
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    // Let every stream reach its live phase.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The first event each new connection receives.
    let (first, feeds) = deliver(feeds, "mode_changed", server.set_mode(&sid, "plan")).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // One event and nothing else: a mode change.
    let (alone, feeds) = deliver(feeds, "mode_changed", server.set_mode(&sid, "ask")).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The same while a turn starts streaming its answer (deltas to every feed compete).
    let (with_turn, _feeds) =
        deliver(feeds, "user_message", server.send_message(&sid, "hello")).await?;
    let p99 = percentile(&alone, 99.0);
    server.wait_idle(Duration::from_secs(60)).await?;
    Ok(Figure {
        id: 5,
        name: "fan-out",
        values: vec![
            ("p50", percentile(&alone, 50.0), "ms"),
            ("p99", p99, "ms"),
            ("max", percentile(&alone, 100.0), "ms"),
            ("p99 of the first event", percentile(&first, 99.0), "ms"),
            (
                "p99 with a streaming turn",
                percentile(&with_turn, 99.0),
                "ms",
            ),
        ],
        target: "p99 <= 100 ms with 1,000 subscribers",
        met: (subscribers >= 1000).then_some(p99 <= 100.0),
        conditions: format!(
            "{subscribers} SSE subscribers on one session (one HTTP/1.1 connection each, read by \
             one task each straight off the socket, in the same process); p50/p99/max: one \
             `mode_changed` event (PUT mode), timed from the request to its arrival at each \
             subscriber; the last value: a message's `user_message` while its turn starts \
             streaming deltas to all subscribers; {}",
            common_conditions()
        ),
    })
}
