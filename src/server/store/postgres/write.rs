//! Every change in a transaction of its own: appends with their seqs, gate changes, rule uses,
//! audit chaining, sessions, rules, tokens and outside agents' sessions. A transaction dropped
//! on an error path rolls back, so a failure leaves nothing half-written.

use sqlx::{PgConnection, PgPool};

use super::read::{from_json, to_i64};
use crate::protocol::{Event, Timestamp};
use crate::server::audit;
use crate::server::store::{
    Commit, ExternalGate, GateChange, NewEvent, SessionRow, StoreError, TokenRow, stamp,
};

/// The advisory lock every audit chaining takes first: one chain, in one line, across all
/// instances (any constant of our own).
const AUDIT_LOCK: i64 = 0x436f_756e_7465_7202;

fn to_json<T: serde::Serialize>(session_id: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        session_id: session_id.to_owned(),
        seq: 0,
        reason: e.to_string(),
    })
}

fn scope_name(scope: crate::protocol::RuleScope) -> &'static str {
    match scope {
        crate::protocol::RuleScope::Session => "session",
        crate::protocol::RuleScope::Workspace => "workspace",
    }
}

async fn insert_session(conn: &mut PgConnection, row: &SessionRow) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO sessions (id, title, created_at, approval_mode, last_seq, source)
         VALUES ($1, $2, $3, $4, 0, $5)",
    )
    .bind(&row.id)
    .bind(&row.title)
    .bind(row.created_at.as_str())
    .bind(&row.approval_mode)
    .bind(&row.source)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn create_session(pool: &PgPool, row: &SessionRow) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await?;
    insert_session(&mut conn, row).await
}

