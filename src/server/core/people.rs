//! People (issue 41): inviting, listing, changing and removing those who sign in with OpenID
//! Connect. Removing a person, or every role that signs in, ends their browser logins and
//! the push subscriptions those logins made, at once.

use serde_json::json;

use super::{Core, Error};
use crate::protocol::{NewPerson, Person, PersonChange, Role, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::logins::{self, BrowserLogin, Presented};
use crate::server::principal::Principal;
use crate::server::store::secrets::SecretKind;

/// The audit actions of the people routes (subject: `person:<id>`).
pub const PERSON_INVITED: &str = "person_invited";
pub const PERSON_CHANGED: &str = "person_changed";
pub const PERSON_REMOVED: &str = "person_removed";

/// The most groups a person may be in, and the longest group name.
const MAX_GROUPS: usize = 64;
const MAX_GROUP_CHARS: usize = 64;

pub use crate::protocol::email_key;

/// `email` lowercased (`email_key`), when it is plainly an address (`local@domain.tld`, no
/// spaces).
pub fn normalized_email(email: &str) -> Result<String, Error> {
    let email = email_key(email.trim());
    let plain = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
        })
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if plain {
        Ok(email)
    } else {
        Err(Error::InvalidRequest(
            "`email` must be an email address (name@example.com)".into(),
        ))
    }
}

