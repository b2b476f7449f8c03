//! People: reads on the reader pool, writes through the writer thread.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::batch::Done;
use crate::protocol::Role;
use crate::server::audit::AuditDraft;
use crate::server::store::StoreError;
use crate::server::store::people::{
    COLUMNS, PeopleRepo, PersonRow, groups_column, person_from, roles_column,
};

fn person(row: &Row<'_>) -> rusqlite::Result<PersonRow> {
    let roles: String = row.get(3)?;
    let groups: String = row.get(4)?;
    Ok(person_from(
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        &roles,
        &groups,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
    ))
}

fn find(sp: &rusqlite::Connection, id: &str) -> Result<Option<PersonRow>, StoreError> {
    Ok(sp
        .prepare_cached(&format!("SELECT {COLUMNS} FROM people WHERE id = ?1"))?
        .query_row(params![id], person)
        .optional()?)
}

/// A person as the writer hands it back (`Done` carries text).
fn done_with(row: Option<PersonRow>) -> Result<Done, StoreError> {
    Ok(match row {
        Some(row) => Done::Text(
            serde_json::to_string(&row).map_err(|e| StoreError::Database(e.to_string()))?,
        ),
        None => Done::Unit,
    })
}

fn person_of(done: Done) -> Option<PersonRow> {
    match done {
        Done::Text(json) => serde_json::from_str(&json).ok(),
        _ => None,
    }
}

impl SqliteStore {
    async fn person_where(
        &self,
        condition: &'static str,
        values: Vec<String>,
    ) -> Result<Option<PersonRow>, StoreError> {
        self.read(move |c| {
            Ok(
                c.prepare_cached(&format!("SELECT {COLUMNS} FROM people WHERE {condition}"))?
                    .query_row(rusqlite::params_from_iter(values.iter()), person)
                    .optional()?,
            )
        })
        .await
    }
}

#[async_trait]
impl PeopleRepo for SqliteStore {
    async fn people(&self) -> Result<Vec<PersonRow>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM people ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([], person)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn person(&self, id: &str) -> Result<Option<PersonRow>, StoreError> {
        self.person_where("id = ?1", vec![id.to_owned()]).await
    }

    async fn person_by_email(&self, email: &str) -> Result<Option<PersonRow>, StoreError> {
        self.person_where("email = ?1", vec![email.to_owned()])
            .await
    }

    async fn person_by_subject(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Option<PersonRow>, StoreError> {
        self.person_where(
            "issuer = ?1 AND subject = ?2",
            vec![issuer.to_owned(), subject.to_owned()],
        )
        .await
    }

    async fn add_person(&self, row: &PersonRow, audit: AuditDraft) -> Result<(), StoreError> {
        let row = row.clone();
        self.writer
            .exec(move |sp| {
                let taken: Option<String> = sp
                    .prepare_cached("SELECT id FROM people WHERE email = ?1")?
                    .query_row(params![row.email], |r| r.get(0))
                    .optional()?;
                if taken.is_some() {
                    return Err(StoreError::Taken(row.email.clone()));
                }
                sp.prepare_cached(&format!(
                    "INSERT INTO people ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
                ))?
                .execute(params![
                    row.id,
                    row.email,
                    row.name,
                    roles_column(&row.roles),
                    groups_column(&row.groups),
                    row.issuer,
                    row.subject,
                    row.created_at
                ])?;
                super::write::chain_audit(sp, vec![audit.clone()])?;
                Ok(Done::Unit)
            })
            .await
            .map(|_| ())
    }

    async fn change_person(
        &self,
        id: &str,
        roles: &[Role],
        groups: &[String],
        audit: AuditDraft,
    ) -> Result<Option<PersonRow>, StoreError> {
        let (id, roles, groups) = (id.to_owned(), roles_column(roles), groups_column(groups));
        let done = self
            .writer
            .exec(move |sp| {
                let changed = sp
                    .prepare_cached("UPDATE people SET roles = ?1, groups = ?2 WHERE id = ?3")?
                    .execute(params![roles, groups, id])?;
                if changed == 0 {
                    return Ok(Done::Unit);
                }
                super::write::chain_audit(sp, vec![audit.clone()])?;
                done_with(find(sp, &id)?)
            })
            .await?;
        Ok(person_of(done))
    }

    async fn bind_person(
        &self,
        id: &str,
        issuer: &str,
        subject: &str,
        name: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (id, issuer, subject) = (id.to_owned(), issuer.to_owned(), subject.to_owned());
        let name = name.map(str::to_owned);
        let done = self
            .writer
            .exec(move |sp| {
                let bound = sp
                    .prepare_cached(
                        "UPDATE people SET issuer = ?1, subject = ?2, name = ?3 WHERE id = ?4 AND subject IS NULL",
                    )?
                    .execute(params![issuer, subject, name, id])?;
                Ok(Done::Flag(bound == 1))
            })
            .await?;
        Ok(matches!(done, Done::Flag(true)))
    }

    async fn remove_person(
        &self,
        id: &str,
        audit: AuditDraft,
    ) -> Result<Option<PersonRow>, StoreError> {
        let id = id.to_owned();
        let done = self
            .writer
            .exec(move |sp| {
                let Some(row) = find(sp, &id)? else {
                    return Ok(Done::Unit);
                };
                sp.prepare_cached("DELETE FROM people WHERE id = ?1")?
                    .execute(params![id])?;
                super::write::chain_audit(sp, vec![audit.clone()])?;
                // Their tokens go with them, in the same transaction.
                super::outside::revoke_tokens_of_in(sp, &id, &audit.actor)?;
                done_with(Some(row))
            })
            .await?;
        Ok(person_of(done))
    }
}
