//! Hashed secrets on PostgreSQL: one statement (or one transaction) per call. A take is one
//! `DELETE … RETURNING`, so of two instances taking the same secret only one gets it.

use async_trait::async_trait;

use super::PgStore;
use crate::protocol::{Spelling, Timestamp};
use crate::server::store::StoreError;
use crate::server::store::secrets::{HashedSecret, HashedSecrets, SecretKind};

const COLUMNS: &str = "hash, body, created_ms, expires_ms";
/// A row that grants something now (`$2` is the time of the read).
const LIVE: &str = "(expires_ms IS NULL OR expires_ms > $2)";

type Tuple = (String, String, i64, Option<i64>);

fn secret(kind: SecretKind) -> impl Fn(Tuple) -> HashedSecret {
    move |(hash, body, created_ms, expires_ms)| HashedSecret {
        hash,
        kind,
        body,
        created_ms,
        expires_ms,
    }
}

async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    row: &HashedSecret,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM hashed_secrets WHERE expires_ms <= $1")
        .bind(Timestamp::now_ms())
        .execute(&mut **tx)
        .await?;
    let inserted = sqlx::query(
        "INSERT INTO hashed_secrets (hash, kind, body, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hash) DO NOTHING",
    )
    .bind(&row.hash)
    .bind(row.kind.spelling())
    .bind(&row.body)
    .bind(row.created_ms)
    .bind(row.expires_ms)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Err(StoreError::Taken("a secret with this hash".into()));
    }
    Ok(())
}

#[async_trait]
impl HashedSecrets for PgStore {
    async fn keep_secret(&self, row: &HashedSecret) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        insert(&mut tx, row).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn replace_secrets(&self, row: &HashedSecret) -> Result<(), StoreError> {
        // Idempotent: instances started together with the same `--token` each keep it.
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM hashed_secrets WHERE kind = $1 AND hash <> $2")
            .bind(row.kind.spelling())
            .bind(&row.hash)
            .execute(&mut *tx)
            .await?;
        match insert(&mut tx, row).await {
            Ok(()) | Err(StoreError::Taken(_)) => {}
            Err(other) => return Err(other),
        }
        tx.commit().await?;
        Ok(())
    }

    async fn find_secret(
        &self,
        kind: SecretKind,
        hash: &str,
    ) -> Result<Option<HashedSecret>, StoreError> {
        let row: Option<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM hashed_secrets WHERE hash = $1 AND {LIVE} AND kind = $3"
        ))
        .bind(hash)
        .bind(Timestamp::now_ms())
        .bind(kind.spelling())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(secret(kind)))
    }

    async fn take_secret(
        &self,
        kind: SecretKind,
        hash: &str,
    ) -> Result<Option<HashedSecret>, StoreError> {
        let row: Option<Tuple> = sqlx::query_as(&format!(
            "DELETE FROM hashed_secrets WHERE hash = $1 AND {LIVE} AND kind = $3 RETURNING {COLUMNS}"
        ))
        .bind(hash)
        .bind(Timestamp::now_ms())
        .bind(kind.spelling())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(secret(kind)))
    }

    async fn secrets_of(&self, kind: SecretKind) -> Result<Vec<HashedSecret>, StoreError> {
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM hashed_secrets WHERE kind = $1 AND {LIVE} ORDER BY created_ms, hash"
        ))
        .bind(kind.spelling())
        .bind(Timestamp::now_ms())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(secret(kind)).collect())
    }

    async fn forget_secrets(
        &self,
        kind: SecretKind,
        hash: Option<&str>,
    ) -> Result<u64, StoreError> {
        let done = match hash {
            Some(hash) => {
                sqlx::query("DELETE FROM hashed_secrets WHERE kind = $1 AND hash = $2")
                    .bind(kind.spelling())
                    .bind(hash)
                    .execute(&self.pool)
                    .await?
            }
            None => {
                sqlx::query("DELETE FROM hashed_secrets WHERE kind = $1")
                    .bind(kind.spelling())
                    .execute(&self.pool)
                    .await?
            }
        };
        Ok(done.rows_affected())
    }
}
