//! Reads, each one statement on a pooled connection. Rows come back as tuples and become the
//! store's types here; stored JSON that does not parse is `Corrupt`, as on SQLite.

use sqlx::PgPool;

use crate::protocol::{
    ApprovalId, ApprovalRequest, AuditEntry, Event, Rule, RuleScope, SessionId, Stored, Timestamp,
};
use crate::server::store::{
    AuditOrder, ExternalGate, GateRow, ResolvedCard, SessionRow, StoreError, TokenRow,
    WaitingCounts,
};

pub(super) const SESSION_COLUMNS: &str = "id, title, created_at, approval_mode, last_seq, pre_plan_mode, plan_execution_mode, source, owner";
type SessionTuple = (
    String,
    String,
    String,
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

const RULE_COLUMNS: &str = "id, tool, pattern, scope, session_id, created_at, created_by_approval, uses, last_used_at, expires_at, max_uses, source";
type RuleTuple = (
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
);

const AUDIT_COLUMNS: &str = "n, at, actor, action, subject, detail, prev_hash, hash";
type AuditTuple = (i64, String, String, String, String, String, String, String);

const TOKEN_COLUMNS: &str = "name, scope, secret_hash, created_at, last_used_at, owner";
type TokenTuple = (
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
);

/// Session ids as a `TEXT[]` parameter.
pub(super) fn ids_as_text(ids: &[SessionId]) -> Vec<&str> {
    ids.iter().map(SessionId::as_str).collect()
}

/// A count or seq as PostgreSQL stores it (`BIGINT`, signed).
pub(super) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn session(
    (id, title, created_at, mode, last_seq, pre, exec, source, owner): SessionTuple,
) -> SessionRow {
    SessionRow {
        id: id.into(),
        title,
        created_at: created_at.into(),
        approval_mode: Stored::read(mode),
        last_seq: to_u64(last_seq),
        pre_plan_mode: pre.map(Stored::read),
        plan_execution_mode: exec.map(Stored::read),
        source,
        owner,
    }
}

fn rule(row: RuleTuple) -> Rule {
    let (
        id,
        tool,
        pattern,
        scope,
        session_id,
        created_at,
        by,
        uses,
        last_used,
        expires,
        max,
        source,
    ) = row;
    Rule {
        id: id.into(),
        tool,
        pattern,
        scope: Stored::<RuleScope>::read(scope).or(RuleScope::Session),
        session_id: session_id.map(SessionId::from),
        created_at: created_at.into(),
        created_by_approval: by.map(ApprovalId::from),
        uses: to_u64(uses),
        last_used_at: last_used.map(Timestamp::from),
        expires_at: expires.map(Timestamp::from),
        max_uses: max.map(to_u64),
        lapsed: None,
        source,
    }
}

fn audit_entry((n, at, actor, action, subject, detail, prev, hash): AuditTuple) -> AuditEntry {
    AuditEntry {
        n: to_u64(n),
        at: at.into(),
        actor,
        action,
        subject,
        // An unparseable detail is kept as text: verify must see it, not fail.
        detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
        prev_hash: prev,
        hash,
    }
}

fn token((name, scope, secret_hash, created_at, last_used_at, owner): TokenTuple) -> TokenRow {
    TokenRow {
        name,
        scope: Stored::read(scope),
        secret_hash,
        created_at: created_at.into(),
        last_used_at: last_used_at.map(Timestamp::from),
        owner,
    }
}

/// A JSON column (a gate's request or resolution, an event), read back.
pub(super) fn from_json<T: serde::de::DeserializeOwned>(
    session_id: &str,
    seq: u64,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq,
        reason: e.to_string(),
    })
}

pub async fn list_sessions(pool: &PgPool) -> Result<Vec<SessionRow>, StoreError> {
    let rows: Vec<SessionTuple> = sqlx::query_as(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, ord DESC"
    ))
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(session).collect())
}

pub async fn get_session(pool: &PgPool, id: &str) -> Result<Option<SessionRow>, StoreError> {
    let row: Option<SessionTuple> = sqlx::query_as(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(session))
}

