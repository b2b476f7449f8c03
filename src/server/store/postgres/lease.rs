//! Turn leases on PostgreSQL: which instance runs each session's turn, until when.
//!
//! **Invariant 60** ([ARCHITECTURE.md](../../../../ARCHITECTURE.md#invariants)): one instance writes for a turn, fenced by its lease row.
//!
//! The append's lease step is in `countersign_append` (migration 0005), after the session row
//! is locked; every other write of a turn takes the row `FOR SHARE` and checks the owner.

use sqlx::PgPool;

use crate::protocol::{SessionId, TurnId};
use crate::server::store::{LEASE_TTL, LeasedTurn, StoreError};

/// The lease's lifetime in seconds, as SQL wants it.
pub(super) fn ttl_secs() -> f64 {
    LEASE_TTL.as_secs_f64()
}

/// How many lapsed turns one scan takes over (the rest wait for the next scan).
const CLAIM_BATCH: i64 = 32;

type LeaseTuple = (String, String, bool, bool);

fn leased((session_id, turn_id, mine, cancel_requested): LeaseTuple) -> LeasedTurn {
    LeasedTurn {
        session_id: session_id.into(),
        turn_id: turn_id.into(),
        mine,
        cancel_requested,
    }
}

pub async fn renew(
    pool: &PgPool,
    owner: &str,
    session_ids: &[SessionId],
) -> Result<Vec<LeasedTurn>, StoreError> {
    if session_ids.is_empty() {
        return Ok(Vec::new());
    }
    // The SELECT reads the rows as they were before the UPDATE (one snapshot): the owner and
    // the cancel flag are what it needs, and the UPDATE changes neither.
    let rows: Vec<LeaseTuple> = sqlx::query_as(
        "WITH renewed AS (
             UPDATE turn_leases SET expires_at = now() + make_interval(secs => $1)
             WHERE owner = $2 AND session_id = ANY($3) RETURNING session_id)
         SELECT session_id, turn_id, owner = $2, cancel_requested FROM turn_leases
         WHERE session_id = ANY($3)",
    )
    .bind(ttl_secs())
    .bind(owner)
    .bind(super::read::ids_as_text(session_ids))
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(leased).collect())
}

pub async fn claim_lapsed(
    pool: &PgPool,
    owner: &str,
    running: &[SessionId],
) -> Result<Vec<LeasedTurn>, StoreError> {
    // SKIP LOCKED: two instances scanning at once split the lapsed turns between them, and a
    // lease a turn's write holds `FOR SHARE` is not taken from under it.
    let rows: Vec<LeaseTuple> = sqlx::query_as(
        "UPDATE turn_leases SET owner = $1, expires_at = now() + make_interval(secs => $2)
         WHERE session_id IN (
             SELECT session_id FROM turn_leases
             WHERE (expires_at < now() OR owner = $1) AND NOT (session_id = ANY($3))
             ORDER BY expires_at LIMIT $4
             FOR UPDATE SKIP LOCKED)
         RETURNING session_id, turn_id, TRUE, cancel_requested",
    )
    .bind(owner)
    .bind(ttl_secs())
    .bind(super::read::ids_as_text(running))
    .bind(CLAIM_BATCH)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(leased).collect())
}

/// Marks the cancel and tells every instance; the notification goes out with the commit, and
/// only when a turn was there to cancel.
pub async fn request_cancel(
    pool: &PgPool,
    channel: &str,
    session_id: &str,
) -> Result<Option<TurnId>, StoreError> {
    let mut tx = pool.begin().await?;
    let row: Option<(String,)> = sqlx::query_as(
        "UPDATE turn_leases SET cancel_requested = TRUE
         WHERE session_id = $1 AND NOT sealed RETURNING turn_id",
    )
    .bind(session_id)
    .fetch_optional(&mut *tx)
    .await?;
    if row.is_some() {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel)
            .bind(format!("c {session_id}"))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(row.map(|(turn_id,)| turn_id.into()))
}

pub async fn seal(
    pool: &PgPool,
    owner: &str,
    session_id: &SessionId,
    turn_id: &TurnId,
) -> Result<bool, StoreError> {
    let row: Option<(bool,)> = sqlx::query_as(
        "UPDATE turn_leases SET sealed = TRUE
         WHERE session_id = $1 AND turn_id = $2 AND owner = $3 RETURNING cancel_requested",
    )
    .bind(session_id.as_str())
    .bind(turn_id.as_str())
    .bind(owner)
    .fetch_optional(pool)
    .await?;
    Ok(row.is_some_and(|(cancel,)| cancel))
}

pub async fn all(pool: &PgPool) -> Result<Vec<(SessionId, TurnId)>, StoreError> {
    let rows: Vec<(String, String)> = sqlx::query_as("SELECT session_id, turn_id FROM turn_leases")
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(session_id, turn_id)| (session_id.into(), turn_id.into()))
        .collect())
}
