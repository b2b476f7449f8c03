//! The SQLite writer: one thread owning the one write connection, doing group commit.
//!
//! Every change to the database is a job sent to this thread. The jobs that arrive while a
//! commit is in flight go into the next transaction together, one savepoint each, so N waiting
//! appends cost one fsync instead of N. Nobody is answered before the transaction holding their
//! change has committed, so `synchronous = FULL` still means "on disk before it is sent".
//!
//! **Why a plain thread and rusqlite** (the readers stay on sqlx): sqlx runs each statement as
//! a round trip to its connection's worker thread, two context switches each; an append is
//! five to eight statements. Here a whole batch costs one hand-off to this thread and one back.
//!
//! A savepoint keeps one job's logical failure (a lost compare-and-set, an unknown session)
//! from touching the others. A database failure inside a batch of several is retried one job
//! per transaction, so every caller gets its own outcome, exactly as without batching.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Savepoint, params};
use tokio::sync::{mpsc, oneshot};

use super::{Commit, GateChange, NewEvent, SessionRow, StoreError, now_rfc3339};
use crate::protocol::{Event, RuleScope};
use crate::server::audit;
use crate::server::config::Synchronous;

/// Jobs taken into one transaction at most.
const MAX_BATCH: usize = 256;

/// Jobs waiting for the writer; senders wait when it is full.
const QUEUE: usize = 4096;

/// A change to make, and where its outcome goes.
#[allow(clippy::large_enum_variant)] // short-lived, moved once through the queue
enum Job {
    Append {
        session_id: String,
        events: Vec<NewEvent>,
        commit: Commit,
        reply: oneshot::Sender<Result<Vec<Event>, StoreError>>,
    },
    CreateSession {
        row: SessionRow,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    DeleteSession {
        id: String,
        reply: oneshot::Sender<Result<bool, StoreError>>,
    },
    RevokeRule {
        rule_id: String,
        actor: String,
        reply: oneshot::Sender<Result<bool, StoreError>>,
    },
    AppendAudit {
        drafts: Vec<audit::AuditDraft>,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Ends the writer thread, as a crash would (tests of what a dead writer looks like).
    #[cfg(test)]
    Stop,
}

/// A job's result before it is sent back (one type, so a batch can hold them side by side).
enum Done {
    Events(Vec<Event>),
    Unit,
    Flag(bool),
}

/// The handle every write goes through; the thread ends when the last handle is dropped.
pub struct Writer {
    jobs: mpsc::Sender<Job>,
}

/// Opens the write connection the way the writer uses it (WAL is set by the migrations).
pub fn open_connection(path: &Path, synchronous: Synchronous) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "wal")?;
    conn.pragma_update(
        None,
        "synchronous",
        match synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        },
    )?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub fn start(conn: Connection) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("countersign-sqlite-writer".into())
            .spawn(move || run(conn, queue))
            .map_err(|e| StoreError::Writer(e.to_string()))?;
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

    pub async fn revoke_rule(&self, rule_id: &str, actor: &str) -> Result<bool, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job::RevokeRule {
            rule_id: rule_id.to_owned(),
            actor: actor.to_owned(),
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
    StoreError::Writer("the database writer has stopped".into())
}

