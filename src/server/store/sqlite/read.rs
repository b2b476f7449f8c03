//! Reads: a pool of read-only connections. The store runs scans (lists, pages of the log and
//! of the audit) on blocking threads (`SqliteStore::on_readers`): a long scan must not stall
//! every request an async worker carries. A lookup by a unique key (a session, a gate, a
//! token by its hash) stays on the calling thread (`SqliteStore::lookup`): in WAL mode it never
//! waits for the writer and reads a few cached pages, less than the hop to another thread
//! costs. Connections open on first use.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};

use super::codec::{self, AUDIT_COLUMNS, RULE_COLUMNS, SESSION_COLUMNS, to_i64, to_u64};
use super::connection::{self, Role};
use crate::protocol::{ApprovalRequest, AuditEntry, Event, Rule, Timestamp};
use crate::server::store::{
    AuditOrder, GateRow, ResolvedCard, SessionRow, StoreError, WaitingCounts,
};

/// Waiting gates of a session, and outside agents' waiting gates (each has its
/// `external_gates` row): counts over indexes, no request read.
const WAITING_COUNTS: &str = "SELECT
     (SELECT COUNT(*) FROM approvals WHERE session_id = ?1 AND resolution IS NULL),
     (SELECT COUNT(*) FROM external_gates g JOIN approvals a ON a.approval_id = g.approval_id
      WHERE a.resolution IS NULL)";

/// Read connections kept: two per core the machine gives this process (at least 4, at most
/// 32), so a read rarely finds them all busy and the blocking threads do not queue on one.
fn pool_size() -> usize {
    std::thread::available_parallelism()
        .map_or(4, |n| n.get() * 2)
        .clamp(4, 32)
}

pub struct Readers {
    path: PathBuf,
    pool: Vec<Mutex<Option<Connection>>>,
    next: AtomicUsize,
}

impl Readers {
    pub fn new(path: PathBuf) -> Readers {
        Readers {
            path,
            pool: (0..pool_size()).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// Runs `read` on a free connection (waiting for one only if all are in use).
    pub(super) fn with<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self.try_with(read) {
            Ok(done) => done,
            Err(read) => {
                let start = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len();
                let guard = self.pool[start]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                self.run(guard, read)
            }
        }
    }

    /// Runs `read` on a connection free right now; gives it back (`Err`) when every one is in
    /// use, so a caller on an async worker can wait on a blocking thread instead.
    pub(super) fn try_with<T, F>(&self, read: F) -> Result<Result<T, StoreError>, F>
    where
        F: FnOnce(&Connection) -> Result<T, StoreError>,
    {
        let size = self.pool.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % size;
        let free = (0..size)
            .map(|i| (start + i) % size)
            .find_map(|i| self.pool.get(i).and_then(|m| m.try_lock().ok()));
        match free {
            Some(guard) => Ok(self.run(guard, read)),
            None => Err(read),
        }
    }

    /// Every read connection, held: what long scans on all of them look like to a lookup.
    #[cfg(test)]
    pub(super) fn hold_all(&self) -> Vec<MutexGuard<'_, Option<Connection>>> {
        self.pool
            .iter()
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }

