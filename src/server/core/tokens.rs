//! Named tokens: created with a scope (the secret shown once, only its hash kept), listed,
//! revoked at once, and turned back into a `Principal` when a request presents one. A token
//! belongs to its maker (issue 41): a person, or the admin; a person's tokens never do more
//! than the person's roles give now (`logins::who`) and are revoked with the person
//! (`PeopleRepo::remove_person`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::RngCore;

use super::{Core, Error};
use crate::protocol::{CreatedToken, Person, TOKEN_OWNER_ADMIN, Timestamp, TokenInfo};
use crate::server::principal::{CLI_TOKEN_NAME, Principal, STARTUP_TOKEN_NAME, Scope};
use crate::server::store::{StoreError, TokenRow};

/// What every secret starts with, so a leaked one is recognisable (and greppable).
const SECRET_PREFIX: &str = "cst_";
const MAX_NAME_CHARS: usize = 64;
/// `last_used_at` is written at most this often per token (a token polled every second
/// must not cost a write every second).
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// When each token's use was last recorded.
#[derive(Default)]
pub struct TokenUse {
    recorded: Mutex<HashMap<String, Instant>>,
}

impl TokenUse {
    /// Whether this use should be written (and notes that it will be).
    fn due(&self, name: &str) -> bool {
        let mut recorded = self
            .recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        match recorded.get(name) {
            Some(last) if now.duration_since(*last) < TOUCH_EVERY => false,
            _ => {
                recorded.insert(name.to_owned(), now);
                true
            }
        }
    }

    fn forget(&self, name: &str) {
        self.recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(name);
    }
}

/// The hash a token's secret is stored and looked up by (the one every kept secret has).
pub use crate::server::store::secrets::hash_secret as secret_hash;

fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", hex::encode(bytes))
}

fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::InvalidName(format!(
            "a token name has 1 to {MAX_NAME_CHARS} characters"
        )));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(Error::InvalidName(
            "a token name uses letters, digits, `-`, `_` and `.` only".into(),
        ));
    }
    // In any case: `Admin` beside `admin` reads as the startup token in every list.
    if name.eq_ignore_ascii_case(STARTUP_TOKEN_NAME) || name.eq_ignore_ascii_case(CLI_TOKEN_NAME) {
        return Err(Error::NameTaken(format!(
            "`{name}` is reserved (the admin token's and the local CLI's names)"
        )));
    }
    Ok(())
}

/// A token as listed, its maker named by email (`admin` for the admin's; a maker no longer
/// there, whose token no longer works, by their id).
fn info(row: TokenRow, people: &[Person]) -> TokenInfo {
    let owner = match &row.owner {
        None => TOKEN_OWNER_ADMIN.to_owned(),
        Some(id) => people
            .iter()
            .find(|p| &p.id == id)
            .map_or_else(|| format!("removed person {id}"), |p| p.email.clone()),
    };
    TokenInfo {
        name: row.name,
        scope: row.scope,
        created_at: row.created_at,
        last_used_at: row.last_used_at,
        agents: Vec::new(),
        owner,
    }
}

impl Core {
    /// Creates a token; the answer is the only place its secret ever appears.
    pub async fn create_token(
        &self,
        name: Option<&str>,
        scope: Option<&str>,
        who: &Principal,
    ) -> Result<CreatedToken, Error> {
        let owner = self.token_maker(who).await?;
        let name = name.map(str::trim).unwrap_or("");
        check_name(name)?;
        let scope = scope.and_then(Scope::parse).ok_or_else(|| {
            Error::InvalidScope("scope must be one of admin, approve, view, gates".into())
        })?;
        let secret = new_secret();
        let row = TokenRow {
            name: name.to_owned(),
            scope: scope.into(),
            secret_hash: secret_hash(&secret),
            created_at: Timestamp::now(),
            last_used_at: None,
            owner,
        };
        match self.repos.tokens.create_token(&row, &who.actor()).await {
            Ok(()) => {}
            Err(StoreError::Taken(name)) => {
                return Err(Error::NameTaken(format!(
                    "a token named `{name}` exists; revoke it first or pick another name"
                )));
            }
            Err(other) => return Err(other.into()),
        }
        Ok(CreatedToken {
            name: row.name,
            scope: row.scope,
            token: secret,
            created_at: row.created_at,
            os_user_warning: (scope == Scope::Gates)
                .then(|| self.os_boundary().token_warning())
                .flatten(),
            owner: who.person_email().unwrap_or(TOKEN_OWNER_ADMIN).to_owned(),
        })
    }

