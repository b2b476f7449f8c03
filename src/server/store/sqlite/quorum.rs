//! Approvals toward a quorum and escalations: reads on the reader pool, writes through the
//! writer thread (one writer: two approvals at once are counted one after the other).

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use super::codec;
use crate::protocol::{ApprovalId, GivenApproval, SessionId, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::store::StoreError;
use crate::server::store::quorum::{COLUMNS, Given, Giving, QuorumRepo, digest_of};

fn given(row: &Row<'_>) -> rusqlite::Result<GivenApproval> {
    Ok(GivenApproval {
        who: row.get(0)?,
        name: row.get(1)?,
        at: row.get(2)?,
        digest: row.get(3)?,
    })
}

/// The digest of the card while it waits (`None`: resolved, or no such card).
fn waiting_digest(
    conn: &Connection,
    session_id: &str,
    approval_id: &str,
) -> Result<Option<String>, StoreError> {
    let request: Option<String> = conn
        .prepare_cached(
            "SELECT request FROM approvals WHERE session_id = ?1 AND approval_id = ?2 AND resolution IS NULL",
        )?
        .query_row(params![session_id, approval_id], |r| r.get(0))
        .optional()?;
    Ok(request.map(|json| digest_of(&json).unwrap_or_default()))
}

/// What the writer hands back for one approval given.
fn given_done(given: &Given) -> Result<Done, StoreError> {
    match given {
        Given::Counted(approvals) => as_text(approvals),
        Given::Stale => Ok(Done::Flag(false)),
        Given::NotWaiting => Ok(Done::Unit),
    }
}

fn on_digest(
    conn: &Connection,
    session_id: &str,
    approval_id: &str,
    digest: Option<&str>,
) -> Result<Vec<GivenApproval>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM approvals_given WHERE session_id = ?1 AND approval_id = ?2
         AND (?3 IS NULL OR digest = ?3) ORDER BY at, who"
    ))?;
    let rows = stmt.query_map(params![session_id, approval_id, digest], given)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One approval, inside the writer's transaction: the card checked, revised, the row and
/// its audit entry written, the approvals on its digest read back.
fn give(
    sp: &Connection,
    (sid, aid, seen): (&str, &str, &str),
    approval: &GivenApproval,
    revised: Option<&str>,
    audit: &AuditDraft,
) -> Result<Given, StoreError> {
    match waiting_digest(sp, sid, aid)? {
        None => return Ok(Given::NotWaiting),
        Some(digest) if digest != seen => return Ok(Given::Stale),
        Some(_) => {}
    }
    if let Some(request) = revised {
        sp.prepare_cached(
            "UPDATE approvals SET request = ?1 WHERE session_id = ?2 AND approval_id = ?3",
        )?
        .execute(params![request, sid, aid])?;
    }
    let added = sp
        .prepare_cached(
            "INSERT OR IGNORE INTO approvals_given (session_id, approval_id, who, name, digest, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            sid,
            aid,
            approval.who,
            approval.name,
            approval.digest,
            approval.at
        ])?;
    if added == 1 {
        super::write::chain_audit(sp, vec![audit.clone()])?;
    }
    Ok(Given::Counted(on_digest(
        sp,
        sid,
        aid,
        Some(&approval.digest),
    )?))
}

fn as_text(approvals: &[GivenApproval]) -> Result<Done, StoreError> {
    serde_json::to_string(approvals)
        .map(Done::Text)
        .map_err(|e| StoreError::Database(e.to_string()))
}

#[async_trait]
impl QuorumRepo for SqliteStore {
    async fn give_approval(
        &self,
        giving: Giving<'_>,
        audit: AuditDraft,
    ) -> Result<Given, StoreError> {
        let (sid, aid, seen) = (
            giving.session_id.as_str().to_owned(),
            giving.approval_id.as_str().to_owned(),
            giving.seen_digest.to_owned(),
        );
        let approval = giving.approval.clone();
        let revised = giving
            .revised
            .map(|r| codec::to_json(&sid, r))
            .transpose()?;
        let done = self
            .writer
            .exec(move |sp| {
                let given = give(
                    sp,
                    (&sid, &aid, &seen),
                    &approval,
                    revised.as_deref(),
                    &audit,
                )?;
                given_done(&given)
            })
            .await?;
        match done {
            Done::Text(json) => serde_json::from_str(&json)
                .map(Given::Counted)
                .map_err(|e| StoreError::Database(e.to_string())),
            Done::Flag(_) => Ok(Given::Stale),
            _ => Ok(Given::NotWaiting),
        }
    }

    async fn given_approvals(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Vec<GivenApproval>, StoreError> {
        let (sid, aid) = (
            session_id.as_str().to_owned(),
            approval_id.as_str().to_owned(),
        );
        self.read(move |c| on_digest(c, &sid, &aid, None)).await
    }

    async fn mark_escalated(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
        at: &Timestamp,
        audit: AuditDraft,
    ) -> Result<bool, StoreError> {
        let (sid, aid, at) = (
            session_id.as_str().to_owned(),
            approval_id.as_str().to_owned(),
            at.clone(),
        );
        let done = self
            .writer
            .exec(move |sp| {
                let marked = sp
                    .prepare_cached(
                        "UPDATE approvals SET escalated_at = ?1 WHERE session_id = ?2 AND approval_id = ?3
                         AND resolution IS NULL AND escalated_at IS NULL",
                    )?
                    .execute(params![at, sid, aid])?;
                if marked == 1 {
                    super::write::chain_audit(sp, vec![audit.clone()])?;
                }
                Ok(Done::Flag(marked == 1))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn escalated_at(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Option<Timestamp>, StoreError> {
        let (sid, aid) = (
            session_id.as_str().to_owned(),
            approval_id.as_str().to_owned(),
        );
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT escalated_at FROM approvals WHERE session_id = ?1 AND approval_id = ?2",
            )?
            .query_row(params![sid, aid], |r| r.get::<_, Option<Timestamp>>(0))
            .optional()?
            .flatten())
        })
        .await
    }
}
