//! The SQLite store: one file, WAL, one driver (rusqlite) for reads and writes.
//!
//! Why one writer: SQLite allows one writer at a time anyway, and a deferred transaction that
//! reads then writes can fail with SQLITE_BUSY_SNAPSHOT under concurrency; funnelling writes
//! through one connection (on one writer thread with group commit, `batch.rs`) makes commits
//! queue instead of fail. `synchronous = FULL` by default: a commit is on disk before `append`
//! returns, so an event is never sent before it would survive a power cut, let alone a
//! `kill -9`; `[storage] synchronous = "normal"` trades the power-cut half for speed.
//!
//! Files by job: `connection.rs` opens connections (the PRAGMAs), `migrate.rs` the schema,
//! `read.rs` the reads, `batch.rs` the writer thread and group commit, `write.rs` the SQL of
//! each change, `codec.rs` rows ↔ types.

mod batch;
mod codec;
mod connection;
mod jobs;
mod migrate;
mod outside;
mod passkeys;
mod people;
mod push;
mod quorum;
mod read;
mod review;
mod secrets;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::{
    AuditRepo, Commit, EventLog, ExternalGate, GateRepo, GateRow, NewEvent, OutsideRepo,
    ResolvedCard, RuleRepo, SessionRow, StoreError, TokenRepo, TokenRow, WaitingCounts,
};
use crate::protocol::{
    ApprovalId, ApprovalRequest, AuditEntry, Event, Rule, RuleId, SessionId, Timestamp,
};
use crate::server::audit;
use crate::server::store::Synchronous;
use batch::{Done, Writer};
use connection::Role;
use read::Readers;

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        StoreError::Sqlite(err)
    }
}

pub struct SqliteStore {
    readers: Arc<Readers>,
    writer: Writer,
}

/// The database file a `sqlite://` URL names (`None` for other URLs and in-memory databases).
pub fn file_of(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

impl SqliteStore {
    /// Opens (creating if needed) the database `url` names, brings its schema up to date and
    /// starts the writer.
    pub async fn open(url: &str, synchronous: Synchronous) -> Result<Self, StoreError> {
        let path = file_of(url).ok_or_else(|| StoreError::UnsupportedUrl(url.to_owned()))?;
        let writer_path = path.clone();
        let conn = tokio::task::spawn_blocking(move || open_writer(&writer_path, synchronous))
            .await
            .map_err(|e| StoreError::Database(e.to_string()))??;
        Ok(SqliteStore {
            readers: Arc::new(Readers::new(path)),
            writer: Writer::start(conn)?,
        })
    }
}

impl SqliteStore {
    /// Runs `work` on the read connections from a blocking thread, so a scan (a list, a page
    /// of the log or the audit) never holds one of the runtime's async workers (the writer has
    /// its own thread too). A lookup by a unique key (`lookup`) stays on the calling thread:
    /// in WAL mode it never waits for the writer and reads a few cached pages, and the hop
    /// cost more than the read (measured: BENCHMARKS.md, issue 27).
    async fn on_readers<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Readers) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let readers = Arc::clone(&self.readers);
        tokio::task::spawn_blocking(move || work(&readers))
            .await
            .map_err(|e| StoreError::Database(format!("a read thread ended: {e}")))?
    }

    /// A lookup by a unique key, on the calling thread (see `on_readers`) when a read
    /// connection is free; when every one is busy (long scans), it waits for one on a blocking
    /// thread, never on the async worker.
    async fn lookup<T: Send + 'static>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        match self.readers.try_with(read) {
            Ok(done) => done,
            Err(read) => self.read(read).await,
        }
    }

    /// `on_readers` for one statement's worth of work on a free read connection.
    async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.on_readers(move |readers| readers.with(read)).await
    }
}

/// The write connection, with the schema migrated on it.
fn open_writer(path: &Path, synchronous: Synchronous) -> Result<rusqlite::Connection, StoreError> {
    let mut conn = connection::open(path, Role::Writer(synchronous))?;
    migrate::run(&mut conn).map_err(StoreError::Migration)?;
    Ok(conn)
}

