//! Push subscriptions on PostgreSQL: one statement (or one transaction with its audit entry)
//! per call.

use async_trait::async_trait;

use super::PgStore;
use super::write::queue_audit;
use crate::server::store::StoreError;
use crate::server::store::push::{PushSubscriptionRow, PushSubscriptions, audit_draft};

const COLUMNS: &str = "id, endpoint, p256dh, auth, credential, credential_check, created_at";

type Tuple = (String, String, String, String, String, String, String);

fn subscription(
    (id, endpoint, p256dh, auth, credential, credential_check, created_at): Tuple,
) -> PushSubscriptionRow {
    PushSubscriptionRow {
        id,
        endpoint,
        p256dh,
        auth,
        credential,
        credential_check,
        created_at: created_at.into(),
    }
}

#[async_trait]
impl PushSubscriptions for PgStore {
    async fn save_push_subscription(&self, row: &PushSubscriptionRow) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM push_subscriptions WHERE endpoint = $1")
            .bind(&row.endpoint)
            .execute(&mut *tx)
            .await?;
        sqlx::query(&format!(
            "INSERT INTO push_subscriptions ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ))
        .bind(&row.id)
        .bind(&row.endpoint)
        .bind(&row.p256dh)
        .bind(&row.auth)
        .bind(&row.credential)
        .bind(&row.credential_check)
        .bind(row.created_at.as_str())
        .execute(&mut *tx)
        .await?;
        queue_audit(
            &mut tx,
            vec![audit_draft(
                &row.credential,
                "push_subscribed",
                &row.id,
                &row.endpoint,
            )],
        )
        .await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(())
    }

    async fn push_subscriptions(&self) -> Result<Vec<PushSubscriptionRow>, StoreError> {
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM push_subscriptions ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(subscription).collect())
    }

    async fn push_subscription(&self, id: &str) -> Result<Option<PushSubscriptionRow>, StoreError> {
        let row: Option<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM push_subscriptions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(subscription))
    }

    async fn delete_push_subscription(&self, id: &str, actor: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let endpoint: Option<(String,)> =
            sqlx::query_as("DELETE FROM push_subscriptions WHERE id = $1 RETURNING endpoint")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((endpoint,)) = endpoint else {
            return Ok(false);
        };
        queue_audit(
            &mut tx,
            vec![audit_draft(actor, "push_unsubscribed", id, &endpoint)],
        )
        .await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(true)
    }
}
