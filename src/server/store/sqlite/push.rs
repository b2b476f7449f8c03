//! Push subscriptions: reads on the reader pool, writes through the writer thread.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use crate::server::store::StoreError;
use crate::server::store::push::{PushSubscriptionRow, PushSubscriptions, audit_draft};

const COLUMNS: &str = "id, endpoint, p256dh, auth, credential, credential_check, created_at";

fn subscription(row: &Row<'_>) -> rusqlite::Result<PushSubscriptionRow> {
    Ok(PushSubscriptionRow {
        id: row.get(0)?,
        endpoint: row.get(1)?,
        p256dh: row.get(2)?,
        auth: row.get(3)?,
        credential: row.get(4)?,
        credential_check: row.get(5)?,
        created_at: row.get(6)?,
    })
}

#[async_trait]
impl PushSubscriptions for SqliteStore {
    async fn save_push_subscription(&self, row: &PushSubscriptionRow) -> Result<(), StoreError> {
        let row = row.clone();
        self.writer
            .exec(move |sp| {
                sp.prepare_cached("DELETE FROM push_subscriptions WHERE endpoint = ?1")?
                    .execute(params![row.endpoint])?;
                sp.prepare_cached(&format!(
                    "INSERT INTO push_subscriptions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                ))?
                .execute(params![
                    row.id,
                    row.endpoint,
                    row.p256dh,
                    row.auth,
                    row.credential,
                    row.credential_check,
                    row.created_at
                ])?;
                super::write::chain_audit(
                    sp,
                    vec![audit_draft(
                        &row.credential,
                        "push_subscribed",
                        &row.id,
                        &row.endpoint,
                    )],
                )?;
                Ok(Done::Unit)
            })
            .await
            .map(|_| ())
    }

    async fn push_subscriptions(&self) -> Result<Vec<PushSubscriptionRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([], subscription)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn push_subscription(&self, id: &str) -> Result<Option<PushSubscriptionRow>, StoreError> {
        let id = id.to_owned();
        self.lookup(move |c| {
            Ok(c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions WHERE id = ?1"
            ))?
            .query_row(params![id], subscription)
            .optional()?)
        })
        .await
    }

    async fn delete_push_subscription(&self, id: &str, actor: &str) -> Result<bool, StoreError> {
        let (id, actor) = (id.to_owned(), actor.to_owned());
        let done = self
            .writer
            .exec(move |sp| {
                let endpoint: Option<String> = sp
                    .prepare_cached(
                        "DELETE FROM push_subscriptions WHERE id = ?1 RETURNING endpoint",
                    )?
                    .query_row(params![id], |r| r.get(0))
                    .optional()?;
                let Some(endpoint) = endpoint else {
                    return Ok(Done::Flag(false));
                };
                super::write::chain_audit(
                    sp,
                    vec![audit_draft(&actor, "push_unsubscribed", &id, &endpoint)],
                )?;
                Ok(Done::Flag(true))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }
}
