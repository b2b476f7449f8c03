//! The people repository (issue 41): who may sign in with OpenID Connect, their roles and
//! groups, and the provider identity (issuer, `sub`) each is bound to from their first
//! sign-in. A narrow trait beside `Store` (which every backend also implements).

use async_trait::async_trait;

use super::StoreError;
use crate::protocol::{Person, Role, Timestamp};
use crate::server::audit::AuditDraft;

/// One person, as stored: the wire's `Person` (roles and groups are JSON arrays in a column).
pub type PersonRow = Person;

#[async_trait]
pub trait PeopleRepo: Send + Sync {
    /// Every person, oldest first.
    async fn people(&self) -> Result<Vec<PersonRow>, StoreError>;
    /// One person, by id.
    async fn person(&self, id: &str) -> Result<Option<PersonRow>, StoreError>;
    /// The person invited with `email` (already lowercased).
    async fn person_by_email(&self, email: &str) -> Result<Option<PersonRow>, StoreError>;
    /// The person bound to `subject` at `issuer`.
    async fn person_by_subject(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Option<PersonRow>, StoreError>;
    /// Adds one, with its audit entry (`audit`, in the same transaction). `Taken` when the
    /// email (or the issuer and subject) is another person's.
    async fn add_person(&self, row: &PersonRow, audit: AuditDraft) -> Result<(), StoreError>;
    /// Replaces a person's roles and groups, with its audit entry; the person as it is now,
    /// `None` when there is none.
    async fn change_person(
        &self,
        id: &str,
        roles: &[Role],
        groups: &[String],
        audit: AuditDraft,
    ) -> Result<Option<PersonRow>, StoreError>;
    /// Binds a person not yet bound to `subject` at `issuer`, and keeps their name. False
    /// when the person is gone or already bound (to anyone).
    async fn bind_person(
        &self,
        id: &str,
        issuer: &str,
        subject: &str,
        name: Option<&str>,
    ) -> Result<bool, StoreError>;
    /// Removes one, with its audit entry, and revokes the tokens they made (each audited
    /// `token_revoked` under the same actor, their claimed names freed), in one transaction;
    /// the person removed, `None` when there was none.
    async fn remove_person(
        &self,
        id: &str,
        audit: AuditDraft,
    ) -> Result<Option<PersonRow>, StoreError>;
}

/// A person's roles and groups now, by email (none for one no longer there): what a routed
/// card's approvers are matched against (issue 41).
pub async fn roles_and_groups(
    people: &dyn PeopleRepo,
    email: &str,
) -> Result<(Vec<Role>, Vec<String>), StoreError> {
    Ok(people
        .person_by_email(&crate::protocol::email_key(email))
        .await?
        .map(|p| (p.roles, p.groups))
        .unwrap_or_default())
}

/// Roles as their column holds them: a JSON array of their spellings.
pub fn roles_column(roles: &[Role]) -> String {
    serde_json::to_string(roles).unwrap_or_else(|_| "[]".into())
}

/// Groups as their column holds them: a JSON array.
pub fn groups_column(groups: &[String]) -> String {
    serde_json::to_string(groups).unwrap_or_else(|_| "[]".into())
}

/// A roles column read back: a role this build does not know is left out (it grants
/// nothing), and said in the log.
pub fn roles_of(column: &str) -> Vec<Role> {
    let names: Vec<String> = serde_json::from_str(column).unwrap_or_default();
    names
        .iter()
        .filter_map(|name| {
            let role = Role::parse(name);
            if role.is_none() {
                tracing::warn!(role = %name, "a stored person has a role this build does not know; ignoring it");
            }
            role
        })
        .collect()
}

/// A groups column read back.
pub fn groups_of(column: &str) -> Vec<String> {
    serde_json::from_str(column).unwrap_or_default()
}

/// The columns, in the order both backends read them.
pub const COLUMNS: &str = "id, email, name, roles, groups, issuer, subject, created_at";

/// A row from its columns (in `COLUMNS`' order).
#[allow(clippy::too_many_arguments)]
pub fn person_from(
    id: String,
    email: String,
    name: Option<String>,
    roles: &str,
    groups: &str,
    issuer: Option<String>,
    subject: Option<String>,
    created_at: Timestamp,
) -> PersonRow {
    Person {
        id,
        email,
        name,
        roles: roles_of(roles),
        groups: groups_of(groups),
        issuer,
        subject,
        created_at,
    }
}
