//! Hashed secrets: lookups by key on the calling thread, writes through the writer thread.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use crate::protocol::{Spelling, Timestamp};
use crate::server::store::StoreError;
use crate::server::store::secrets::{HashedSecret, HashedSecrets, SecretKind};

const COLUMNS: &str = "hash, body, created_ms, expires_ms";
/// A row that grants something now: unexpired (`?2` is the time of the read).
const LIVE: &str = "(expires_ms IS NULL OR expires_ms > ?2)";

fn secret(kind: SecretKind) -> impl Fn(&Row<'_>) -> rusqlite::Result<HashedSecret> {
    move |row| {
        Ok(HashedSecret {
            hash: row.get(0)?,
            kind,
            body: row.get(1)?,
            created_ms: row.get(2)?,
            expires_ms: row.get(3)?,
        })
    }
}

fn insert(sp: &rusqlite::Savepoint<'_>, row: &HashedSecret) -> Result<(), StoreError> {
    sp.prepare_cached("DELETE FROM hashed_secrets WHERE expires_ms <= ?1")?
        .execute(params![Timestamp::now_ms()])?;
    let taken: Option<String> = sp
        .prepare_cached("SELECT hash FROM hashed_secrets WHERE hash = ?1")?
        .query_row(params![row.hash], |r| r.get(0))
        .optional()?;
    if taken.is_some() {
        return Err(StoreError::Taken("a secret with this hash".into()));
    }
    sp.prepare_cached(
        "INSERT INTO hashed_secrets (hash, kind, body, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        row.hash,
        row.kind.spelling(),
        row.body,
        row.created_ms,
        row.expires_ms
    ])?;
    Ok(())
}

#[async_trait]
impl HashedSecrets for SqliteStore {
    async fn keep_secret(&self, row: &HashedSecret) -> Result<(), StoreError> {
        let row = row.clone();
        self.writer
            .exec(move |sp| insert(sp, &row).map(|()| Done::Unit))
            .await
            .map(|_| ())
    }

    async fn replace_secrets(&self, row: &HashedSecret) -> Result<(), StoreError> {
        let row = row.clone();
        self.writer
            .exec(move |sp| {
                // Idempotent: the same admin token kept again stays kept.
                sp.prepare_cached("DELETE FROM hashed_secrets WHERE kind = ?1 AND hash <> ?2")?
                    .execute(params![row.kind.spelling(), row.hash])?;
                match insert(sp, &row) {
                    Ok(()) | Err(StoreError::Taken(_)) => Ok(Done::Unit),
                    Err(other) => Err(other),
                }
            })
            .await
            .map(|_| ())
    }

    async fn find_secret(
        &self,
        kind: SecretKind,
        hash: &str,
    ) -> Result<Option<HashedSecret>, StoreError> {
        let hash = hash.to_owned();
        let now = Timestamp::now_ms();
        self.lookup(move |c| {
            Ok(c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM hashed_secrets WHERE hash = ?1 AND {LIVE} AND kind = ?3"
            ))?
            .query_row(params![hash, now, kind.spelling()], secret(kind))
            .optional()?)
        })
        .await
    }

    async fn take_secret(
        &self,
        kind: SecretKind,
        hash: &str,
    ) -> Result<Option<HashedSecret>, StoreError> {
        let hash = hash.to_owned();
        let now = Timestamp::now_ms();
        let done = self
            .writer
            .exec(move |sp| {
                let taken = sp
                    .prepare_cached(&format!(
                        "DELETE FROM hashed_secrets WHERE hash = ?1 AND {LIVE} AND kind = ?3 RETURNING {COLUMNS}"
                    ))?
                    .query_row(params![hash, now, kind.spelling()], secret(kind))
                    .optional()?;
                Ok(match taken {
                    Some(row) => Done::Text(encode(&row)),
                    None => Done::Unit,
                })
            })
            .await?;
        Ok(match done {
            Done::Text(json) => decode(&json, kind),
            _ => None,
        })
    }

    async fn secrets_of(&self, kind: SecretKind) -> Result<Vec<HashedSecret>, StoreError> {
        let now = Timestamp::now_ms();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM hashed_secrets WHERE kind = ?1 AND {LIVE} ORDER BY created_ms, hash"
            ))?;
            let rows = stmt.query_map(params![kind.spelling(), now], secret(kind))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn forget_secrets(
        &self,
        kind: SecretKind,
        hash: Option<&str>,
    ) -> Result<u64, StoreError> {
        let hash = hash.map(str::to_owned);
        let done = self
            .writer
            .exec(move |sp| {
                let removed = match &hash {
                    Some(hash) => sp
                        .prepare_cached("DELETE FROM hashed_secrets WHERE kind = ?1 AND hash = ?2")?
                        .execute(params![kind.spelling(), hash])?,
                    None => sp
                        .prepare_cached("DELETE FROM hashed_secrets WHERE kind = ?1")?
                        .execute(params![kind.spelling()])?,
                };
                Ok(Done::Text(removed.to_string()))
            })
            .await?;
        Ok(match done {
            Done::Text(n) => n.parse().unwrap_or(0),
            _ => 0,
        })
    }
}

/// A taken row, through the writer's `Done::Text` (its one way to hand back data).
fn encode(row: &HashedSecret) -> String {
    serde_json::json!([row.hash, row.body, row.created_ms, row.expires_ms]).to_string()
}

fn decode(json: &str, kind: SecretKind) -> Option<HashedSecret> {
    let (hash, body, created_ms, expires_ms): (String, String, i64, Option<i64>) =
        serde_json::from_str(json).ok()?;
    Some(HashedSecret {
        hash,
        kind,
        body,
        created_ms,
        expires_ms,
    })
}