#[async_trait]
impl EventLog for SqliteStore {
    async fn health(&self) -> Result<(), String> {
        if !self.writer.alive() {
            return Err("the database writer has stopped: writes fail until a restart".into());
        }
        self.on_readers(|r| r.ping())
            .await
            .map_err(|e| format!("the database does not answer reads: {e}"))
    }

    async fn create_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        super::check_storable_row(row)?;
        self.writer.create_session(row).await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.on_readers(|r| r.list_sessions()).await
    }

    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        let id = id.as_str().to_owned();
        self.lookup(move |c| read::get_session(c, &id)).await
    }

    async fn delete_session(&self, id: &SessionId) -> Result<bool, StoreError> {
        self.writer.delete_session(id.as_str()).await
    }

    async fn set_session_title(
        &self,
        id: &SessionId,
        title: &str,
        only_if: Option<&str>,
    ) -> Result<bool, StoreError> {
        super::storable(title)?;
        let (id, title, only_if) = (id.to_owned(), title.to_owned(), only_if.map(str::to_owned));
        let done = self
            .writer
            .exec(move |sp| {
                let changed = sp
                    .prepare_cached(
                        "UPDATE sessions SET title = ?1 WHERE id = ?2 AND (?3 IS NULL OR title = ?3)",
                    )?
                    .execute(rusqlite::params![title, id, only_if])?;
                Ok(Done::Flag(changed > 0))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn append(
        &self,
        session_id: &SessionId,
        events: Vec<NewEvent>,
        commit: Commit,
    ) -> Result<Vec<Event>, StoreError> {
        super::check_storable_commit(&commit)?;
        self.writer
            .append(session_id.as_str(), events, commit)
            .await
    }

    async fn turn_start_at_or_before(
        &self,
        session_id: &SessionId,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        let session_id = session_id.to_owned();
        self.on_readers(move |r| r.turn_start_at_or_before(session_id.as_str(), seq))
            .await
    }

    async fn events_after(
        &self,
        session_id: &SessionId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        let session_id = session_id.to_owned();
        self.on_readers(move |r| r.events_after(session_id.as_str(), after, limit))
            .await
    }

    async fn sessions_with_unfinished_turns(&self) -> Result<Vec<SessionId>, StoreError> {
        self.on_readers(|r| r.sessions_with_unfinished_turns())
            .await
    }
}

#[async_trait]
impl GateRepo for SqliteStore {
    async fn get_gate(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Option<GateRow>, StoreError> {
        let (session_id, approval_id) = (
            session_id.as_str().to_owned(),
            approval_id.as_str().to_owned(),
        );
        self.lookup(move |c| read::get_gate(c, &session_id, &approval_id))
            .await
    }

    async fn pending_gates(
        &self,
        session_id: Option<&str>,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let session_id = session_id.map(str::to_owned);
        self.on_readers(move |r| r.pending_gates(session_id.as_deref()))
            .await
    }

    async fn waiting_counts(&self, session_id: &SessionId) -> Result<WaitingCounts, StoreError> {
        let session_id = session_id.as_str().to_owned();
        self.on_readers(move |r| r.waiting_counts(&session_id))
            .await
    }

    async fn resolved_cards(
        &self,
        since: &Timestamp,
        until: &Timestamp,
        limit: u32,
    ) -> Result<Vec<ResolvedCard>, StoreError> {
        let (since, until) = (since.clone(), until.clone());
        self.on_readers(move |r| r.resolved_cards(&since, &until, limit))
            .await
    }
}

#[async_trait]
impl RuleRepo for SqliteStore {
    async fn list_rules(&self) -> Result<Vec<Rule>, StoreError> {
        self.on_readers(|r| r.list_rules(&Timestamp::now())).await
    }

    async fn revoke_rule(&self, rule_id: &RuleId, actor: &str) -> Result<bool, StoreError> {
        self.writer.revoke_rule(rule_id, actor).await
    }

    async fn rule_in_force(&self, rule_id: &RuleId, now: &Timestamp) -> Result<bool, StoreError> {
        let (rule_id, now) = (rule_id.clone(), now.clone());
        self.on_readers(move |r| r.rule_in_force(&rule_id, &now))
            .await
    }

    async fn claim_rule_use(&self, rule_id: &RuleId, now: &Timestamp) -> Result<bool, StoreError> {
        let (rule_id, now) = (rule_id.clone(), now.clone());
        // The one writer runs it, with every check in the UPDATE's WHERE: nothing between
        // reading a rule's count and raising it.
        let done = self
            .writer
            .exec(move |sp| {
                let changed = sp
                    .prepare_cached(
                        "UPDATE rules SET uses = uses + 1, last_used_at = ?1
                         WHERE id = ?2 AND revoked_at IS NULL
                           AND (max_uses IS NULL OR uses < max_uses)
                           AND (expires_at IS NULL OR expires_at > ?1)",
                    )?
                    .execute(rusqlite::params![now, rule_id])?;
                Ok(Done::Flag(changed > 0))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }
}

#[async_trait]
impl TokenRepo for SqliteStore {
    async fn create_token(&self, row: &TokenRow, actor: &str) -> Result<(), StoreError> {
        super::storable(&row.name)?;
        self.insert_token(row, actor).await
    }

    async fn list_tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        self.read_tokens().await
    }

    async fn token_by_hash(&self, secret_hash: &str) -> Result<Option<TokenRow>, StoreError> {
        self.read_token_by_hash(secret_hash).await
    }

    async fn delete_token(&self, name: &str, actor: &str) -> Result<bool, StoreError> {
        self.remove_token(name, actor).await
    }

    async fn touch_token(&self, name: &str, at: &Timestamp) -> Result<(), StoreError> {
        self.mark_token_used(name, at).await
    }
}

#[async_trait]
impl AuditRepo for SqliteStore {
    async fn append_audit(&self, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
        self.writer.append_audit(drafts).await
    }

    async fn audit_after(
        &self,
        after: u64,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let (action, subject) = (action.map(str::to_owned), subject.map(str::to_owned));
        self.on_readers(move |r| r.audit_after(after, limit, action.as_deref(), subject.as_deref()))
            .await
    }

    async fn audit_before(
        &self,
        before: Option<u64>,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let (action, subject) = (action.map(str::to_owned), subject.map(str::to_owned));
        self.on_readers(move |r| {
            r.audit_before(before, limit, action.as_deref(), subject.as_deref())
        })
        .await
    }
}

#[async_trait]
impl OutsideRepo for SqliteStore {
    async fn external_session_id(
        &self,
        source: &str,
        external_session: &str,
    ) -> Result<Option<SessionId>, StoreError> {
        self.external_session_lookup(source, external_session).await
    }

    async fn external_session(
        &self,
        source: &str,
        external_session: &str,
        row: &SessionRow,
    ) -> Result<SessionId, StoreError> {
        super::storable(source)?;
        super::storable(external_session)?;
        super::check_storable_row(row)?;
        self.external_session_for(source, external_session, row)
            .await
    }

    async fn claim_source(&self, source: &str, actor: &str) -> Result<String, StoreError> {
        super::storable(source)?;
        super::storable(actor)?;
        self.claim_source_for(source, actor).await
    }

    async fn claimed_sources(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|c| {
            let mut stmt =
                c.prepare_cached("SELECT source, actor FROM source_claims ORDER BY source")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn external_gate(&self, approval_id: &str) -> Result<Option<ExternalGate>, StoreError> {
        self.read_external_gate(approval_id).await
    }

    async fn gate_by_idempotency_key(
        &self,
        opened_by: &str,
        key: &str,
        since: &Timestamp,
    ) -> Result<Option<(ApprovalId, SessionId)>, StoreError> {
        self.read_gate_by_key(opened_by, key, since).await
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    async fn temp_store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = SqliteStore::open(&url, Synchronous::Full).await.unwrap();
        (dir, store)
    }

    /// A lookup that finds every read connection busy waits on a blocking thread, not on the
    /// async worker: on a one-thread runtime another task still runs meanwhile, and the lookup
    /// answers once a connection is free. (Before, it blocked the worker on a connection's
    /// lock; an outside agent's scans could freeze every request that way.)
    #[test]
    fn a_lookup_never_blocks_the_async_worker_when_every_reader_is_busy() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let (_dir, store) = temp_store().await;
                let store = Arc::new(store);
                store.create_session(&session("busy")).await.unwrap();
                let readers = Arc::clone(&store.readers);
                let held = readers.hold_all();
                let lookup = tokio::spawn({
                    let store = Arc::clone(&store);
                    async move { store.get_session(&"busy".into()).await }
                });
                // The worker is free: this sleep ends, and the lookup is still waiting.
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                assert!(!lookup.is_finished(), "no connection was free");
                drop(held);
                let row = lookup.await.unwrap().unwrap();
                assert_eq!(row.map(|r| r.id), Some("busy".into()));
            });
            done.send(()).unwrap();
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the lookup blocked the only async worker");
    }

    #[tokio::test]
    async fn a_dead_writer_fails_writes_at_once_and_health_says_why() {
        let (_dir, store) = temp_store().await;
        assert_eq!(store.health().await, Ok(()));
        store.writer.stop().await;
        let why = store.health().await.unwrap_err();
        assert!(why.contains("writer has stopped"), "{why}");
        let row = session(&uuid::Uuid::new_v4().to_string());
        let err = store.create_session(&row).await.unwrap_err();
        assert!(err.is_database_failure(), "{err}");
        assert_eq!(
            store.list_sessions().await.unwrap(),
            vec![],
            "reads still work"
        );
    }

    #[tokio::test]
    async fn the_synchronous_level_is_the_configured_one() {
        for (level, pragma) in [(Synchronous::Full, 2), (Synchronous::Normal, 1)] {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}", dir.path().join("t.db").display());
            SqliteStore::open(&url, level).await.unwrap();
            let conn = connection::open(&dir.path().join("t.db"), Role::Writer(level)).unwrap();
            let got: i64 = conn
                .query_row("PRAGMA synchronous", [], |row| row.get(0))
                .unwrap();
            assert_eq!(got, pragma, "{level:?}");
        }
    }

    /// A fresh session row for store tests (the writer's tests use it too).
    pub(in crate::server::store) use crate::server::store::conformance::session;

    /// RED TEAM (fixed: revoking ends the names' trust first): revoking a token frees the `source` names it claimed, but the
    /// reviewer's trust in those names stays. The next `gates` token that opens a gate under
    /// the name (another agent's, polling `POST /api/v1/gates` until its `403
    /// source_claimed` turns into a claim) rides `exec/<name>`'s trust at once.
    #[tokio::test]
    async fn a_freed_name_does_not_keep_its_trust() {
        use crate::protocol::ToolClass;
        use crate::server::store::review::{ReviewRepo, TrustRow};
        use crate::server::store::{OutsideRepo, TokenRepo, TokenRow};
        let (_dir, store) = temp_store().await;
        for name in ["real-agent", "other-agent"] {
            let row = TokenRow {
                name: name.into(),
                scope: crate::protocol::Scope::Gates.into(),
                secret_hash: format!("h-{name}"),
                created_at: Timestamp::now(),
                last_used_at: None,
                owner: None,
            };
            store.create_token(&row, "browser").await.unwrap();
        }
        assert_eq!(
            store
                .claim_source("claude-code", "token:real-agent")
                .await
                .unwrap(),
            "token:real-agent"
        );
        let trust = TrustRow {
            class: ToolClass::Exec,
            source: "claude-code".into(),
            trusted_at: Timestamp::now(),
            reviewer: "history".into(),
        };
        assert!(store.trust_class(&trust, "browser").await.unwrap());
        // The person rotates (or revokes) the real agent's token.
        assert!(store.delete_token("real-agent", "browser").await.unwrap());
        // Another agent's token now claims the name ...
        assert_eq!(
            store
                .claim_source("claude-code", "token:other-agent")
                .await
                .unwrap(),
            "token:other-agent"
        );
        // ... and the reviewer would answer its commands under the old trust.
        let trusts = store.trusted_classes().await.unwrap();
        assert!(
            !trusts.iter().any(|t| t.source == "claude-code"),
            "the trust outlived the token that earned it: {:?}",
            trusts
                .iter()
                .map(|t| (&t.class, &t.source))
                .collect::<Vec<_>>()
        );
    }

    /// The backend-neutral store suite (`store/conformance.rs`), on a fresh SQLite file.
    #[tokio::test]
    async fn the_store_suite_passes_on_sqlite() {
        let (_dir, store) = temp_store().await;
        crate::server::store::conformance::run_all(Arc::new(store)).await;
    }
}