    fn run<T>(
        &self,
        mut guard: MutexGuard<'_, Option<Connection>>,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if guard.is_none() {
            *guard = Some(connection::open(&self.path, Role::Reader)?);
        }
        match guard.as_ref() {
            Some(conn) => read(conn),
            None => Err(StoreError::Database("no read connection".into())),
        }
    }

    pub fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| Ok(c.query_row("SELECT 1", [], |_| Ok(()))?))
    }

    pub fn list_sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.with(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, rowid DESC"
            ))?;
            let rows = stmt.query_map([], codec::session)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    pub fn turn_start_at_or_before(
        &self,
        session_id: &str,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.with(|c| {
            let start: Option<i64> = c
                .prepare_cached(
                    "SELECT MAX(seq) FROM events WHERE session_id = ?1 AND kind = 'user_message' AND seq <= ?2",
                )?
                .query_row(params![session_id, to_i64(seq)], |row| row.get(0))?;
            Ok(start.map(to_u64))
        })
    }

    pub fn events_after(
        &self,
        session_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, body FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![session_id, to_i64(after), limit], |row| {
                Ok((to_u64(row.get(0)?), row.get::<_, String>(1)?))
            })?;
            let mut events = Vec::new();
            for row in rows {
                let (seq, body) = row?;
                events.push(codec::event(session_id, seq, &body)?);
            }
            Ok(events)
        })
    }

    pub fn waiting_counts(&self, session_id: &str) -> Result<WaitingCounts, StoreError> {
        self.with(|c| {
            let (in_session, outside): (i64, i64) = c
                .prepare_cached(WAITING_COUNTS)?
                .query_row(params![session_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(WaitingCounts {
                in_session: to_u64(in_session),
                outside: to_u64(outside),
            })
        })
    }

    pub fn pending_gates(
        &self,
        session_id: Option<&str>,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let rows: Vec<(String, String)> = self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT session_id, request FROM approvals
                 WHERE resolution IS NULL AND (?1 IS NULL OR session_id = ?1)
                 ORDER BY created_at, rowid",
            )?;
            let rows = stmt.query_map(params![session_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })?;
        rows.iter()
            .map(|(sid, request)| codec::from_json(sid, request))
            .collect()
    }

    /// Gates resolved in `[since, until)`, by resolution time, with their session's source.
    pub fn resolved_cards(
        &self,
        since: &Timestamp,
        until: &Timestamp,
        limit: u32,
    ) -> Result<Vec<ResolvedCard>, StoreError> {
        type Row = (String, String, String, Option<String>);
        let rows: Vec<Row> = self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT a.session_id, a.request, a.resolution, s.source
                 FROM approvals a JOIN sessions s ON s.id = a.session_id
                 WHERE a.resolution IS NOT NULL AND a.resolved_at >= ?1 AND a.resolved_at < ?2
                 ORDER BY a.resolved_at, a.approval_id LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![since, until, limit], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })?;
        rows.iter()
            .map(|(sid, request, resolution, source)| {
                Ok(ResolvedCard {
                    card: codec::from_json(sid, request)?,
                    resolution: codec::from_json(sid, resolution)?,
                    source: source.clone(),
                })
            })
            .collect()
    }

    /// Every grant not revoked, in force or lapsed since `now` less
    /// [`crate::server::store::LAPSED_LISTED_MS`], each marked as of `now`.
    pub fn list_rules(&self, now: &Timestamp) -> Result<Vec<Rule>, StoreError> {
        let now_ms = now.unix_ms().unwrap_or(0);
        let cutoff = now.plus_ms(-crate::server::store::LAPSED_LISTED_MS);
        self.with(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RULE_COLUMNS}, (SELECT s.source FROM approvals a JOIN sessions s ON s.id = a.session_id
                         WHERE a.approval_id = rules.created_by_approval)
                 FROM rules
                 WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1)
                   AND (max_uses IS NULL OR uses < max_uses OR last_used_at > ?1)
                 ORDER BY created_at, rowid"
            ))?;
            let rows = stmt.query_map(params![cutoff], |row| {
                Ok(Rule {
                    source: row.get(11)?,
                    ..codec::rule(row)?
                })
            })?;
            let rules = rows.collect::<rusqlite::Result<Vec<Rule>>>()?;
            Ok(rules.into_iter().map(|r| r.as_of(now_ms)).collect())
        })
    }

    pub fn audit_after(
        &self,
        after: u64,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        self.audit_page(AuditOrder::OldestAfter(after), limit, action, subject)
    }

    pub fn audit_before(
        &self,
        before: Option<u64>,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        self.audit_page(AuditOrder::NewestBefore(before), limit, action, subject)
    }

    /// One page of the audit log, either way along it, optionally of one action or subject.
    fn audit_page(
        &self,
        order: AuditOrder,
        limit: u32,
        action: Option<&str>,
        subject: Option<&str>,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let (bound, direction) = order.sql();
        self.with(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {AUDIT_COLUMNS} FROM audit
                 WHERE {bound} ?1 AND (?2 IS NULL OR action = ?2) AND (?3 IS NULL OR subject = ?3)
                 ORDER BY n {direction} LIMIT ?4"
            ))?;
            let rows = stmt.query_map(
                params![to_i64(order.n()), action, subject, limit],
                codec::audit_entry,
            )?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    pub fn sessions_with_unfinished_turns(
        &self,
    ) -> Result<Vec<crate::protocol::SessionId>, StoreError> {
        self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT s.id FROM sessions s WHERE (
                    SELECT e.kind FROM events e
                    WHERE e.session_id = s.id AND e.kind IN ('user_message', 'turn_finished')
                    ORDER BY e.seq DESC LIMIT 1
                 ) = 'user_message'",
            )?;
            let rows = stmt.query_map([], |row| row.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }
}

/// A session by its id (a lookup: `SqliteStore::lookup` runs it).
pub fn get_session(c: &Connection, id: &str) -> Result<Option<SessionRow>, StoreError> {
    Ok(c.prepare_cached(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
    ))?
    .query_row(params![id], codec::session)
    .optional()?)
}

/// A gate by its id, in its session (a lookup). A reader sees every committed resolution
/// (appends answer only after their commit), and does not queue behind the writer.
pub fn get_gate(
    c: &Connection,
    session_id: &str,
    approval_id: &str,
) -> Result<Option<GateRow>, StoreError> {
    let row: Option<(String, Option<String>)> = c
        .prepare_cached(
            "SELECT request, resolution FROM approvals WHERE approval_id = ?1 AND session_id = ?2",
        )?
        .query_row(params![approval_id, session_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    let Some((request, resolution)) = row else {
        return Ok(None);
    };
    Ok(Some(GateRow {
        request: codec::from_json(session_id, &request)?,
        resolution: resolution
            .map(|r| codec::from_json(session_id, &r))
            .transpose()?,
    }))
}