fn run(mut conn: Connection, mut queue: mpsc::Receiver<Job>) {
    while let Some(first) = queue.blocking_recv() {
        #[cfg(test)]
        if matches!(first, Job::Stop) {
            return;
        }
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
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut savepoint = tx.savepoint()?;
        match perform(&mut savepoint, job) {
            Ok(done) => {
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
    tx.commit()?;
    Ok(outcomes)
}

fn perform(sp: &mut Savepoint<'_>, job: &Job) -> Result<Done, StoreError> {
    match job {
        Job::Append {
            session_id,
            events,
            commit,
            ..
        } => append_in(sp, session_id, events, commit).map(Done::Events),
        #[cfg(test)]
        Job::Stop => Ok(Done::Unit),
        Job::CreateSession { row, .. } => {
            sp.prepare_cached(
                "INSERT INTO sessions (id, title, created_at, approval_mode, last_seq) VALUES (?1, ?2, ?3, ?4, 0)",
            )?
            .execute(params![row.id, row.title, row.created_at, row.approval_mode])?;
            Ok(Done::Unit)
        }
        Job::DeleteSession { id, .. } => {
            let n = sp
                .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute(params![id])?;
            Ok(Done::Flag(n > 0))
        }
        Job::RevokeRule { rule_id, actor, .. } => {
            let n = sp
                .prepare_cached(
                    "UPDATE rules SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL",
                )?
                .execute(params![now_rfc3339(), rule_id])?;
            if n == 0 {
                return Ok(Done::Flag(false));
            }
            let draft = audit::AuditDraft {
                actor: actor.clone(),
                action: "rule_revoked",
                subject: rule_id.clone(),
                detail: serde_json::json!({}),
            };
            chain_audit(sp, vec![draft])?;
            Ok(Done::Flag(true))
        }
        Job::AppendAudit { drafts, .. } => {
            chain_audit(sp, drafts.clone())?;
            Ok(Done::Unit)
        }
    }
}

/// One append: gate change, rule use, seq allocation, the events, their audit entries.
fn append_in(
    conn: &Connection,
    session_id: &str,
    events: &[NewEvent],
    commit: &Commit,
) -> Result<Vec<Event>, StoreError> {
    let count = events.len() as i64;
    if let Some(change) = &commit.gate {
        apply_gate_change(conn, session_id, change)?;
    }
    if let Some(rule_id) = &commit.rule_used {
        conn.prepare_cached("UPDATE rules SET uses = uses + 1, last_used_at = ?1 WHERE id = ?2")?
            .execute(params![now_rfc3339(), rule_id])?;
    }
    let last: Option<i64> = conn
        .prepare_cached(
            // SET expressions all see the old row: entering plan remembers the mode it left,
            // leaving plan remembers the mode it left for.
            "UPDATE sessions SET last_seq = last_seq + ?1,
                 pre_plan_mode = CASE WHEN ?2 = 'plan' AND approval_mode <> 'plan'
                                      THEN approval_mode ELSE pre_plan_mode END,
                 plan_execution_mode = CASE WHEN ?2 IS NOT NULL AND ?2 <> 'plan' AND approval_mode = 'plan'
                                            THEN ?2 ELSE plan_execution_mode END,
                 approval_mode = COALESCE(?2, approval_mode)
             WHERE id = ?3 RETURNING last_seq",
        )?
        .query_row(
            params![count, commit.set_mode.map(|m| m.as_str()), session_id],
            |row| row.get(0),
        )
        .optional()?;
    let Some(last) = last else {
        return Err(StoreError::UnknownSession(session_id.to_owned()));
    };
    let at = now_rfc3339();
    let mut stored = Vec::with_capacity(events.len());
    let mut insert = conn.prepare_cached(
        "INSERT INTO events (session_id, seq, kind, turn_id, at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (i, new) in events.iter().enumerate() {
        let seq = (last - count + 1 + i as i64).max(1) as u64;
        let event = Event {
            seq: Some(seq),
            at: at.clone(),
            turn_id: new.turn_id.clone(),
            body: new.body.clone(),
        };
        let json = serde_json::to_string(&event).map_err(|e| StoreError::Corrupt {
            session_id: session_id.to_owned(),
            seq,
            reason: e.to_string(),
        })?;
        insert.execute(params![
            session_id,
            seq as i64,
            event.kind(),
            event.turn_id,
            event.at,
            json
        ])?;
        stored.push(event);
    }
    let new_rule = match &commit.gate {
        Some(GateChange::Resolve { new_rule, .. }) => new_rule.as_ref(),
        _ => None,
    };
    chain_audit(conn, audit::drafts_for(session_id, &stored, new_rule))?;
    Ok(stored)
}

/// Opens or resolves a gate inside the append's transaction.
fn apply_gate_change(
    conn: &Connection,
    session_id: &str,
    change: &GateChange,
) -> Result<(), StoreError> {
    match change {
        GateChange::Open(request) => {
            conn.prepare_cached(
                "INSERT INTO approvals (approval_id, session_id, turn_id, request, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                request.body.approval_id,
                session_id,
                request.turn_id,
                super::sqlite::to_json(session_id, request)?,
                request.body.created_at,
                request.body.expires_at
            ])?;
        }
        GateChange::Resolve {
            resolution,
            new_rule,
        } => {
            let won =
                conn.prepare_cached(
                    "UPDATE approvals SET resolution = ?1, resolved_at = ?2
                     WHERE approval_id = ?3 AND session_id = ?4 AND resolution IS NULL",
                )?
                .execute(params![
                    super::sqlite::to_json(session_id, resolution)?,
                    resolution.resolved_at,
                    resolution.approval_id,
                    session_id
                ])? == 1;
            if !won {
                let existing: Option<Option<String>> = conn
                    .prepare_cached(
                        "SELECT resolution FROM approvals WHERE approval_id = ?1 AND session_id = ?2",
                    )?
                    .query_row(params![resolution.approval_id, session_id], |row| {
                        row.get(0)
                    })
                    .optional()?;
                return Err(match existing.flatten() {
                    Some(json) => StoreError::AlreadyResolved(Box::new(super::sqlite::parse_json(
                        session_id, &json,
                    )?)),
                    None => StoreError::UnknownApproval(resolution.approval_id.clone()),
                });
            }
            if let Some(rule) = new_rule {
                conn.prepare_cached(
                    "INSERT INTO rules (id, tool, pattern, scope, session_id, created_at, created_by_approval, uses, expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8)",
                )?
                .execute(params![
                    rule.id,
                    rule.tool,
                    rule.pattern,
                    match rule.scope {
                        RuleScope::Session => "session",
                        RuleScope::Workspace => "workspace",
                    },
                    rule.session_id,
                    rule.created_at,
                    rule.created_by_approval,
                    rule.expires_at
                ])?;
            }
        }
    }
    Ok(())
}

/// Chains `drafts` onto the audit log inside the caller's transaction.
fn chain_audit(conn: &Connection, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
    if drafts.is_empty() {
        return Ok(());
    }
    let last: Option<(i64, String)> = conn
        .prepare_cached("SELECT n, hash FROM audit ORDER BY n DESC LIMIT 1")?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let (mut n, mut prev) = last
        .map(|(n, h)| (n.max(0) as u64, h))
        .unwrap_or((0, audit::GENESIS.to_owned()));
    let at = now_rfc3339();
    let mut insert = conn.prepare_cached(
        "INSERT INTO audit (n, at, actor, action, subject, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for draft in drafts {
        n += 1;
        let entry = audit::seal(draft, n, at.clone(), prev);
        insert.execute(params![
            entry.n as i64,
            entry.at,
            entry.actor,
            entry.action,
            entry.subject,
            serde_json::to_string(&entry.detail).unwrap_or_default(),
            entry.prev_hash,
            entry.hash
        ])?;
        prev = entry.hash;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EventBody, Mode};
    use crate::server::store::Store;
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
        let mut conn = open_connection(&path, Synchronous::Full).unwrap();
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
        assert_eq!(store.events_after("s", 0, 10).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_database_failure_in_a_batch_is_retried_job_by_job() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = SqliteStore::open(&format!("sqlite://{}", path.display()), Synchronous::Full)
            .await
            .unwrap();
        let mut conn = open_connection(&path, Synchronous::Full).unwrap();
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