pub async fn delete_session(pool: &PgPool, id: &str) -> Result<bool, StoreError> {
    let done = sqlx::query("DELETE FROM sessions WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// One append: gate change, outside gate record, rule use, seq allocation, the events, their
/// audit entries — one transaction.
pub async fn append(
    pool: &PgPool,
    announcer: &super::signals::Announcer,
    instance: &str,
    session_id: &str,
    events: &[NewEvent],
    commit: &Commit,
) -> Result<Vec<Event>, StoreError> {
    let mut tx = pool.begin().await?;
    if let Some(change) = &commit.gate {
        apply_gate_change(&mut tx, session_id, change).await?;
    }
    if let Some(external) = &commit.external {
        record_external_gate(&mut tx, external).await?;
    }
    if let Some(rule_id) = &commit.rule_used {
        sqlx::query("UPDATE rules SET uses = uses + 1, last_used_at = $1 WHERE id = $2")
            .bind(Timestamp::now().as_str())
            .bind(rule_id)
            .execute(&mut *tx)
            .await?;
    }
    let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
    // The UPDATE locks the session row until the commit: appends to one session from any
    // instance take their seqs one after the other.
    let last: Option<(i64,)> = sqlx::query_as(
        "UPDATE sessions SET last_seq = last_seq + $1,
             pre_plan_mode = CASE WHEN $2::TEXT = 'plan' AND approval_mode <> 'plan'
                                  THEN approval_mode ELSE pre_plan_mode END,
             plan_execution_mode = CASE WHEN $2::TEXT IS NOT NULL AND $2::TEXT <> 'plan' AND approval_mode = 'plan'
                                        THEN $2::TEXT ELSE plan_execution_mode END,
             approval_mode = COALESCE($2::TEXT, approval_mode)
         WHERE id = $3 RETURNING last_seq",
    )
    .bind(count)
    .bind(commit.set_mode.map(|m| m.as_str()))
    .bind(session_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((last,)) = last else {
        return Err(StoreError::UnknownSession(session_id.to_owned()));
    };
    let first_seq = u64::try_from(last - count + 1).unwrap_or(1).max(1);
    if let Some(step) = &commit.lease {
        super::lease::apply_step(&mut tx, session_id, instance, step).await?;
    }
    let mut stored = Vec::with_capacity(events.len());
    for (event, json) in stamp(session_id, events, first_seq)? {
        sqlx::query(
            "INSERT INTO events (session_id, seq, kind, turn_id, at, body) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(session_id)
        .bind(event.seq.map(to_i64))
        .bind(event.kind())
        .bind(&event.turn_id)
        .bind(event.at.as_str())
        .bind(json)
        .execute(&mut *tx)
        .await?;
        stored.push(event);
    }
    let new_rule = match &commit.gate {
        Some(GateChange::Resolve { new_rule, .. }) => new_rule.as_ref(),
        _ => None,
    };
    let gate_opener = commit.external.as_ref().map(|e| e.opened_by.as_str());
    chain_audit(
        &mut tx,
        audit::drafts_for(session_id, &stored, new_rule, gate_opener),
    )
    .await?;
    tx.commit().await?;
    if let Some(last_seq) = stored.last().and_then(|e| e.seq) {
        // After the commit, never before it (see `signals::Announcer`).
        announcer.appended(super::signals::appended(
            session_id, first_seq, last_seq, instance,
        ));
    }
    Ok(stored)
}

/// Opens or resolves a gate inside the append's transaction.
async fn apply_gate_change(
    conn: &mut PgConnection,
    session_id: &str,
    change: &GateChange,
) -> Result<(), StoreError> {
    match change {
        GateChange::Open(request) => {
            sqlx::query(
                "INSERT INTO approvals (approval_id, session_id, turn_id, request, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&request.body.approval_id)
            .bind(session_id)
            .bind(&request.turn_id)
            .bind(to_json(session_id, request)?)
            .bind(request.body.created_at.as_str())
            .bind(request.body.expires_at.as_str())
            .execute(&mut *conn)
            .await?;
        }
        GateChange::Resolve {
            resolution,
            new_rule,
        } => {
            let won = sqlx::query(
                "UPDATE approvals SET resolution = $1, resolved_at = $2
                 WHERE approval_id = $3 AND session_id = $4 AND resolution IS NULL",
            )
            .bind(to_json(session_id, resolution)?)
            .bind(resolution.resolved_at.as_str())
            .bind(&resolution.approval_id)
            .bind(session_id)
            .execute(&mut *conn)
            .await?
            .rows_affected()
                == 1;
            if !won {
                let existing: Option<(Option<String>,)> = sqlx::query_as(
                    "SELECT resolution FROM approvals WHERE approval_id = $1 AND session_id = $2",
                )
                .bind(&resolution.approval_id)
                .bind(session_id)
                .fetch_optional(&mut *conn)
                .await?;
                return Err(match existing.and_then(|(r,)| r) {
                    Some(json) => {
                        StoreError::AlreadyResolved(Box::new(from_json(session_id, 0, &json)?))
                    }
                    None => StoreError::UnknownApproval(resolution.approval_id.clone()),
                });
            }
            if let Some(rule) = new_rule {
                sqlx::query(
                    "INSERT INTO rules (id, tool, pattern, scope, session_id, created_at, created_by_approval, uses, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8)",
                )
                .bind(&rule.id)
                .bind(&rule.tool)
                .bind(&rule.pattern)
                .bind(scope_name(rule.scope))
                .bind(&rule.session_id)
                .bind(rule.created_at.as_str())
                .bind(&rule.created_by_approval)
                .bind(rule.expires_at.as_ref().map(|t| t.as_str().to_owned()))
                .execute(&mut *conn)
                .await?;
            }
        }
    }
    Ok(())
}

/// Records who opened an outside agent's gate. A key its opener used for another gate within
/// the window is refused (`KeyUsed`, naming that gate), also when another instance inserted it
/// a moment ago (the unique index); an older use of the key is forgotten.
async fn record_external_gate(
    conn: &mut PgConnection,
    gate: &ExternalGate,
) -> Result<(), StoreError> {
    if let Some(key) = &gate.idempotency_key {
        let cutoff = gate
            .created_at
            .plus_ms(-crate::server::store::IDEMPOTENCY_WINDOW_MS);
        sqlx::query(
            "UPDATE external_gates SET idempotency_key = NULL
             WHERE opened_by = $1 AND idempotency_key = $2 AND created_at < $3",
        )
        .bind(&gate.opened_by)
        .bind(key)
        .bind(cutoff.as_str())
        .execute(&mut *conn)
        .await?;
    }
    let inserted = sqlx::query(
        "INSERT INTO external_gates (approval_id, opened_by, idempotency_key, created_at)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (opened_by, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
    )
    .bind(&gate.approval_id)
    .bind(&gate.opened_by)
    .bind(&gate.idempotency_key)
    .bind(gate.created_at.as_str())
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 1 {
        return Ok(());
    }
    let existing: Option<(String,)> = sqlx::query_as(
        "SELECT approval_id FROM external_gates WHERE opened_by = $1 AND idempotency_key = $2",
    )
    .bind(&gate.opened_by)
    .bind(&gate.idempotency_key)
    .fetch_optional(&mut *conn)
    .await?;
    Err(match existing {
        Some((id,)) => StoreError::KeyUsed(id),
        None => StoreError::Database("an idempotency key conflicted and then vanished".into()),
    })
}

/// Chains `drafts` onto the audit log inside the caller's transaction, under the audit lock.
pub(super) async fn chain_audit(
    conn: &mut PgConnection,
    drafts: Vec<audit::AuditDraft>,
) -> Result<(), StoreError> {
    if drafts.is_empty() {
        return Ok(());
    }
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(AUDIT_LOCK)
        .execute(&mut *conn)
        .await?;
    let last: Option<(i64, String)> =
        sqlx::query_as("SELECT n, hash FROM audit ORDER BY n DESC LIMIT 1")
            .fetch_optional(&mut *conn)
            .await?;
    let (mut n, mut prev) = last
        .map(|(n, h)| (u64::try_from(n).unwrap_or(0), h))
        .unwrap_or((0, audit::GENESIS.to_owned()));
    let at = Timestamp::now();
    for draft in drafts {
        n += 1;
        let entry = audit::seal(draft, n, at.clone(), prev);
        sqlx::query(
            "INSERT INTO audit (n, at, actor, action, subject, detail, prev_hash, hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(to_i64(entry.n))
        .bind(entry.at.as_str())
        .bind(&entry.actor)
        .bind(&entry.action)
        .bind(&entry.subject)
        .bind(serde_json::to_string(&entry.detail).unwrap_or_default())
        .bind(&entry.prev_hash)
        .bind(&entry.hash)
        .execute(&mut *conn)
        .await?;
        prev = entry.hash;
    }
    Ok(())
}

pub async fn revoke_rule(pool: &PgPool, rule_id: &str, actor: &str) -> Result<bool, StoreError> {
    let mut tx = pool.begin().await?;
    let n = sqlx::query("UPDATE rules SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(Timestamp::now().as_str())
        .bind(rule_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if n == 0 {
        return Ok(false);
    }
    let draft = audit::AuditDraft {
        actor: actor.to_owned(),
        action: "rule_revoked",
        subject: rule_id.to_owned(),
        detail: serde_json::json!({}),
    };
    chain_audit(&mut tx, vec![draft]).await?;
    tx.commit().await?;
    Ok(true)
}

pub async fn append_audit(pool: &PgPool, drafts: Vec<audit::AuditDraft>) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    chain_audit(&mut tx, drafts).await?;
    tx.commit().await?;
    Ok(())
}

fn token_draft(actor: &str, action: &'static str, name: &str, scope: &str) -> audit::AuditDraft {
    audit::AuditDraft {
        actor: actor.to_owned(),
        action,
        subject: format!("token:{name}"),
        detail: serde_json::json!({ "scope": scope }),
    }
}

pub async fn create_token(pool: &PgPool, row: &TokenRow, actor: &str) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO tokens (name, scope, secret_hash, created_at, last_used_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
    )
    .bind(&row.name)
    .bind(&row.scope)
    .bind(&row.secret_hash)
    .bind(row.created_at.as_str())
    .bind(row.last_used_at.as_ref().map(|t| t.as_str().to_owned()))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Err(StoreError::Taken(row.name.clone()));
    }
    chain_audit(
        &mut tx,
        vec![token_draft(actor, "token_created", &row.name, &row.scope)],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn delete_token(pool: &PgPool, name: &str, actor: &str) -> Result<bool, StoreError> {
    let mut tx = pool.begin().await?;
    let scope: Option<(String,)> =
        sqlx::query_as("DELETE FROM tokens WHERE name = $1 RETURNING scope")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((scope,)) = scope else {
        return Ok(false);
    };
    // Its phones' push subscriptions go with it (and their answer capabilities).
    sqlx::query("DELETE FROM push_subscriptions WHERE credential = $1")
        .bind(format!("token:{name}"))
        .execute(&mut *tx)
        .await?;
    chain_audit(
        &mut tx,
        vec![token_draft(actor, "token_revoked", name, &scope)],
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// The session of `(source, external_session)`, made from `row` by whichever caller comes
/// first: an advisory lock on the pair keeps two instances from making two.
pub async fn external_session(
    pool: &PgPool,
    source: &str,
    external_session: &str,
    row: &SessionRow,
) -> Result<String, StoreError> {
    let find =
        "SELECT session_id FROM external_sessions WHERE source = $1 AND external_session = $2";
    let existing: Option<(String,)> = sqlx::query_as(find)
        .bind(source)
        .bind(external_session)
        .fetch_optional(pool)
        .await?;
    if let Some((id,)) = existing {
        return Ok(id);
    }
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("{source}\u{1f}{external_session}"))
        .execute(&mut *tx)
        .await?;
    let existing: Option<(String,)> = sqlx::query_as(find)
        .bind(source)
        .bind(external_session)
        .fetch_optional(&mut *tx)
        .await?;
    if let Some((id,)) = existing {
        return Ok(id);
    }
    insert_session(&mut tx, row).await?;
    sqlx::query(
        "INSERT INTO external_sessions (source, external_session, session_id) VALUES ($1, $2, $3)",
    )
    .bind(source)
    .bind(external_session)
    .bind(&row.id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.id.clone())
}
