//! What the other instances commit, heard through LISTEN/NOTIFY.
//!
//! Every append is announced `a <session> <first> <last> <instance>` once it has committed
//! (`Announcer`), and a cancel request `c <session>`. A notification only wakes an instance:
//! it then reads what it missed from the table by seq, so a lost or late notification delays
//! an event but never loses or reorders it (the hub's periodic sweep catches up without any).

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::mpsc;

use crate::server::store::{Signal, StoreError};

/// Sends this instance's append notifications after their commits, in commit order, off the
/// appending task; what queued up meanwhile goes out together in one statement.
///
/// **Why not inside the append's transaction:** PostgreSQL serializes the commits of all
/// transactions that notified (a database-wide lock from the notification queue's pre-commit
/// until the commit record is flushed), which would put every append of every session in one
/// line, each with its own fsync. These notifications go in a transaction of their own that
/// does not wait for a flush (`synchronous_commit = off`: a notification needs no
/// durability). One lost here (a crash right after the commit, a dropped connection) is made
/// up by the sweep.
#[derive(Clone)]
pub struct Announcer {
    queue: mpsc::UnboundedSender<String>,
}

impl Announcer {
    /// Starts the sending task; it ends when the store (the last sender) is dropped.
    pub fn start(pool: PgPool) -> Announcer {
        let (queue, mut pending) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            let mut payloads = Vec::new();
            while pending.recv_many(&mut payloads, 256).await > 0 {
                let sent = sqlx::query(
                    "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p)
                     FROM unnest($2::TEXT[]) WITH ORDINALITY AS t(p, i) ORDER BY i",
                )
                .bind(CHANNEL)
                .bind(&payloads)
                .execute(&pool)
                .await;
                if let Err(err) = sent {
                    tracing::warn!(error = %err, "could not notify the other instances; their sweep catches up");
                }
                payloads.clear();
            }
        });
        Announcer { queue }
    }

    /// Queues the notification of a committed append.
    pub fn appended(&self, payload: String) {
        let _ = self.queue.send(payload);
    }
}

/// The one channel every instance listens on.
pub const CHANNEL: &str = "countersign";

/// How long the listener waits before reconnecting after an error.
const RETRY: Duration = Duration::from_secs(1);

/// The payload an append notifies.
pub fn appended(session_id: &str, first: u64, last: u64, instance: &str) -> String {
    format!("a {session_id} {first} {last} {instance}")
}

/// Reads a payload; `None` for this instance's own appends (its hub already published them)
/// and for anything it does not understand.
fn parse(payload: &str, instance: &str) -> Option<Signal> {
    let mut words = payload.split(' ');
    match words.next()? {
        "a" => {
            let session_id = words.next()?.into();
            let first = words.next()?.parse().ok()?;
            let last = words.next()?.parse().ok()?;
            (words.next()? != instance).then_some(Signal::Appended {
                session_id,
                first,
                last,
            })
        }
        "c" => Some(Signal::CancelRequested {
            session_id: words.next()?.into(),
        }),
        _ => None,
    }
}

/// Starts listening; the signals come on the returned channel until it is dropped.
pub async fn listen(
    pool: &PgPool,
    instance: String,
) -> Result<mpsc::UnboundedReceiver<Signal>, StoreError> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while !tx.is_closed() {
            let signal = match listener.try_recv().await {
                Ok(Some(notification)) => match parse(notification.payload(), &instance) {
                    Some(signal) => signal,
                    None => continue,
                },
                // The connection dropped: whatever was sent meanwhile is gone. The next
                // `try_recv` reconnects (and listens again).
                Ok(None) => Signal::Missed,
                Err(err) => {
                    tracing::warn!(error = %err, "lost the database's notifications; retrying");
                    tokio::time::sleep(RETRY).await;
                    Signal::Missed
                }
            };
            if tx.send(signal).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_read_back_and_our_own_are_skipped() {
        let payload = appended("s1", 3, 5, "me");
        assert_eq!(parse(&payload, "me"), None);
        assert_eq!(
            parse(&payload, "other"),
            Some(Signal::Appended {
                session_id: "s1".into(),
                first: 3,
                last: 5
            })
        );
        assert_eq!(
            parse("c s2", "me"),
            Some(Signal::CancelRequested {
                session_id: "s2".into()
            })
        );
        assert_eq!(parse("a s1 x 5 i", "me"), None);
        assert_eq!(parse("zzz", "me"), None);
    }
}