pub async fn turn_start_at_or_before(
    pool: &PgPool,
    session_id: &str,
    seq: u64,
) -> Result<Option<u64>, StoreError> {
    // The newest one, read backwards from `seq`: a `MAX` the planner may compute by reading
    // every message of the session.
    let start: Option<(i64,)> = sqlx::query_as(
        "SELECT seq FROM events WHERE session_id = $1 AND kind = 'user_message' AND seq <= $2
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(session_id)
    .bind(to_i64(seq))
    .fetch_optional(pool)
    .await?;
    Ok(start.map(|(seq,)| to_u64(seq)))
}

pub async fn events_after(
    pool: &PgPool,
    session_id: &str,
    after: u64,
    limit: u32,
) -> Result<Vec<Event>, StoreError> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT seq, body FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(session_id)
    .bind(to_i64(after))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|(seq, body)| from_json(session_id, to_u64(*seq), body))
        .collect()
}

pub async fn get_gate(
    pool: &PgPool,
    session_id: &str,
    approval_id: &str,
) -> Result<Option<GateRow>, StoreError> {
    // By the key alone, the session checked here: with the session in the WHERE clause, the
    // planner may read the gate through the session's index, all its gates (migration 0006).
    let row: Option<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT session_id, request, resolution FROM approvals WHERE approval_id = $1",
    )
    .bind(approval_id)
    .fetch_optional(pool)
    .await?;
    let Some((_, request, resolution)) = row.filter(|(owner, ..)| owner == session_id) else {
        return Ok(None);
    };
    Ok(Some(GateRow {
        request: from_json(session_id, 0, &request)?,
        resolution: resolution
            .map(|r| from_json(session_id, 0, &r))
            .transpose()?,
    }))
}

pub async fn pending_gates(
    pool: &PgPool,
    session_id: Option<&str>,
) -> Result<Vec<ApprovalRequest>, StoreError> {
    // Two statements, not one with `$1 IS NULL OR …`: a generic plan for that cannot use the
    // session's index, and read every session's waiting gates for one session's.
    let rows: Vec<(String, String)> = match session_id {
        Some(session_id) => {
            sqlx::query_as(
                "SELECT session_id, request FROM approvals
                 WHERE session_id = $1 AND resolution IS NULL ORDER BY created_at, ord",
            )
            .bind(session_id)
            .fetch_all(pool)
            .await?
        }
        None => {
            sqlx::query_as(
                "SELECT session_id, request FROM approvals
                 WHERE resolution IS NULL ORDER BY created_at, ord",
            )
            .fetch_all(pool)
            .await?
        }
    };
    rows.iter()
        .map(|(sid, request)| from_json(sid, 0, request))
        .collect()
}

/// Waiting gates of a session, and outside agents' waiting gates (each has its
/// `external_gates` row): counts over indexes, no request read.
pub async fn waiting_counts(pool: &PgPool, session_id: &str) -> Result<WaitingCounts, StoreError> {
    let (in_session, outside): (i64, i64) = sqlx::query_as(
        "SELECT
             (SELECT COUNT(*) FROM approvals WHERE session_id = $1 AND resolution IS NULL),
             (SELECT COUNT(*) FROM external_gates g
              JOIN approvals a ON a.approval_id = g.approval_id WHERE a.resolution IS NULL)",
    )
    .bind(session_id)
    .fetch_one(pool)
    .await?;
    Ok(WaitingCounts {
        in_session: to_u64(in_session),
        outside: to_u64(outside),
    })
}

/// Gates resolved in `[since, until)`, by resolution time, with their session's source.
pub async fn resolved_cards(
    pool: &PgPool,
    since: &Timestamp,
    until: &Timestamp,
    limit: u32,
) -> Result<Vec<ResolvedCard>, StoreError> {
    let rows: Vec<(String, String, String, Option<String>)> = sqlx::query_as(
        "SELECT a.session_id, a.request, a.resolution, s.source
         FROM approvals a JOIN sessions s ON s.id = a.session_id
         WHERE a.resolution IS NOT NULL AND a.resolved_at >= $1 AND a.resolved_at < $2
         ORDER BY a.resolved_at, a.approval_id LIMIT $3",
    )
    .bind(since.as_str())
    .bind(until.as_str())
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|(sid, request, resolution, source)| {
            Ok(ResolvedCard {
                card: from_json(&sid, 0, &request)?,
                resolution: from_json(&sid, 0, &resolution)?,
                source,
            })
        })
        .collect()
}

/// Every grant not revoked, in force or lapsed since `now` less
/// [`crate::server::store::LAPSED_LISTED_MS`], each marked as of `now`.
pub async fn list_rules(pool: &PgPool, now: &Timestamp) -> Result<Vec<Rule>, StoreError> {
    let now_ms = now.unix_ms().unwrap_or(0);
    let cutoff = now.plus_ms(-crate::server::store::LAPSED_LISTED_MS);
    let rows: Vec<RuleTuple> = sqlx::query_as(&format!(
        "SELECT {RULE_COLUMNS}
         FROM rules
         WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)
           AND (max_uses IS NULL OR uses < max_uses OR last_used_at > $1)
         ORDER BY created_at, ord"
    ))
    .bind(cutoff.as_str())
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| rule(r).as_of(now_ms)).collect())
}