/// Roles without repeats, and at least one; groups plain names.
fn checked(roles: &[Role], groups: &[String]) -> Result<(Vec<Role>, Vec<String>), Error> {
    if roles.is_empty() {
        return Err(Error::InvalidRequest(
            "`roles` must name at least one of admin, approver, viewer".into(),
        ));
    }
    let mut roles = roles.to_vec();
    roles.sort();
    roles.dedup();
    let plain = |g: &String| {
        !g.is_empty()
            && g.chars().count() <= MAX_GROUP_CHARS
            && g.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if groups.len() > MAX_GROUPS || !groups.iter().all(plain) {
        return Err(Error::InvalidRequest(format!(
            "`groups` must list at most {MAX_GROUPS} names of letters, digits, `-`, `_` or `.`"
        )));
    }
    let mut groups = groups.to_vec();
    groups.sort();
    groups.dedup();
    Ok((roles, groups))
}

fn draft(who: &Principal, action: &'static str, person: &Person) -> AuditDraft {
    AuditDraft {
        actor: who.actor(),
        action,
        subject: format!("person:{}", person.id),
        detail: json!({ "email": person.email, "roles": person.roles, "groups": person.groups }),
    }
}

impl Core {
    /// Invites a person: `409 name_taken` when their email is already someone's.
    pub async fn invite_person(&self, body: &NewPerson, who: &Principal) -> Result<Person, Error> {
        let email = normalized_email(&body.email)?;
        let (roles, groups) = checked(&body.roles, &body.groups)?;
        let person = Person {
            id: uuid::Uuid::new_v4().to_string(),
            email,
            name: None,
            roles,
            groups,
            issuer: None,
            subject: None,
            created_at: Timestamp::now(),
        };
        self.add_person(&person, draft(who, PERSON_INVITED, &person))
            .await?;
        Ok(person)
    }

    /// Stores a new person with its audit entry; their email taken is `409 name_taken`.
    pub(super) async fn add_person(&self, person: &Person, audit: AuditDraft) -> Result<(), Error> {
        match self.repos.people.add_person(person, audit).await {
            Err(crate::server::store::StoreError::Taken(_)) => Err(Error::NameTaken(format!(
                "{} is already invited",
                person.email
            ))),
            other => Ok(other?),
        }
    }

    pub async fn list_people(&self) -> Result<Vec<Person>, Error> {
        Ok(self.repos.people.people().await?)
    }

    pub async fn person(&self, id: &str) -> Result<Person, Error> {
        self.repos
            .people
            .person(id)
            .await?
            .ok_or_else(|| unknown(id))
    }

    /// Replaces a person's roles and groups; taking away every role that signs in ends their
    /// browser logins at once.
    pub async fn change_person(
        &self,
        id: &str,
        body: &PersonChange,
        who: &Principal,
    ) -> Result<Person, Error> {
        let (roles, groups) = checked(&body.roles, &body.groups)?;
        let mut audit = draft(who, PERSON_CHANGED, &self.person(id).await?);
        audit.detail = json!({ "roles": roles, "groups": groups });
        let person = self
            .repos
            .people
            .change_person(id, &roles, &groups, audit)
            .await?
            .ok_or_else(|| unknown(id))?;
        match logins::scope_of(&person.roles) {
            None => {
                self.end_person_logins(&person.id, who, Logins::Forget)
                    .await?
            }
            // A viewer reads on with their logins, but answers nothing: the pushes they
            // subscribed to (which exist to answer) end.
            Some(scope) if !scope.decides() => {
                self.end_person_logins(&person.id, who, Logins::Keep)
                    .await?;
            }
            Some(_) => {}
        }
        Ok(person)
    }

    /// Removes a person, ending their browser logins and those logins' push subscriptions; the
    /// tokens they made are revoked with the row, in the same transaction
    /// (`PeopleRepo::remove_person`).
    pub async fn remove_person(&self, id: &str, who: &Principal) -> Result<(), Error> {
        let person = self.person(id).await?;
        self.repos
            .people
            .remove_person(id, draft(who, PERSON_REMOVED, &person))
            .await?
            .ok_or_else(|| unknown(id))?;
        self.end_person_logins(id, who, Logins::Forget).await
    }

    /// Ends the push subscriptions every browser login of the person `id` made, and forgets
    /// those logins too when told to. (Each request finds the person again, so their logins
    /// already stopped working or lost what their roles no longer give; this leaves nothing
    /// behind.)
    async fn end_person_logins(
        &self,
        id: &str,
        who: &Principal,
        logins: Logins,
    ) -> Result<(), Error> {
        let kept = self.repos.secrets.as_ref();
        let mut ended = Vec::new();
        for row in kept.secrets_of(SecretKind::BrowserLogin).await? {
            let login: Option<BrowserLogin> = serde_json::from_str(&row.body).ok();
            if login.is_some_and(|l| l.person_id.as_deref() == Some(id)) {
                if logins == Logins::Forget {
                    kept.forget_secrets(SecretKind::BrowserLogin, Some(&row.hash))
                        .await?;
                }
                ended.push(Presented::Cookie(row.hash).record());
            }
        }
        for sub in self.repos.push.push_subscriptions().await? {
            if ended.contains(&sub.credential_check) {
                self.repos
                    .push
                    .delete_push_subscription(&sub.id, &who.actor())
                    .await?;
            }
        }
        Ok(())
    }
}

/// Whether ending a person's push subscriptions ends their browser logins too.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Logins {
    Forget,
    Keep,
}

fn unknown(id: &str) -> Error {
    Error::UnknownPerson(id.chars().take(64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_email_is_lowercased_and_plainly_one() {
        assert_eq!(
            normalized_email(" Alice@Example.TEST ").ok().as_deref(),
            Some("alice@example.test")
        );
        // Only ASCII folds: a look-alike is another address, never the invited one.
        assert_ne!(
            normalized_email("\u{212A}ate@example.test").ok().as_deref(),
            Some("kate@example.test")
        );
        for bad in [
            "",
            "alice",
            "@example.test",
            "alice@",
            "alice@test",
            "a b@example.test",
            "a@b@example.test",
            "alice@.test",
        ] {
            assert!(normalized_email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn roles_are_needed_and_groups_are_names() {
        assert!(checked(&[], &[]).is_err());
        let (roles, groups) = checked(
            &[Role::Viewer, Role::Admin, Role::Viewer],
            &["ops".into(), "dev".into(), "ops".into()],
        )
        .unwrap();
        assert_eq!(roles, [Role::Admin, Role::Viewer]);
        assert_eq!(groups, ["dev", "ops"]);
        assert!(checked(&[Role::Admin], &["a b".into()]).is_err());
        assert!(checked(&[Role::Admin], &[String::new()]).is_err());
    }
}