    /// Whose a token `who` makes is: the person behind them (signed in, or through a token
    /// of theirs), by id, or `None` for the admin. A person no longer there makes none.
    async fn token_maker(&self, who: &Principal) -> Result<Option<String>, Error> {
        let Some(email) = who.person_email() else {
            return Ok(None);
        };
        match self.repos.people.person_by_email(email).await? {
            Some(person) => Ok(Some(person.id)),
            None => Err(Error::Forbidden(format!(
                "{email} is no longer one of the people here"
            ))),
        }
    }

    /// Every token, with its maker and the outside agents' names each one claimed (so the
    /// person sees which token a `source_claimed` refusal names, and what revoking it frees).
    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>, Error> {
        let claims = self.repos.outside.claimed_sources().await?;
        let people = self.repos.people.people().await?;
        Ok(self
            .repos
            .tokens
            .list_tokens()
            .await?
            .into_iter()
            .map(|row| {
                let actor = crate::protocol::Actor::Token(&row.name).to_string();
                let mut token = info(row, &people);
                token.agents = claims
                    .iter()
                    .filter(|(_, owner)| owner == &actor)
                    .map(|(source, _)| source.clone())
                    .collect();
                token
            })
            .collect())
    }

    /// Revokes a token: the next request that presents it is refused.
    pub async fn revoke_token(&self, name: &str, who: &Principal) -> Result<(), Error> {
        if self.repos.tokens.delete_token(name, &who.actor()).await? {
            self.token_use.forget(name);
            Ok(())
        } else {
            Err(Error::UnknownToken(name.chars().take(64).collect()))
        }
    }

    /// Records a named token's use (at most once a minute per token, off the request path).
    pub(super) fn note_token_use(&self, name: &str) {
        if !self.token_use.due(name) {
            return;
        }
        let store = Arc::clone(&self.repos.tokens);
        let name = name.to_owned();
        tokio::spawn(async move {
            if let Err(err) = store.touch_token(&name, &Timestamp::now()).await {
                tracing::warn!(token = %name, error = %err, "could not record a token's use");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_and_the_startup_name_is_reserved() {
        assert!(check_name("ci-bot_1.x").is_ok());
        assert!(matches!(check_name(""), Err(Error::InvalidName(_))));
        assert!(matches!(check_name("a b"), Err(Error::InvalidName(_))));
        assert!(matches!(
            check_name(&"x".repeat(65)),
            Err(Error::InvalidName(_))
        ));
        assert!(matches!(check_name("admin"), Err(Error::NameTaken(_))));
        assert!(matches!(check_name("cli"), Err(Error::NameTaken(_))));
        for look_alike in ["Admin", "ADMIN", "Cli"] {
            assert!(
                matches!(check_name(look_alike), Err(Error::NameTaken(_))),
                "{look_alike}"
            );
        }
    }

    #[test]
    fn secrets_are_long_random_and_hashed() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(SECRET_PREFIX) && a.len() == SECRET_PREFIX.len() + 48);
        assert_eq!(secret_hash(&a).len(), 64);
        assert_ne!(secret_hash(&a), secret_hash(&b));
    }

    #[test]
    fn a_use_is_written_once_a_minute_at_most() {
        let seen = TokenUse::default();
        assert!(seen.due("t"));
        assert!(!seen.due("t"));
        assert!(seen.due("u"));
        seen.forget("t");
        assert!(seen.due("t"));
    }
}
