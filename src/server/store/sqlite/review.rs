//! The reviewer's rows on SQLite: reads on the reader pool, writes through the writer thread
//! (a trust given or lost with its audit entry in one transaction).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use crate::protocol::{Answered, ApprovalRequest, Resolution, Timestamp, ToolClass};
use crate::server::store::StoreError;
use crate::server::store::review::{
    PERSON_REFUSALS, PREDICTION_COLUMNS, PredictionRow, PredictionTexts, ReviewRepo, TrustRow,
    answered_card, prediction_row, trust_audit_draft,
};

fn texts(row: &Row<'_>) -> rusqlite::Result<PredictionTexts> {
    Ok(PredictionTexts {
        approval_id: row.get(0)?,
        session_id: row.get(1)?,
        class: row.get(2)?,
        source: row.get(3)?,
        reviewer: row.get(4)?,
        predicted: row.get(5)?,
        reason: row.get(6)?,
        predicted_at: row.get(7)?,
        answered: row.get(8)?,
        answered_at: row.get(9)?,
        disagreed_at: row.get(10)?,
    })
}

/// Deletes one trust row and chains its audit entry; whether there was one.
pub(super) fn untrust_in(
    sp: &rusqlite::Savepoint<'_>,
    class: &str,
    source: &str,
    actor: &str,
    why: &str,
) -> Result<bool, StoreError> {
    let gone = sp
        .prepare_cached("DELETE FROM review_trust WHERE class = ?1 AND source = ?2")?
        .execute(params![class, source])?;
    if gone == 0 {
        return Ok(false);
    }
    if let Some(class) = ToolClass::parse(class) {
        super::write::chain_audit(
            sp,
            vec![trust_audit_draft(
                actor,
                "review_untrusted",
                class,
                source,
                Some(why),
            )],
        )?;
    }
    Ok(true)
}

