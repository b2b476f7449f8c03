//! Figure 5, fan-out: S SSE subscribers on one session; one message is posted and each
//! subscriber's delivery time of its `user_message` event is taken from the POST.

use std::time::{Duration, Instant};

use futures::StreamExt;

use super::{BenchError, BenchServer, Figure, Result, common_conditions, ms, percentile};

pub async fn run(server: &BenchServer, subscribers: usize) -> Result<Figure> {
    let sid = server.create_session("ask").await?;
    let after = server.cursor(&sid).await?;
    let feeds = futures::stream::iter(0..subscribers)
        .map(|_| server.events(&sid, after))
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    // Let every stream reach its live phase.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t0 = Instant::now();
    let readers: Vec<_> = feeds
        .into_iter()
        .map(|mut feed| {
            tokio::spawn(async move {
                feed.next_of("user_message").await?;
                Ok::<_, BenchError>(t0.elapsed())
            })
        })
        .collect();
    server.send_message(&sid, "hello").await?;
    let mut samples = Vec::with_capacity(subscribers);
    for r in readers {
        let d = r
            .await
            .map_err(|e| BenchError::Protocol(format!("subscriber task: {e}")))??;
        samples.push(ms(d));
    }
    let p50 = percentile(&samples, 50.0);
    let p99 = percentile(&samples, 99.0);
    let max = percentile(&samples, 100.0);
    server.wait_idle(Duration::from_secs(60)).await?;
    Ok(Figure {
        id: 5,
        name: "fan-out",
        values: vec![("p50", p50, "ms"), ("p99", p99, "ms"), ("max", max, "ms")],
        target: "p99 <= 100 ms with 1,000 subscribers",
        met: (subscribers >= 1000).then_some(p99 <= 100.0),
        conditions: format!(
            "{subscribers} SSE subscribers on one session (one connection each, same process), \
             one event (`user_message`), timed from the message POST to its arrival at each \
             subscriber; {}",
            common_conditions()
        ),
    })
}
