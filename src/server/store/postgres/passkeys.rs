//! Passkeys on PostgreSQL.

use async_trait::async_trait;

use super::PgStore;
use super::write::queue_audit;
use crate::protocol::Timestamp;
use crate::server::store::StoreError;
use crate::server::store::passkeys::{PasskeyRow, PasskeyRows, audit_draft, reset_draft};

const COLUMNS: &str = "id, name, rp_id, origin, credential, created_at, last_used_at";

type Tuple = (
    String,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
);

fn passkey((id, name, rp_id, origin, credential, created_at, last_used_at): Tuple) -> PasskeyRow {
    PasskeyRow {
        id,
        name,
        rp_id,
        origin,
        credential,
        created_at: created_at.into(),
        last_used_at: last_used_at.map(Timestamp::from),
    }
}

#[async_trait]
impl PasskeyRows for PgStore {
    async fn passkeys(&self) -> Result<Vec<PasskeyRow>, StoreError> {
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM passkeys ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(passkey).collect())
    }

    async fn add_passkey(&self, row: &PasskeyRow, actor: &str) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(&format!(
            "INSERT INTO passkeys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING"
        ))
        .bind(&row.id)
        .bind(&row.name)
        .bind(&row.rp_id)
        .bind(&row.origin)
        .bind(&row.credential)
        .bind(row.created_at.as_str())
        .bind(row.last_used_at.as_ref().map(|t| t.as_str().to_owned()))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 0 {
            return Err(StoreError::Taken(row.name.clone()));
        }
        queue_audit(
            &mut tx,
            vec![audit_draft(actor, "passkey_registered", &row.id, &row.name)],
        )
        .await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(())
    }

    async fn touch_passkey(
        &self,
        id: &str,
        credential: &str,
        at: &Timestamp,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE passkeys SET credential = $1, last_used_at = $2 WHERE id = $3")
            .bind(credential)
            .bind(at.as_str())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn remove_passkey(&self, id: &str, actor: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let name: Option<(String,)> =
            sqlx::query_as("DELETE FROM passkeys WHERE id = $1 RETURNING name")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((name,)) = name else {
            return Ok(false);
        };
        queue_audit(
            &mut tx,
            vec![audit_draft(actor, "passkey_removed", id, &name)],
        )
        .await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(true)
    }

    async fn reset_passkeys(&self, actor: &str) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let removed = sqlx::query("DELETE FROM passkeys")
            .execute(&mut *tx)
            .await?
            .rows_affected();
        queue_audit(&mut tx, vec![reset_draft(actor, removed)]).await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(removed)
    }
}