/// Whether the rule `rule_id` is neither revoked nor expired at `now`.
pub async fn rule_in_force(
    pool: &PgPool,
    rule_id: &str,
    now: &Timestamp,
) -> Result<bool, StoreError> {
    let found: Option<(i32,)> = sqlx::query_as(
        "SELECT 1 FROM rules WHERE id = $1 AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > $2)",
    )
    .bind(rule_id)
    .bind(now.as_str())
    .fetch_optional(pool)
    .await?;
    Ok(found.is_some())
}

/// One page of the audit log, either way along it, optionally of one action or subject.
pub async fn audit_page(
    pool: &PgPool,
    order: AuditOrder,
    limit: u32,
    action: Option<&str>,
    subject: Option<&str>,
) -> Result<Vec<AuditEntry>, StoreError> {
    let (bound, direction) = order.sql();
    let rows: Vec<AuditTuple> = sqlx::query_as(&format!(
        "SELECT {AUDIT_COLUMNS} FROM audit
         WHERE {bound} $1 AND ($2::TEXT IS NULL OR action = $2) AND ($3::TEXT IS NULL OR subject = $3)
         ORDER BY n {direction} LIMIT $4"
    ))
    .bind(to_i64(order.n()))
    .bind(action)
    .bind(subject)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(audit_entry).collect())
}

pub async fn sessions_with_unfinished_turns(pool: &PgPool) -> Result<Vec<SessionId>, StoreError> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT s.id FROM sessions s WHERE (
            SELECT e.kind FROM events e
            WHERE e.session_id = s.id AND e.kind IN ('user_message', 'turn_finished')
            ORDER BY e.seq DESC LIMIT 1
         ) = 'user_message'",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id.into()).collect())
}

pub async fn list_tokens(pool: &PgPool) -> Result<Vec<TokenRow>, StoreError> {
    let rows: Vec<TokenTuple> =
        sqlx::query_as(&format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY name"))
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(token).collect())
}

pub async fn token_by_hash(pool: &PgPool, hash: &str) -> Result<Option<TokenRow>, StoreError> {
    let row: Option<TokenTuple> = sqlx::query_as(&format!(
        "SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = $1"
    ))
    .bind(hash)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(token))
}

pub async fn external_gate(
    pool: &PgPool,
    approval_id: &str,
) -> Result<Option<ExternalGate>, StoreError> {
    let row: Option<(String, String, String, Option<String>, String)> = sqlx::query_as(
        "SELECT g.approval_id, a.session_id, g.opened_by, g.idempotency_key, g.created_at
         FROM external_gates g JOIN approvals a ON a.approval_id = g.approval_id
         WHERE g.approval_id = $1",
    )
    .bind(approval_id)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(
        |(approval_id, session_id, opened_by, idempotency_key, created_at)| ExternalGate {
            approval_id: approval_id.into(),
            session_id: session_id.into(),
            opened_by,
            idempotency_key,
            created_at: created_at.into(),
        },
    ))
}

pub async fn gate_by_idempotency_key(
    pool: &PgPool,
    opened_by: &str,
    key: &str,
    since: &Timestamp,
) -> Result<Option<(ApprovalId, SessionId)>, StoreError> {
    let found: Option<(String, String)> = sqlx::query_as(
        "SELECT g.approval_id, a.session_id FROM external_gates g
         JOIN approvals a ON a.approval_id = g.approval_id
         WHERE g.opened_by = $1 AND g.idempotency_key = $2 AND g.created_at >= $3",
    )
    .bind(opened_by)
    .bind(key)
    .bind(since.as_str())
    .fetch_optional(pool)
    .await?;
    Ok(found.map(|(approval, session)| (approval.into(), session.into())))
}

pub async fn last_seqs(
    pool: &PgPool,
    session_ids: &[SessionId],
) -> Result<Vec<(SessionId, u64)>, StoreError> {
    if session_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, last_seq FROM sessions WHERE id = ANY($1)")
            .bind(ids_as_text(session_ids))
            .fetch_all(pool)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(id, seq)| (id.into(), u64::try_from(seq).unwrap_or(0)))
        .collect())
}
