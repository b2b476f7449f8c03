//! Passkeys: reads on the reader pool, writes through the writer thread.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use crate::protocol::Timestamp;
use crate::server::store::StoreError;
use crate::server::store::passkeys::{PasskeyRow, PasskeyRows, audit_draft, reset_draft};

const COLUMNS: &str = "id, name, rp_id, origin, credential, created_at, last_used_at";

fn passkey(row: &Row<'_>) -> rusqlite::Result<PasskeyRow> {
    Ok(PasskeyRow {
        id: row.get(0)?,
        name: row.get(1)?,
        rp_id: row.get(2)?,
        origin: row.get(3)?,
        credential: row.get(4)?,
        created_at: row.get(5)?,
        last_used_at: row.get(6)?,
    })
}

#[async_trait]
impl PasskeyRows for SqliteStore {
    async fn passkeys(&self) -> Result<Vec<PasskeyRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM passkeys ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([], passkey)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn add_passkey(&self, row: &PasskeyRow, actor: &str) -> Result<(), StoreError> {
        let (row, actor) = (row.clone(), actor.to_owned());
        self.writer
            .exec(move |sp| {
                let taken: Option<String> = sp
                    .prepare_cached("SELECT id FROM passkeys WHERE name = ?1")?
                    .query_row(params![row.name], |r| r.get(0))
                    .optional()?;
                if taken.is_some() {
                    return Err(StoreError::Taken(row.name.clone()));
                }
                sp.prepare_cached(&format!(
                    "INSERT INTO passkeys ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                ))?
                .execute(params![
                    row.id,
                    row.name,
                    row.rp_id,
                    row.origin,
                    row.credential,
                    row.created_at,
                    row.last_used_at
                ])?;
                super::write::chain_audit(
                    sp,
                    vec![audit_draft(
                        &actor,
                        "passkey_registered",
                        &row.id,
                        &row.name,
                    )],
                )?;
                Ok(Done::Unit)
            })
            .await
            .map(|_| ())
    }

    async fn touch_passkey(
        &self,
        id: &str,
        credential: &str,
        at: &Timestamp,
    ) -> Result<(), StoreError> {
        let (id, credential, at) = (id.to_owned(), credential.to_owned(), at.clone());
        self.writer
            .exec(move |sp| {
                sp.prepare_cached(
                    "UPDATE passkeys SET credential = ?1, last_used_at = ?2 WHERE id = ?3",
                )?
                .execute(params![credential, at, id])?;
                Ok(Done::Unit)
            })
            .await
            .map(|_| ())
    }

    async fn remove_passkey(&self, id: &str, actor: &str) -> Result<bool, StoreError> {
        let (id, actor) = (id.to_owned(), actor.to_owned());
        let done = self
            .writer
            .exec(move |sp| {
                let name: Option<String> = sp
                    .prepare_cached("DELETE FROM passkeys WHERE id = ?1 RETURNING name")?
                    .query_row(params![id], |r| r.get(0))
                    .optional()?;
                let Some(name) = name else {
                    return Ok(Done::Flag(false));
                };
                super::write::chain_audit(
                    sp,
                    vec![audit_draft(&actor, "passkey_removed", &id, &name)],
                )?;
                Ok(Done::Flag(true))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn reset_passkeys(&self, actor: &str) -> Result<u64, StoreError> {
        let actor = actor.to_owned();
        let done = self
            .writer
            .exec(move |sp| {
                let removed = sp.prepare_cached("DELETE FROM passkeys")?.execute([])?;
                super::write::chain_audit(
                    sp,
                    vec![reset_draft(&actor, u64::try_from(removed).unwrap_or(0))],
                )?;
                Ok(Done::Text(removed.to_string()))
            })
            .await?;
        Ok(match done {
            Done::Text(n) => n.parse().unwrap_or(0),
            _ => 0,
        })
    }
}
