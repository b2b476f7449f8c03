//! The SQLite writer: one thread owning the one write connection, doing group commit.
//!
//! Every change to the database is a job sent to this thread. The jobs that arrive while a
//! commit is in flight go into the next transaction together, one savepoint each, so N waiting
//! appends cost one fsync instead of N. Nobody is answered before the transaction holding their
//! change has committed, so `synchronous = FULL` still means "on disk before it is sent".
//!
//! **Why a plain thread:** an append is five to eight statements; on a thread of its own a
//! whole batch costs one hand-off to this thread and one back, not a round trip per statement.
//!
//! A savepoint keeps one job's logical failure (a lost compare-and-set, an unknown session)
//! from touching the others. A database failure inside a batch of several is retried one job
//! per transaction, so every caller gets its own outcome, exactly as without batching.

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

pub use super::jobs::Done;
use super::jobs::Job;
use super::write::perform;
use crate::protocol::{Event, RuleId};
use crate::server::audit;
use crate::server::store::{Commit, NewEvent, SessionRow, StoreError};

/// Jobs taken into one transaction at most.
const MAX_BATCH: usize = 256;

/// Jobs waiting for the writer; senders wait when it is full.
const QUEUE: usize = 4096;

/// The handle every write goes through; the thread ends when the last handle is dropped.
pub struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub fn start(conn: Connection) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("countersign-sqlite-writer".into())
            .spawn(move || run(conn, queue))
            .map_err(|e| StoreError::Database(format!("cannot start the writer thread: {e}")))?;
        Ok(Writer { jobs })
    }

    /// Whether the writer thread still takes jobs (health reports it).
    pub fn alive(&self) -> bool {
        !self.jobs.is_closed()
    }

    /// Ends the writer thread as a crash would.
    #[cfg(test)]
    pub async fn stop(&self) {
        let _ = self.jobs.send(Job::Stop).await;
        while self.alive() {
            tokio::task::yield_now().await;
        }
    }

    async fn submit<T>(
        &self,
        job: Job,
        answer: oneshot::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.jobs.send(job).await.map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }

    pub async fn append(
        &self,
        session_id: &str,
        events: Vec<NewEvent>,
        commit: Commit,
    ) -> Result<Vec<Event>, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Append {
            session_id: session_id.to_owned(),
            events,
            commit,
            reply,
        };
        self.submit(job, answer).await
    }

    pub async fn create_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::CreateSession {
            row: row.clone(),
            reply,
        };
        self.submit(job, answer).await
    }

    pub async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::DeleteSession {
            id: id.to_owned(),
            reply,
        };
        self.submit(job, answer).await
    }

    pub async fn revoke_rule(&self, rule_id: &RuleId, actor: &str) -> Result<bool, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::RevokeRule {
            rule_id: rule_id.clone(),
            actor: actor.to_owned(),
            reply,
        };
        self.submit(job, answer).await
    }

    /// Runs `work` in the writer's next transaction (a savepoint of its own).
    pub async fn exec(
        &self,
        work: impl Fn(&rusqlite::Savepoint<'_>) -> Result<Done, StoreError> + Send + 'static,
    ) -> Result<Done, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Exec {
            work: Box::new(work),
            reply,
        };
        self.submit(job, answer).await
    }

    pub async fn append_audit(&self, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::AppendAudit { drafts, reply }, answer)
            .await
    }
}

fn writer_gone() -> StoreError {
    StoreError::Database("the database writer has stopped".into())
}

fn run(mut conn: Connection, mut queue: mpsc::Receiver<Job>) {
    while let Some(first) = queue.blocking_recv() {
        #[cfg(test)]
        if matches!(first, Job::Stop) {
            return;
        }
        crate::timeline::mark("writer: batch taken");
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        // A panic in one batch must not take every later write down with it: its jobs' reply
        // senders drop during the unwind (their callers get an error, nothing hangs) and the
        // open transaction rolls back as it drops.
        let batch = std::panic::AssertUnwindSafe(|| commit_batch(&mut conn, jobs));
        if std::panic::catch_unwind(batch).is_err() {
            tracing::error!("the database writer panicked in a batch; its writes failed");
        }
    }
}

/// One transaction for every job; on a database failure of a batch of several, one
/// transaction per job instead.
fn commit_batch(conn: &mut Connection, jobs: Vec<Job>) {
    match try_together(conn, &jobs) {
        Ok(outcomes) => answer(jobs, outcomes),
        Err(err) if jobs.len() == 1 => answer(jobs, vec![Err(err)]),
        Err(err) => {
            tracing::warn!(error = %err, jobs = jobs.len(), "group commit failed; committing one by one");
            for job in jobs {
                let outcome = match try_together(conn, std::slice::from_ref(&job)) {
                    Ok(mut outcomes) => outcomes.pop().unwrap_or_else(|| Err(writer_gone())),
                    Err(err) => Err(err),
                };
                answer(vec![job], vec![outcome]);
            }
        }
    }
}

