//! People on PostgreSQL.

use async_trait::async_trait;

use super::PgStore;
use super::write::queue_audit;
use crate::protocol::Role;
use crate::server::audit::AuditDraft;
use crate::server::store::StoreError;
use crate::server::store::people::{
    COLUMNS, PeopleRepo, PersonRow, groups_column, person_from, roles_column,
};

type Tuple = (
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
);

fn person((id, email, name, roles, groups, issuer, subject, created_at): Tuple) -> PersonRow {
    person_from(
        id,
        email,
        name,
        &roles,
        &groups,
        issuer,
        subject,
        created_at.into(),
    )
}

impl PgStore {
    async fn person_where(
        &self,
        condition: &str,
        values: &[&str],
    ) -> Result<Option<PersonRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM people WHERE {condition}");
        let mut query = sqlx::query_as::<_, Tuple>(&sql);
        for value in values {
            query = query.bind(*value);
        }
        Ok(query.fetch_optional(&self.pool).await?.map(person))
    }
}

#[async_trait]
impl PeopleRepo for PgStore {
    async fn people(&self) -> Result<Vec<PersonRow>, StoreError> {
        let rows: Vec<Tuple> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM people ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(person).collect())
    }

    async fn person(&self, id: &str) -> Result<Option<PersonRow>, StoreError> {
        self.person_where("id = $1", &[id]).await
    }

    async fn person_by_email(&self, email: &str) -> Result<Option<PersonRow>, StoreError> {
        self.person_where("email = $1", &[email]).await
    }

    async fn person_by_subject(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Option<PersonRow>, StoreError> {
        self.person_where("issuer = $1 AND subject = $2", &[issuer, subject])
            .await
    }

    async fn add_person(&self, row: &PersonRow, audit: AuditDraft) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(&format!(
            "INSERT INTO people ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING"
        ))
        .bind(&row.id)
        .bind(&row.email)
        .bind(&row.name)
        .bind(roles_column(&row.roles))
        .bind(groups_column(&row.groups))
        .bind(&row.issuer)
        .bind(&row.subject)
        .bind(row.created_at.as_str())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 0 {
            return Err(StoreError::Taken(row.email.clone()));
        }
        queue_audit(&mut tx, vec![audit]).await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(())
    }

    async fn change_person(
        &self,
        id: &str,
        roles: &[Role],
        groups: &[String],
        audit: AuditDraft,
    ) -> Result<Option<PersonRow>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row: Option<Tuple> = sqlx::query_as(&format!(
            "UPDATE people SET roles = $1, groups = $2 WHERE id = $3 RETURNING {COLUMNS}"
        ))
        .bind(roles_column(roles))
        .bind(groups_column(groups))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let actor = audit.actor.clone();
        queue_audit(&mut tx, vec![audit]).await?;
        // Their tokens go with them, in the same transaction.
        super::write::revoke_tokens_of_in(&mut tx, id, &actor).await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(Some(person(row)))
    }

    async fn bind_person(
        &self,
        id: &str,
        issuer: &str,
        subject: &str,
        name: Option<&str>,
    ) -> Result<bool, StoreError> {
        let bound = sqlx::query(
            "UPDATE people SET issuer = $1, subject = $2, name = $3 WHERE id = $4 AND subject IS NULL",
        )
        .bind(issuer)
        .bind(subject)
        .bind(name)
        .bind(id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(bound == 1)
    }

    async fn remove_person(
        &self,
        id: &str,
        audit: AuditDraft,
    ) -> Result<Option<PersonRow>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row: Option<Tuple> = sqlx::query_as(&format!(
            "DELETE FROM people WHERE id = $1 RETURNING {COLUMNS}"
        ))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let actor = audit.actor.clone();
        queue_audit(&mut tx, vec![audit]).await?;
        // Their tokens go with them, in the same transaction.
        super::write::revoke_tokens_of_in(&mut tx, id, &actor).await?;
        tx.commit().await?;
        self.sealer.kick();
        Ok(Some(person(row)))
    }
}
