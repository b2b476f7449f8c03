//! The SQL of every change, run inside the writer's transaction (one savepoint per job):
//! appends with their seqs, gate changes, rule uses, audit chaining.

use rusqlite::{Connection, OptionalExtension, Savepoint, params};

use super::codec;
use super::codec::to_i64;
use super::jobs::{Done, Job};
use crate::protocol::{Event, Timestamp};
use crate::server::audit;
use crate::server::store::{
    Commit, ExternalGate, GateChange, NewEvent, SessionRow, StoreError, stamp,
};

/// Applies one job's change.
pub fn perform(sp: &mut Savepoint<'_>, job: &Job) -> Result<Done, StoreError> {
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
            insert_session(sp, row)?;
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
                .execute(params![Timestamp::now(), rule_id])?;
            if n == 0 {
                return Ok(Done::Flag(false));
            }
            let draft = audit::AuditDraft {
                actor: actor.clone(),
                action: "rule_revoked",
                subject: rule_id.to_string(),
                detail: serde_json::json!({}),
            };
            chain_audit(sp, vec![draft])?;
            Ok(Done::Flag(true))
        }
        Job::AppendAudit { drafts, .. } => {
            chain_audit(sp, drafts.clone())?;
            Ok(Done::Unit)
        }
        Job::Exec { work, .. } => work(sp),
    }
}

/// Inserts a new session row.
pub fn insert_session(conn: &Connection, row: &SessionRow) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO sessions (id, title, created_at, approval_mode, last_seq, source, owner) VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6)",
    )?
    .execute(params![row.id, row.title, row.created_at, row.approval_mode, row.source, row.owner])?;
    Ok(())
}

/// One append: gate change, seq allocation, the events, their audit entries.
fn append_in(
    conn: &Connection,
    session_id: &str,
    events: &[NewEvent],
    commit: &Commit,
) -> Result<Vec<Event>, StoreError> {
    if let Some(change) = &commit.gate {
        apply_gate_change(conn, session_id, change)?;
        crate::timeline::mark("writer: gate row written");
    }
    if let Some(external) = &commit.external {
        record_external_gate(conn, external)?;
    }
    let first_seq = allocate_seqs(conn, session_id, events.len(), commit.set_mode)?;
    crate::timeline::mark("writer: session row updated");
    let stored = insert_events(conn, session_id, events, first_seq)?;
    crate::timeline::mark("writer: events inserted");
    let new_rule = match &commit.gate {
        Some(GateChange::Resolve { new_rule, .. }) => new_rule.as_ref(),
        _ => None,
    };
    let gate_opener = commit.external.as_ref().map(|e| e.opened_by.as_str());
    chain_audit(
        conn,
        audit::drafts_for(session_id, &stored, new_rule, gate_opener),
    )?;
    Ok(stored)
}

/// Takes `count` seqs from the session (and changes its mode with them, when asked); the
/// first of them.
fn allocate_seqs(
    conn: &Connection,
    session_id: &str,
    count: usize,
    set_mode: Option<crate::protocol::Mode>,
) -> Result<u64, StoreError> {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
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
            params![count, set_mode.map(|m| m.as_str()), session_id],
            |row| row.get(0),
        )
        .optional()?;
    let Some(last) = last else {
        return Err(StoreError::UnknownSession(session_id.to_owned()));
    };
    Ok(u64::try_from(last - count + 1).unwrap_or(1).max(1))
}

/// Writes the events under their seqs from `first_seq` on; the events as stored.
fn insert_events(
    conn: &Connection,
    session_id: &str,
    events: &[NewEvent],
    first_seq: u64,
) -> Result<Vec<Event>, StoreError> {
    let mut stored = Vec::with_capacity(events.len());
    let mut insert = conn.prepare_cached(
        "INSERT INTO events (session_id, seq, kind, turn_id, at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (event, json) in stamp(session_id, events, first_seq)? {
        insert.execute(params![
            session_id,
            event.seq.map(to_i64),
            event.kind(),
            event.turn_id,
            event.at,
            json
        ])?;
        stored.push(event);
    }
    Ok(stored)
}