/// Sends each job its outcome; a caller that stopped waiting needs no answer.
fn answer(jobs: Vec<Job>, outcomes: Vec<Result<Done, StoreError>>) {
    for (job, outcome) in jobs.into_iter().zip(outcomes) {
        match job {
            Job::Append { reply, .. } => {
                let _ = reply.send(outcome.map(|d| match d {
                    Done::Events(events) => events,
                    _ => Vec::new(),
                }));
            }
            Job::CreateSession { reply, .. } | Job::AppendAudit { reply, .. } => {
                let _ = reply.send(outcome.map(|_| ()));
            }
            Job::DeleteSession { reply, .. } | Job::RevokeRule { reply, .. } => {
                let _ = reply.send(outcome.map(|d| matches!(d, Done::Flag(true))));
            }
            Job::Exec { reply, .. } => {
                let _ = reply.send(outcome);
            }
            #[cfg(test)]
            Job::Stop => {}
        }
    }
}

/// Runs `jobs` in one transaction, a savepoint each. `Err` only for a database failure, which
/// spoils the whole transaction; a job's own logical failure is its outcome, rolled back.
fn try_together(
    conn: &mut Connection,
    jobs: &[Job],
) -> Result<Vec<Result<Done, StoreError>>, StoreError> {
    let mut tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    crate::timeline::mark("writer: transaction begun");
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut savepoint = tx.savepoint()?;
        match perform(&mut savepoint, job) {
            Ok(done) => {
                crate::timeline::mark("writer: audit chained");
                savepoint.commit()?;
                outcomes.push(Ok(done));
            }
            Err(err) if err.is_database_failure() => return Err(err),
            Err(logical) => {
                savepoint.rollback()?;
                savepoint.commit()?;
                outcomes.push(Err(logical));
            }
        }
    }
    crate::timeline::mark("writer: statements done");
    tx.commit()?;
    crate::timeline::mark("writer: committed");
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EventBody, Mode};
    use crate::server::store::EventLog;
    use crate::server::store::Synchronous;
    use crate::server::store::sqlite::SqliteStore;
    use crate::server::store::sqlite::tests::session;

    type Answer = oneshot::Receiver<Result<Vec<Event>, StoreError>>;

    fn append(session_id: &str, text: &str) -> (Job, Answer) {
        let (reply, answer) = oneshot::channel();
        let events = vec![NewEvent::new(
            None,
            EventBody::UserMessage {
                text: text.into(),
                approval_mode: Mode::Ask,
            },
        )];
        let job = Job::Append {
            session_id: session_id.into(),
            events,
            commit: Commit::default(),
            reply,
        };
        (job, answer)
    }

    fn seqs(answer: Result<Vec<Event>, StoreError>) -> Vec<u64> {
        answer.unwrap().iter().filter_map(|e| e.seq).collect()
    }

    #[tokio::test]
    async fn one_failing_job_in_a_batch_leaves_the_others_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = SqliteStore::open(&format!("sqlite://{}", path.display()), Synchronous::Full)
            .await
            .unwrap();
        let mut conn = super::super::connection::open(
            &path,
            super::super::connection::Role::Writer(Synchronous::Full),
        )
        .unwrap();
        let (create_reply, created) = oneshot::channel();
        let create = Job::CreateSession {
            row: session("s"),
            reply: create_reply,
        };
        let (a, a_answer) = append("s", "first");
        let (b, b_answer) = append("no-such-session", "lost");
        let (c, c_answer) = append("s", "third");
        commit_batch(&mut conn, vec![create, a, b, c]);
        created.await.unwrap().unwrap();
        assert_eq!(seqs(a_answer.await.unwrap()), vec![1]);
        assert!(matches!(
            b_answer.await.unwrap(),
            Err(StoreError::UnknownSession(_))
        ));
        // The third got the next seq: nothing of the failed one was left behind.
        assert_eq!(seqs(c_answer.await.unwrap()), vec![2]);
        assert_eq!(
            store.events_after(&"s".into(), 0, 10).await.unwrap().len(),
            2
        );
    }

    #[tokio::test]
    async fn a_database_failure_in_a_batch_is_retried_job_by_job() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = SqliteStore::open(&format!("sqlite://{}", path.display()), Synchronous::Full)
            .await
            .unwrap();
        let mut conn = super::super::connection::open(
            &path,
            super::super::connection::Role::Writer(Synchronous::Full),
        )
        .unwrap();
        let row = session("s");
        store.create_session(&row).await.unwrap();
        // Creating the same session again breaks a constraint: a database failure.
        let (dup_reply, duplicate) = oneshot::channel();
        let dup = Job::CreateSession {
            row,
            reply: dup_reply,
        };
        let (a, a_answer) = append("s", "kept");
        commit_batch(&mut conn, vec![dup, a]);
        assert!(duplicate.await.unwrap().unwrap_err().is_database_failure());
        assert_eq!(seqs(a_answer.await.unwrap()), vec![1]);
    }
}
