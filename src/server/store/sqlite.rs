//! The SQLite store: one file, WAL, a single writer connection and a small reader pool.
//!
//! Why one writer: SQLite allows one writer at a time anyway, and a deferred transaction that
//! reads then writes can fail with SQLITE_BUSY_SNAPSHOT under concurrency; funnelling writes
//! through one connection (on one writer thread with group commit, see `sqlite_writer`) makes commits
//! queue instead of fail. `synchronous = FULL` by default: a commit is on disk before `append`
//! returns, so an event is never sent before it would survive a power cut, let alone a
//! `kill -9`; `[storage] synchronous = "normal"` trades the power-cut half for speed.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use super::sqlite_writer::{Writer, open_connection};
use super::{Commit, GateRow, NewEvent, SessionRow, Store, StoreError, now_rfc3339};
use crate::protocol::{ApprovalRequest, AuditEntry, Event, Rule, RuleScope};
use crate::server::audit;
use crate::server::config::Synchronous;

pub struct SqliteStore {
    readers: SqlitePool,
    writer: Writer,
}

/// The database file a `sqlite://` URL names (`None` for other URLs and in-memory databases).
pub fn file_of(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| std::path::PathBuf::from(path))
}

impl SqliteStore {
    pub async fn open(url: &str, synchronous: Synchronous) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5));
        // Migrations run on a short-lived sqlx connection; every later write goes through the
        // writer thread's own connection.
        let migrator = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations").run(&migrator).await?;
        migrator.close().await;
        let writer = Writer::start(open_connection(options.get_filename(), synchronous)?)?;
        let readers = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        Ok(SqliteStore { readers, writer })
    }
}

fn session_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<SessionRow, sqlx::Error> {
    Ok(SessionRow {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        approval_mode: row.try_get("approval_mode")?,
        last_seq: row.try_get::<i64, _>("last_seq")?.max(0) as u64,
        pre_plan_mode: row.try_get("pre_plan_mode")?,
        plan_execution_mode: row.try_get("plan_execution_mode")?,
    })
}

fn event_from_row(session_id: &str, row: &sqlx::sqlite::SqliteRow) -> Result<Event, StoreError> {
    let seq = row.try_get::<i64, _>("seq")?.max(0) as u64;
    let body: String = row.try_get("body")?;
    serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq,
        reason: e.to_string(),
    })
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(
    session_id: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq: 0,
        reason: e.to_string(),
    })
}

pub(super) fn to_json<T: serde::Serialize>(
    session_id: &str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq: 0,
        reason: e.to_string(),
    })
}

const SESSION_COLUMNS: &str =
    "id, title, created_at, approval_mode, last_seq, pre_plan_mode, plan_execution_mode";

#[async_trait]
impl Store for SqliteStore {
    async fn health(&self) -> Result<(), String> {
        if !self.writer.alive() {
            return Err("the database writer has stopped: writes fail until a restart".into());
        }
        sqlx::query("SELECT 1")
            .execute(&self.readers)
            .await
            .map(|_| ())
            .map_err(|e| format!("the database does not answer reads: {e}"))
    }