/// Records who opened an outside agent's gate. A key its opener used for another gate within
/// the window is refused (`KeyUsed`, naming that gate); an older use of the key is forgotten.
fn record_external_gate(conn: &Connection, gate: &ExternalGate) -> Result<(), StoreError> {
    if let Some(key) = &gate.idempotency_key {
        let cutoff = gate
            .created_at
            .plus_ms(-crate::server::store::IDEMPOTENCY_WINDOW_MS);
        conn.prepare_cached(
            "UPDATE external_gates SET idempotency_key = NULL
             WHERE opened_by = ?1 AND idempotency_key = ?2 AND created_at < ?3",
        )?
        .execute(params![gate.opened_by, key, cutoff])?;
        let existing: Option<String> = conn
            .prepare_cached(
                "SELECT approval_id FROM external_gates WHERE opened_by = ?1 AND idempotency_key = ?2",
            )?
            .query_row(params![gate.opened_by, key], |row| row.get(0))
            .optional()?;
        if let Some(existing) = existing {
            return Err(StoreError::KeyUsed(existing));
        }
    }
    conn.prepare_cached(
        "INSERT INTO external_gates (approval_id, opened_by, idempotency_key, created_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        gate.approval_id,
        gate.opened_by,
        gate.idempotency_key,
        gate.created_at
    ])?;
    Ok(())
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
                codec::to_json(session_id, request)?,
                request.body.created_at,
                request.body.expires_at
            ])?;
        }
        GateChange::Resolve {
            resolution,
            new_rule,
        } => {
            resolve_gate(conn, session_id, resolution)?;
            if let Some(rule) = new_rule {
                insert_rule(conn, rule)?;
            }
        }
    }
    Ok(())
}

/// The compare-and-set: the answer is written only where the gate has none; else the answer
/// that won (or `unknown_approval`).
fn resolve_gate(
    conn: &Connection,
    session_id: &str,
    resolution: &crate::protocol::Resolution,
) -> Result<(), StoreError> {
    let won =
        conn.prepare_cached(
            "UPDATE approvals SET resolution = ?1, resolved_at = ?2
             WHERE approval_id = ?3 AND session_id = ?4 AND resolution IS NULL",
        )?
        .execute(params![
            codec::to_json(session_id, resolution)?,
            resolution.resolved_at,
            resolution.approval_id,
            session_id
        ])? == 1;
    if won {
        return Ok(());
    }
    let existing: Option<Option<String>> = conn
        .prepare_cached(
            "SELECT resolution FROM approvals WHERE approval_id = ?1 AND session_id = ?2",
        )?
        .query_row(params![resolution.approval_id, session_id], |row| {
            row.get(0)
        })
        .optional()?;
    Err(match existing.flatten() {
        Some(json) => StoreError::AlreadyResolved(Box::new(codec::from_json(session_id, &json)?)),
        None => StoreError::UnknownApproval(resolution.approval_id.to_string()),
    })
}

/// The standing rule an Allow always made, in the same transaction as its answer.
fn insert_rule(conn: &Connection, rule: &crate::protocol::Rule) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO rules (id, tool, pattern, scope, session_id, created_at, created_by_approval, uses, expires_at, max_uses, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10)",
    )?
    .execute(params![
        rule.id,
        rule.tool,
        rule.pattern,
        rule.scope.as_str(),
        rule.session_id,
        rule.created_at,
        rule.created_by_approval,
        rule.expires_at,
        rule.max_uses.map(to_i64),
        rule.source
    ])?;
    Ok(())
}

/// Chains `drafts` onto the audit log inside the caller's transaction.
pub fn chain_audit(conn: &Connection, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
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
    let at = Timestamp::now();
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
