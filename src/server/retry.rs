//! The one retry loop for a message sent to someone else's server (a webhook, a push
//! service): try at once, then after each pause, until an attempt settles it.

use std::future::Future;
use std::time::Duration;

/// The pauses before each retry of a notification or a push: 1 s, 4 s, 15 s.
pub const PAUSES: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(4),
    Duration::from_secs(15),
];

/// What one attempt came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt<T> {
    /// Settled (delivered, or refused in a way repeating will not change): stop with this.
    Settled(T),
    /// Worth repeating after the next pause (a network error, a 429, a 5xx).
    Again,
}

/// Runs `attempt` (numbered from 0) at once and after each of `pauses` until one settles;
/// `None` when every attempt asked for another.
pub async fn with_pauses<T, F, Fut>(pauses: &[Duration], mut attempt: F) -> Option<T>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Attempt<T>>,
{
    let waits = std::iter::once(Duration::ZERO).chain(pauses.iter().copied());
    for (n, pause) in waits.enumerate() {
        tokio::time::sleep(pause).await;
        if let Attempt::Settled(outcome) = attempt(n).await {
            return Some(outcome);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn it_stops_at_the_first_settled_attempt_and_gives_up_after_the_last_pause() {
        let pauses = [Duration::from_secs(1), Duration::from_secs(4)];
        let mut seen = Vec::new();
        let out = with_pauses(&pauses, |n| {
            seen.push(n);
            async move {
                if n == 1 {
                    Attempt::Settled("ok")
                } else {
                    Attempt::Again
                }
            }
        })
        .await;
        assert_eq!((out, seen), (Some("ok"), vec![0, 1]));

        let started = tokio::time::Instant::now();
        let mut tries = 0;
        let out: Option<()> = with_pauses(&pauses, |_| {
            tries += 1;
            async { Attempt::Again }
        })
        .await;
        assert_eq!((out, tries), (None, 3), "once, then once per pause");
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(5),
            "every pause was waited"
        );
    }
}
