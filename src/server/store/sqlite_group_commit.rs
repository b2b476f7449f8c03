//! Group commit for SQLite appends: the appends of every session that arrive while a commit is
//! in flight go into the next transaction together, each in its own savepoint, so N waiting
//! appends cost one fsync instead of N. Nobody is answered before the transaction holding
//! their events has committed, so the durability promise of `synchronous = FULL` is unchanged.
//!
//! A savepoint keeps one append's logical failure (a lost compare-and-set, an unknown session)
//! from touching the others. A database failure inside a batch of several is retried one
//! append per transaction, so every caller gets its own outcome, exactly as without batching.

use sqlx::Connection;
use sqlx::sqlite::SqlitePool;
use tokio::sync::{mpsc, oneshot};

use super::sqlite::append_in;
use super::{Commit, NewEvent, StoreError};
use crate::protocol::Event;

/// Appends taken into one transaction at most.
const MAX_BATCH: usize = 256;

/// Appends waiting for the writer; senders wait when it is full.
const QUEUE: usize = 4096;

type Reply = oneshot::Sender<Result<Vec<Event>, StoreError>>;

struct Job {
    session_id: String,
    events: Vec<NewEvent>,
    commit: Commit,
    reply: Reply,
}

/// The handle appends go through; the writer task ends when it is dropped.
pub struct GroupCommit {
    jobs: mpsc::Sender<Job>,
}

impl GroupCommit {
    /// Starts the writer task on the (single-connection) writer pool.
    pub fn start(writer: SqlitePool) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(run(writer, queue));
        GroupCommit { jobs }
    }

    /// Appends in the next group transaction; answers once it has committed (or failed).
    pub async fn append(
        &self,
        session_id: &str,
        events: Vec<NewEvent>,
        commit: Commit,
    ) -> Result<Vec<Event>, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            session_id: session_id.to_owned(),
            events,
            commit,
            reply,
        };
        self.jobs.send(job).await.map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }
}

fn writer_gone() -> StoreError {
    StoreError::Database(sqlx::Error::PoolClosed)
}

async fn run(writer: SqlitePool, mut queue: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit_batch(&writer, std::mem::take(&mut batch)).await;
    }
}

/// One transaction for every job; on a database failure of a batch of several, one
/// transaction per job instead.
async fn commit_batch(writer: &SqlitePool, jobs: Vec<Job>) {
    match try_together(writer, &jobs).await {
        Ok(outcomes) => answer(jobs, outcomes),
        Err(err) if jobs.len() == 1 => answer(jobs, vec![Err(err)]),
        Err(err) => {
            tracing::warn!(error = %err, appends = jobs.len(), "group commit failed; committing one by one");
            for job in jobs {
                let outcome = match try_together(writer, std::slice::from_ref(&job)).await {
                    Ok(mut outcomes) => outcomes.pop().unwrap_or_else(|| Err(writer_gone())),
                    Err(err) => Err(err),
                };
                let _ = job.reply.send(outcome);
            }
        }
    }
}

fn answer(jobs: Vec<Job>, outcomes: Vec<Result<Vec<Event>, StoreError>>) {
    for (job, outcome) in jobs.into_iter().zip(outcomes) {
        // A caller that stopped waiting (its request went away) needs no answer.
        let _ = job.reply.send(outcome);
    }
}

/// Runs `jobs` in one transaction, each in a savepoint when there are several. `Err` only for
/// a database failure, which spoils the whole transaction; a job's own logical failure (lost
/// compare-and-set, unknown session) is its outcome, with its changes rolled back.
async fn try_together(
    writer: &SqlitePool,
    jobs: &[Job],
) -> Result<Vec<Result<Vec<Event>, StoreError>>, StoreError> {
    let mut tx = writer.begin().await?;
    if let [job] = jobs {
        return match append_in(&mut tx, &job.session_id, &job.events, &job.commit).await {
            Ok(stored) => {
                tx.commit().await?;
                Ok(vec![Ok(stored)])
            }
            Err(StoreError::Database(err)) => Err(StoreError::Database(err)),
            Err(logical) => {
                tx.rollback().await?;
                Ok(vec![Err(logical)])
            }
        };
    }
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut savepoint = tx.begin().await?;
        match append_in(&mut savepoint, &job.session_id, &job.events, &job.commit).await {
            Ok(stored) => {
                savepoint.commit().await?;
                outcomes.push(Ok(stored));
            }
            Err(StoreError::Database(err)) => return Err(StoreError::Database(err)),
            Err(logical) => {
                savepoint.rollback().await?;
                outcomes.push(Err(logical));
            }
        }
    }
    tx.commit().await?;
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EventBody, Mode};
    use crate::server::store::sqlite::SqliteStore;
    use crate::server::store::{SessionRow, Store};

    fn job(
        session_id: &str,
        text: &str,
    ) -> (Job, oneshot::Receiver<Result<Vec<Event>, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let events = vec![NewEvent::new(
            None,
            EventBody::UserMessage {
                text: text.into(),
                approval_mode: Mode::Ask,
            },
        )];
        let job = Job {
            session_id: session_id.into(),
            events,
            commit: Commit::default(),
            reply,
        };
        (job, answer)
    }

    #[tokio::test]
    async fn one_failing_append_in_a_batch_leaves_the_others_committed() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = SqliteStore::open(&url, crate::server::config::Synchronous::Full)
            .await
            .unwrap();
        store
            .create_session(&SessionRow {
                id: "s".into(),
                title: "t".into(),
                created_at: crate::server::store::now_rfc3339(),
                approval_mode: "ask".into(),
                last_seq: 0,
                pre_plan_mode: None,
                plan_execution_mode: None,
            })
            .await
            .unwrap();
        let pool = SqlitePool::connect(&url).await.unwrap();
        let (a, a_answer) = job("s", "first");
        let (b, b_answer) = job("no-such-session", "lost");
        let (c, c_answer) = job("s", "third");
        commit_batch(&pool, vec![a, b, c]).await;
        let seqs = |r: Result<Vec<Event>, StoreError>| -> Vec<u64> {
            r.unwrap().iter().filter_map(|e| e.seq).collect()
        };
        assert_eq!(seqs(a_answer.await.unwrap()), vec![1]);
        assert!(matches!(
            b_answer.await.unwrap(),
            Err(StoreError::UnknownSession(_))
        ));
        // The third got the next seq: nothing of the failed one was left behind.
        assert_eq!(seqs(c_answer.await.unwrap()), vec![2]);
        let stored = store.events_after("s", 0, 10).await.unwrap();
        assert_eq!(stored.len(), 2);
    }
}
