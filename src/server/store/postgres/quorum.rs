//! Approvals toward a quorum and escalations. Giving an approval locks the card's row first
//! (`FOR UPDATE`): two people approving at once are counted one after the other, so exactly
//! one of them sees the quorum reached.

use async_trait::async_trait;

use super::PgStore;
use super::write::queue_audit;
use crate::protocol::{ApprovalId, GivenApproval, SessionId, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::store::StoreError;
use crate::server::store::quorum::{COLUMNS, Given, Giving, QuorumRepo, digest_of};

type Tuple = (String, Option<String>, String, String);

fn given((who, name, at, digest): Tuple) -> GivenApproval {
    GivenApproval {
        who,
        name,
        at: at.into(),
        digest,
    }
}

/// Holds the card's row until the commit (approvals to one card are counted in turn); why
/// nothing may be given, if so: it no longer waits, or its digest is not the one seen.
async fn hold_card(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    sid: &str,
    aid: &str,
    seen_digest: &str,
) -> Result<Option<Given>, StoreError> {
    let waiting: Option<(String,)> = sqlx::query_as(
        "SELECT request FROM approvals WHERE session_id = $1 AND approval_id = $2 AND resolution IS NULL FOR UPDATE",
    )
    .bind(sid)
    .bind(aid)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(match waiting {
        None => Some(Given::NotWaiting),
        Some((request,)) if digest_of(&request).as_deref() != Some(seen_digest) => {
            Some(Given::Stale)
        }
        Some(_) => None,
    })
}

#[async_trait]
impl QuorumRepo for PgStore {
    async fn give_approval(
        &self,
        giving: Giving<'_>,
        audit: AuditDraft,
    ) -> Result<Given, StoreError> {
        let (sid, aid) = (giving.session_id.as_str(), giving.approval_id.as_str());
        let approval = giving.approval;
        let revised = giving
            .revised
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let mut tx = self.pool.begin().await?;
        if let Some(refused) = hold_card(&mut tx, sid, aid, giving.seen_digest).await? {
            return Ok(refused);
        }
        if let Some(revised) = &revised {
            sqlx::query(
                "UPDATE approvals SET request = $1 WHERE session_id = $2 AND approval_id = $3",
            )
            .bind(revised)
            .bind(sid)
            .bind(aid)
            .execute(&mut *tx)
            .await?;
        }
        let added = sqlx::query(
            "INSERT INTO approvals_given (session_id, approval_id, who, name, digest, at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        )
        .bind(sid)
        .bind(aid)
        .bind(&approval.who)
        .bind(&approval.name)
        .bind(&approval.digest)
        .bind(approval.at.as_str())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if added == 1 {
            queue_audit(&mut tx, vec![audit]).await?;
        }
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM approvals_given WHERE session_id = $1 AND approval_id = $2
             AND digest = $3 ORDER BY at, who"
        ))
        .bind(sid)
        .bind(aid)
        .bind(&approval.digest)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        if added == 1 {
            self.sealer.kick();
        }
        Ok(Given::Counted(rows.into_iter().map(given).collect()))
    }

    async fn given_approvals(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Vec<GivenApproval>, StoreError> {
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM approvals_given WHERE session_id = $1 AND approval_id = $2
             ORDER BY at, who"
        ))
        .bind(session_id.as_str())
        .bind(approval_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(given).collect())
    }

    async fn mark_escalated(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
        at: &Timestamp,
        audit: AuditDraft,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let marked = sqlx::query(
            "UPDATE approvals SET escalated_at = $1 WHERE session_id = $2 AND approval_id = $3
             AND resolution IS NULL AND escalated_at IS NULL",
        )
        .bind(at.as_str())
        .bind(session_id.as_str())
        .bind(approval_id.as_str())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if marked == 1 {
            queue_audit(&mut tx, vec![audit]).await?;
        }
        tx.commit().await?;
        if marked == 1 {
            self.sealer.kick();
        }
        Ok(marked == 1)
    }

    async fn escalated_at(
        &self,
        session_id: &SessionId,
        approval_id: &ApprovalId,
    ) -> Result<Option<Timestamp>, StoreError> {
        let row: Option<(Option<String>,)> = sqlx::query_as(
            "SELECT escalated_at FROM approvals WHERE session_id = $1 AND approval_id = $2",
        )
        .bind(session_id.as_str())
        .bind(approval_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(|(at,)| at).map(Timestamp::from))
    }
}