    async fn create_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        self.writer.create_session(row).await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, rowid DESC"
        ))
        .fetch_all(&self.readers)
        .await?;
        Ok(rows
            .iter()
            .map(session_from_row)
            .collect::<Result<_, _>>()?)
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
        ))
        .bind(id)
        .fetch_optional(&self.readers)
        .await?;
        Ok(row.as_ref().map(session_from_row).transpose()?)
    }

    async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.writer.delete_session(id).await
    }

    async fn append(
        &self,
        session_id: &str,
        events: Vec<NewEvent>,
        commit: Commit,
    ) -> Result<Vec<Event>, StoreError> {
        self.writer.append(session_id, events, commit).await
    }

    async fn turn_start_at_or_before(
        &self,
        session_id: &str,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        let start: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(seq) FROM events WHERE session_id = ?1 AND kind = 'user_message' AND seq <= ?2",
        )
        .bind(session_id)
        .bind(seq.min(i64::MAX as u64) as i64)
        .fetch_one(&self.readers)
        .await?;
        Ok(start.map(|s| s.max(0) as u64))
    }

    async fn events_after(
        &self,
        session_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, body FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )
        .bind(session_id)
        .bind(after.min(i64::MAX as u64) as i64)
        .bind(limit as i64)
        .fetch_all(&self.readers)
        .await?;
        rows.iter().map(|r| event_from_row(session_id, r)).collect()
    }

    async fn get_gate(
        &self,
        session_id: &str,
        approval_id: &str,
    ) -> Result<Option<GateRow>, StoreError> {
        let row = sqlx::query(
            "SELECT request, resolution FROM approvals WHERE approval_id = ?1 AND session_id = ?2",
        )
        .bind(approval_id)
        .bind(session_id)
        // A reader sees every committed resolution (appends answer only after their commit),
        // and does not queue behind the writer.
        .fetch_optional(&self.readers)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let request: String = row.try_get("request")?;
        let resolution: Option<String> = row.try_get("resolution")?;
        Ok(Some(GateRow {
            request: parse_json(session_id, &request)?,
            resolution: resolution.map(|r| parse_json(session_id, &r)).transpose()?,
        }))
    }

    async fn pending_gates(
        &self,
        session_id: Option<&str>,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT session_id, request FROM approvals
             WHERE resolution IS NULL AND (?1 IS NULL OR session_id = ?1)
             ORDER BY created_at, rowid",
        )
        .bind(session_id)
        .fetch_all(&self.readers)
        .await?;
        rows.iter()
            .map(|(sid, request)| parse_json(sid, request))
            .collect()
    }

    async fn list_rules(&self) -> Result<Vec<Rule>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, tool, pattern, scope, session_id, created_at, created_by_approval, uses, last_used_at, expires_at
             FROM rules WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1)
             ORDER BY created_at, rowid",
        )
        .bind(now_rfc3339())
        .fetch_all(&self.readers)
        .await?;
        rows.iter()
            .map(|row| {
                let scope: String = row.try_get("scope")?;
                Ok(Rule {
                    id: row.try_get("id")?,
                    tool: row.try_get("tool")?,
                    pattern: row.try_get("pattern")?,
                    scope: if scope == "workspace" {
                        RuleScope::Workspace
                    } else {
                        RuleScope::Session
                    },
                    session_id: row.try_get("session_id")?,
                    created_at: row.try_get("created_at")?,
                    created_by_approval: row.try_get("created_by_approval")?,
                    uses: row.try_get::<i64, _>("uses")?.max(0) as u64,
                    last_used_at: row.try_get("last_used_at")?,
                    expires_at: row.try_get("expires_at")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }

    async fn revoke_rule(&self, rule_id: &str, actor: &str) -> Result<bool, StoreError> {
        self.writer.revoke_rule(rule_id, actor).await
    }

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
        let rows = sqlx::query(
            "SELECT n, at, actor, action, subject, detail, prev_hash, hash FROM audit
             WHERE n > ?1 AND (?2 IS NULL OR action = ?2) AND (?3 IS NULL OR subject = ?3)
             ORDER BY n LIMIT ?4",
        )
        .bind(after.min(i64::MAX as u64) as i64)
        .bind(action)
        .bind(subject)
        .bind(limit as i64)
        .fetch_all(&self.readers)
        .await?;
        rows.iter()
            .map(|row| {
                let detail: String = row.try_get("detail")?;
                Ok(AuditEntry {
                    n: row.try_get::<i64, _>("n")?.max(0) as u64,
                    at: row.try_get("at")?,
                    actor: row.try_get("actor")?,
                    action: row.try_get("action")?,
                    subject: row.try_get("subject")?,
                    // An unparseable detail is kept as text: verify must see it, not fail.
                    detail: serde_json::from_str(&detail)
                        .unwrap_or(serde_json::Value::String(detail)),
                    prev_hash: row.try_get("prev_hash")?,
                    hash: row.try_get("hash")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }

    async fn sessions_with_unfinished_turns(&self) -> Result<Vec<String>, StoreError> {
        let ids = sqlx::query_scalar(
            "SELECT s.id FROM sessions s WHERE (
                SELECT e.kind FROM events e
                WHERE e.session_id = s.id AND e.kind IN ('user_message', 'turn_finished')
                ORDER BY e.seq DESC LIMIT 1
             ) = 'user_message'",
        )
        .fetch_all(&self.readers)
        .await?;
        Ok(ids)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::protocol::{EventBody, Mode, Resolution};
    use crate::server::store::GateChange;

    async fn temp_store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = SqliteStore::open(&url, Synchronous::Full).await.unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn a_dead_writer_fails_writes_at_once_and_health_says_why() {
        let (_dir, store) = temp_store().await;
        assert_eq!(store.health().await, Ok(()));
        store.writer.stop().await;
        let why = store.health().await.unwrap_err();
        assert!(why.contains("writer has stopped"), "{why}");
        let row = SessionRow {
            id: uuid::Uuid::new_v4().to_string(),
            title: "t".into(),
            created_at: now_rfc3339(),
            approval_mode: "ask".into(),
            last_seq: 0,
            pre_plan_mode: None,
            plan_execution_mode: None,
        };
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
            let conn = open_connection(&dir.path().join("t.db"), level).unwrap();
            let got: i64 = conn
                .query_row("PRAGMA synchronous", [], |row| row.get(0))
                .unwrap();
            assert_eq!(got, pragma, "{level:?}");
        }
    }

    /// A fresh session row for store tests (the writer's tests use it too).
    pub(in crate::server::store) fn session(id: &str) -> SessionRow {
        SessionRow {
            id: id.into(),
            title: "t".into(),
            created_at: now_rfc3339(),
            approval_mode: "ask".into(),
            last_seq: 0,
            pre_plan_mode: None,
            plan_execution_mode: None,
        }
    }

    fn msg(text: &str) -> NewEvent {
        NewEvent::new(
            Some("turn"),
            EventBody::UserMessage {
                text: text.into(),
                approval_mode: Mode::Ask,
            },
        )
    }

    #[tokio::test]
    async fn seq_starts_at_one_and_has_no_gaps_under_concurrency() {
        let (_dir, store) = temp_store().await;
        let store = std::sync::Arc::new(store);
        store.create_session(&session("s")).await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..20 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .append(
                        "s",
                        vec![msg(&format!("a{i}")), msg(&format!("b{i}"))],
                        Commit::default(),
                    )
                    .await
                    .unwrap()
            }));
        }
        for t in tasks {
            let evs = t.await.unwrap();
            assert_eq!(evs[1].seq.unwrap(), evs[0].seq.unwrap() + 1);
        }
        let all = store.events_after("s", 0, 1000).await.unwrap();
        let seqs: Vec<u64> = all.iter().map(|e| e.seq.unwrap()).collect();
        assert_eq!(seqs, (1..=40).collect::<Vec<_>>());
        assert_eq!(store.events_after("s", 38, 10).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn append_to_unknown_session_fails_and_mode_follows_in_same_transaction() {
        let (_dir, store) = temp_store().await;
        assert!(matches!(
            store
                .append("nope", vec![msg("x")], Commit::default())
                .await,
            Err(StoreError::UnknownSession(_))
        ));
        store.create_session(&session("s")).await.unwrap();
        store
            .append("s", vec![msg("x")], Commit::mode(Some(Mode::Yolo)))
            .await
            .unwrap();
        let row = store.get_session("s").await.unwrap().unwrap();
        assert_eq!(row.approval_mode, "yolo");
        assert_eq!(row.last_seq, 1);
    }

    #[tokio::test]
    async fn delete_removes_the_log_and_unfinished_turns_are_found() {
        let (_dir, store) = temp_store().await;
        store.create_session(&session("a")).await.unwrap();
        store.create_session(&session("b")).await.unwrap();
        store
            .append("a", vec![msg("x")], Commit::default())
            .await
            .unwrap();
        store
            .append("b", vec![msg("y")], Commit::default())
            .await
            .unwrap();
        store
            .append(
                "b",
                vec![NewEvent::new(
                    Some("turn"),
                    EventBody::TurnFinished {
                        status: crate::protocol::TurnStatus::Completed,
                        error: None,
                    },
                )],
                Commit::default(),
            )
            .await
            .unwrap();
        assert_eq!(
            store.sessions_with_unfinished_turns().await.unwrap(),
            vec!["a".to_string()]
        );
        assert!(store.delete_session("a").await.unwrap());
        assert!(!store.delete_session("a").await.unwrap());
        assert!(store.events_after("a", 0, 10).await.unwrap().is_empty());
        let list = store.list_sessions().await.unwrap();
        assert_eq!(list.len(), 1);
    }

    fn gate(id: &str) -> ApprovalRequest {
        serde_json::from_value(serde_json::json!({
            "turn_id": "turn", "approval_id": id, "session_id": "s", "call_id": "c",
            "kind": "tool", "tool": "shell", "class": "exec", "args": {"command": "ls"},
            "title": "Shell", "summary": "shell: ls", "proposal_md": "", "proposal_html": "",
            "reason": "mode", "reason_detail": "", "allowed_decisions": ["approve", "deny"],
            "digest": "d", "created_at": now_rfc3339(), "expires_at": now_rfc3339(),
            "timeout_outcome": "deny"
        }))
        .unwrap()
    }

    fn resolution(id: &str, decision: crate::protocol::Decision) -> Resolution {
        Resolution::plain(
            id,
            decision,
            crate::protocol::AnsweredBy::User,
            "browser",
            String::new(),
        )
    }

    #[tokio::test]
    async fn exactly_one_of_fifty_concurrent_resolutions_commits() {
        use crate::protocol::Decision;
        let (_dir, store) = temp_store().await;
        let store = std::sync::Arc::new(store);
        store.create_session(&session("s")).await.unwrap();
        let open = Commit {
            gate: Some(GateChange::Open(Box::new(gate("g")))),
            ..Commit::default()
        };
        store.append("s", vec![msg("ask")], open).await.unwrap();
        assert_eq!(store.pending_gates(Some("s")).await.unwrap().len(), 1);
        let mut tasks = Vec::new();
        for i in 0..50 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let decision = if i % 2 == 0 {
                    Decision::Approve
                } else {
                    Decision::Deny
                };
                let commit = Commit {
                    gate: Some(GateChange::Resolve {
                        resolution: resolution("g", decision),
                        new_rule: None,
                    }),
                    ..Commit::default()
                };
                store.append("s", vec![msg("resolved")], commit).await
            }));
        }
        let mut won = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => won += 1,
                Err(StoreError::AlreadyResolved(_)) => {}
                Err(other) => panic!("{other}"),
            }
        }
        assert_eq!(won, 1);
        // The losers appended nothing: one "ask" and one "resolved" event.
        assert_eq!(store.events_after("s", 0, 100).await.unwrap().len(), 2);
        assert!(store.pending_gates(None).await.unwrap().is_empty());
        let row = store.get_gate("s", "g").await.unwrap().unwrap();
        assert!(row.resolution.is_some());
        assert!(store.get_gate("other", "g").await.unwrap().is_none());
        let unknown = Commit {
            gate: Some(GateChange::Resolve {
                resolution: resolution("nope", Decision::Approve),
                new_rule: None,
            }),
            ..Commit::default()
        };
        assert!(matches!(
            store.append("s", vec![msg("x")], unknown).await,
            Err(StoreError::UnknownApproval(_))
        ));
    }
}