#[async_trait]
impl ReviewRepo for SqliteStore {
    async fn save_prediction(&self, row: &PredictionRow) -> Result<bool, StoreError> {
        crate::server::store::storable(&row.reason)?;
        crate::server::store::storable(&row.source)?;
        let row = row.clone();
        let done = self
            .writer
            .exec(move |sp| {
                let added = sp
                    .prepare_cached(&format!(
                        "INSERT INTO review_predictions ({PREDICTION_COLUMNS}) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, NULL, NULL) \
                         ON CONFLICT (approval_id) DO NOTHING"
                    ))?
                    .execute(params![
                        row.approval_id.as_str(),
                        row.session_id.as_str(),
                        row.class.as_str(),
                        row.source,
                        row.reviewer.as_str(),
                        row.predicted.as_str(),
                        row.reason,
                        row.predicted_at,
                    ])?;
                Ok(Done::Flag(added > 0))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn prediction(&self, approval_id: &str) -> Result<Option<PredictionRow>, StoreError> {
        let id = approval_id.to_owned();
        let found = self
            .lookup(move |c| {
                Ok(c.prepare_cached(&format!(
                    "SELECT {PREDICTION_COLUMNS} FROM review_predictions WHERE approval_id = ?1"
                ))?
                .query_row(params![id], texts)
                .optional()?)
            })
            .await?;
        Ok(found.and_then(prediction_row))
    }

    async fn record_answer(
        &self,
        approval_id: &str,
        answered: Answered,
        at: &Timestamp,
    ) -> Result<bool, StoreError> {
        let (id, at) = (approval_id.to_owned(), at.clone());
        let done = self
            .writer
            .exec(move |sp| {
                let changed = sp
                    .prepare_cached(
                        "UPDATE review_predictions SET answered = ?1, answered_at = ?2 \
                         WHERE approval_id = ?3 AND answered IS NULL",
                    )?
                    .execute(params![answered.as_str(), at, id])?;
                Ok(Done::Flag(changed > 0))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn mark_disagreed(&self, approval_id: &str, at: &Timestamp) -> Result<bool, StoreError> {
        let (id, at) = (approval_id.to_owned(), at.clone());
        let done = self
            .writer
            .exec(move |sp| {
                let changed = sp
                    .prepare_cached(
                        "UPDATE review_predictions SET disagreed_at = ?1 \
                         WHERE approval_id = ?2 AND answered = 'reviewer' AND disagreed_at IS NULL",
                    )?
                    .execute(params![at, id])?;
                Ok(Done::Flag(changed > 0))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn answered_predictions(&self, limit: u32) -> Result<Vec<PredictionRow>, StoreError> {
        let rows: Vec<PredictionTexts> = self
            .read(move |c| {
                let mut stmt = c.prepare_cached(&format!(
                    "SELECT {PREDICTION_COLUMNS} FROM review_predictions \
                     WHERE answered IS NOT NULL ORDER BY answered_at DESC, approval_id LIMIT ?1"
                ))?;
                let rows = stmt.query_map(params![limit], texts)?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            })
            .await?;
        Ok(rows.into_iter().filter_map(prediction_row).collect())
    }

    async fn trusted_classes(&self) -> Result<Vec<TrustRow>, StoreError> {
        let rows: Vec<(String, String, Timestamp, String)> = self
            .read(|c| {
                let mut stmt = c.prepare_cached(
                    "SELECT class, source, trusted_at, reviewer FROM review_trust \
                     ORDER BY class, source",
                )?;
                let rows =
                    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            })
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(class, source, trusted_at, reviewer)| {
                Some(TrustRow {
                    class: ToolClass::parse(&class)?,
                    source,
                    trusted_at,
                    reviewer,
                })
            })
            .collect())
    }

    async fn trust_class(&self, row: &TrustRow, actor: &str) -> Result<bool, StoreError> {
        crate::server::store::storable(&row.source)?;
        let (row, actor) = (row.clone(), actor.to_owned());
        let done = self
            .writer
            .exec(move |sp| {
                let added = sp
                    .prepare_cached(
                        "INSERT INTO review_trust (class, source, trusted_at, reviewer) \
                         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (class, source) DO NOTHING",
                    )?
                    .execute(params![
                        row.class.as_str(),
                        row.source,
                        row.trusted_at,
                        row.reviewer
                    ])?;
                if added > 0 {
                    super::write::chain_audit(
                        sp,
                        vec![trust_audit_draft(
                            &actor,
                            "review_trusted",
                            row.class,
                            &row.source,
                            None,
                        )],
                    )?;
                }
                Ok(Done::Flag(added > 0))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn untrust_class(
        &self,
        class: ToolClass,
        source: &str,
        actor: &str,
        why: &str,
    ) -> Result<bool, StoreError> {
        let (source, actor, why) = (source.to_owned(), actor.to_owned(), why.to_owned());
        let done = self
            .writer
            .exec(move |sp| untrust_in(sp, class.as_str(), &source, &actor, &why).map(Done::Flag))
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn untrust_all(&self, actor: &str, why: &str) -> Result<u64, StoreError> {
        let (actor, why) = (actor.to_owned(), why.to_owned());
        let done = self
            .writer
            .exec(move |sp| {
                let all: Vec<(String, String)> = sp
                    .prepare_cached("SELECT class, source FROM review_trust")?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut gone = 0usize;
                for (class, source) in all {
                    gone += usize::from(untrust_in(sp, &class, &source, &actor, &why)?);
                }
                Ok(Done::Text(gone.to_string()))
            })
            .await?;
        Ok(match done {
            Done::Text(n) => n.parse().unwrap_or(0),
            _ => 0,
        })
    }

    async fn answered_cards(
        &self,
        limit: u32,
    ) -> Result<Vec<(ApprovalRequest, Resolution)>, StoreError> {
        let rows: Vec<(String, String)> = self
            .read(move |c| {
                // The person's refusals apart from their approvals, so no flood of approvals
                // (nor of anything answered by a rule, a mode or the clock) pushes a deny out.
                let mut stmt = c.prepare_cached(
                    "SELECT request, resolution FROM ( \
                       SELECT * FROM (SELECT request, resolution, resolved_at FROM approvals \
                         WHERE resolution IS NOT NULL \
                           AND json_extract(resolution, '$.answered_by') = 'user' \
                           AND json_extract(resolution, '$.decision') IN ('deny', 'edit') \
                         ORDER BY resolved_at DESC LIMIT ?1) \
                       UNION ALL \
                       SELECT * FROM (SELECT request, resolution, resolved_at FROM approvals \
                         WHERE resolution IS NOT NULL \
                           AND json_extract(resolution, '$.answered_by') = 'user' \
                           AND json_extract(resolution, '$.decision') IN ('approve', 'allow_always') \
                         ORDER BY resolved_at DESC LIMIT ?2) \
                     ) ORDER BY resolved_at DESC",
                )?;
                let rows = stmt.query_map(params![PERSON_REFUSALS, limit], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            })
            .await?;
        Ok(rows
            .iter()
            .filter_map(|(request, resolution)| answered_card(request, resolution))
            .collect())
    }
}
