//! The reviewer's rows on PostgreSQL: one statement per call, or one transaction with its
//! audit entry for a trust given or lost.

use async_trait::async_trait;

use super::PgStore;
use super::write::{queue_audit, untrust_in};
use crate::protocol::{Answered, ApprovalRequest, Resolution, Timestamp, ToolClass};
use crate::server::store::StoreError;
use crate::server::store::review::{
    PERSON_REFUSALS, PREDICTION_COLUMNS, PredictionRow, PredictionTexts, ReviewRepo, TrustRow,
    answered_card, prediction_row, trust_audit_draft,
};

type Tuple = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn row_of(t: Tuple) -> Option<PredictionRow> {
    prediction_row(PredictionTexts {
        approval_id: t.0,
        session_id: t.1,
        class: t.2,
        source: t.3,
        reviewer: t.4,
        predicted: t.5,
        reason: t.6,
        predicted_at: t.7,
        answered: t.8,
        answered_at: t.9,
        disagreed_at: t.10,
    })
}

#[async_trait]
impl ReviewRepo for PgStore {
    async fn save_prediction(&self, row: &PredictionRow) -> Result<bool, StoreError> {
        crate::server::store::storable(&row.reason)?;
        crate::server::store::storable(&row.source)?;
        let added = sqlx::query(&format!(
            "INSERT INTO review_predictions ({PREDICTION_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL, NULL) \
             ON CONFLICT (approval_id) DO NOTHING"
        ))
        .bind(row.approval_id.as_str())
        .bind(row.session_id.as_str())
        .bind(row.class.as_str())
        .bind(&row.source)
        .bind(row.reviewer.as_str())
        .bind(row.predicted.as_str())
        .bind(&row.reason)
        .bind(row.predicted_at.as_str())
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(added > 0)
    }

    async fn prediction(&self, approval_id: &str) -> Result<Option<PredictionRow>, StoreError> {
        let row: Option<Tuple> = sqlx::query_as(&format!(
            "SELECT {PREDICTION_COLUMNS} FROM review_predictions WHERE approval_id = $1"
        ))
        .bind(approval_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(row_of))
    }

    async fn record_answer(
        &self,
        approval_id: &str,
        answered: Answered,
        at: &Timestamp,
    ) -> Result<bool, StoreError> {
        let changed = sqlx::query(
            "UPDATE review_predictions SET answered = $1, answered_at = $2 \
             WHERE approval_id = $3 AND answered IS NULL",
        )
        .bind(answered.as_str())
        .bind(at.as_str())
        .bind(approval_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(changed > 0)
    }

    async fn mark_disagreed(&self, approval_id: &str, at: &Timestamp) -> Result<bool, StoreError> {
        let changed = sqlx::query(
            "UPDATE review_predictions SET disagreed_at = $1 \
             WHERE approval_id = $2 AND answered = 'reviewer' AND disagreed_at IS NULL",
        )
        .bind(at.as_str())
        .bind(approval_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(changed > 0)
    }

    async fn answered_predictions(&self, limit: u32) -> Result<Vec<PredictionRow>, StoreError> {
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {PREDICTION_COLUMNS} FROM review_predictions \
             WHERE answered IS NOT NULL ORDER BY answered_at DESC, approval_id LIMIT $1"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().filter_map(row_of).collect())
    }

    async fn trusted_classes(&self) -> Result<Vec<TrustRow>, StoreError> {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT class, source, trusted_at, reviewer FROM review_trust ORDER BY class, source",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(class, source, trusted_at, reviewer)| {
                Some(TrustRow {
                    class: ToolClass::parse(&class)?,
                    source,
                    trusted_at: trusted_at.into(),
                    reviewer,
                })
            })
            .collect())
    }

    async fn trust_class(&self, row: &TrustRow, actor: &str) -> Result<bool, StoreError> {
        crate::server::store::storable(&row.source)?;
        let mut tx = self.pool.begin().await?;
        let added = sqlx::query(
            "INSERT INTO review_trust (class, source, trusted_at, reviewer) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (class, source) DO NOTHING",
        )
        .bind(row.class.as_str())
        .bind(&row.source)
        .bind(row.trusted_at.as_str())
        .bind(&row.reviewer)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if added > 0 {
            let draft = trust_audit_draft(actor, "review_trusted", row.class, &row.source, None);
            queue_audit(&mut tx, vec![draft]).await?;
        }
        tx.commit().await?;
        self.sealer.kick();
        Ok(added > 0)
    }

    async fn untrust_class(
        &self,
        class: ToolClass,
        source: &str,
        actor: &str,
        why: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let gone = untrust_in(&mut tx, class, source, actor, why).await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(gone)
    }

    async fn untrust_all(&self, actor: &str, why: &str) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let all: Vec<(String, String)> =
            sqlx::query_as("SELECT class, source FROM review_trust FOR UPDATE")
                .fetch_all(&mut *tx)
                .await?;
        let mut gone = 0;
        for (class, source) in all {
            let Some(class) = ToolClass::parse(&class) else {
                continue;
            };
            gone += u64::from(untrust_in(&mut tx, class, &source, actor, why).await?);
        }
        tx.commit().await?;
        self.sealer.kick();
        Ok(gone)
    }

    async fn answered_cards(
        &self,
        limit: u32,
    ) -> Result<Vec<(ApprovalRequest, Resolution)>, StoreError> {
        // The person's refusals apart from their approvals, so no flood of approvals (nor of
        // anything answered by a rule, a mode or the clock) pushes a deny out.
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT request, resolution FROM ( \
               (SELECT request, resolution, resolved_at FROM approvals \
                 WHERE resolution IS NOT NULL \
                   AND (resolution::jsonb->>'answered_by') = 'user' \
                   AND (resolution::jsonb->>'decision') IN ('deny', 'edit') \
                 ORDER BY resolved_at DESC LIMIT $1) \
               UNION ALL \
               (SELECT request, resolution, resolved_at FROM approvals \
                 WHERE resolution IS NOT NULL \
                   AND (resolution::jsonb->>'answered_by') = 'user' \
                   AND (resolution::jsonb->>'decision') IN ('approve', 'allow_always') \
                 ORDER BY resolved_at DESC LIMIT $2) \
             ) AS person ORDER BY resolved_at DESC",
        )
        .bind(i64::from(PERSON_REFUSALS))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .filter_map(|(request, resolution)| answered_card(request, resolution))
            .collect())
    }
}
