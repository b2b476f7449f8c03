//! Signing a person in with OpenID Connect (issue 41): the start (a pending sign-in kept
//! under the browser's flow cookie) and the callback (the provider's answer checked, then who
//! the identity is: a person bound to it, a person invited by its verified email, or a new
//! viewer from an allowed domain). Anyone else is refused, nothing is created, and the
//! refusal is audited.

use serde_json::json;
use subtle::ConstantTimeEq;

use super::{Core, Error};
use crate::protocol::{Person, Role, Timestamp};
use crate::server::audit::AuditDraft;
use crate::server::logins::{self, BrowserLogin};
use crate::server::oidc::{Identity, Pending, Provider};
use crate::server::principal::PERSON_ACTOR_PREFIX;
use crate::server::secret::random_token;
use crate::server::store::secrets::{HashedSecret, SecretKind, hash_secret};

/// How long a sign-in may take at the provider.
pub const SIGN_IN_MS: i64 = SIGN_IN_SECS * 1000;
/// The same, in seconds (the flow cookie's `Max-Age`).
pub const SIGN_IN_SECS: i64 = 10 * 60;
/// The audit action of a sign-in refused (subject: the email, or the provider's `sub`).
pub const SIGN_IN_REFUSED: &str = "sign_in_refused";
/// The audit action of a person from an allowed domain signing in the first time.
pub const PERSON_JOINED: &str = "person_joined";

/// A sign-in begun: where to send the browser, and its flow cookie's value.
pub struct SignInStarted {
    pub url: String,
    pub flow: String,
}

/// A person signed in: their browser login's cookie and their email.
pub struct SignedIn {
    pub cookie: String,
    pub email: String,
}

impl Core {
    /// The provider `[auth.oidc]` names, its callback under `base` (the public URL, else
    /// where this request came to); `None` when no provider is configured.
    pub fn oidc_provider(&self, base: &str) -> Result<Option<Provider>, Error> {
        let live = self.config();
        let Some(config) = live.config.auth.oidc.as_ref() else {
            return Ok(None);
        };
        let redirect = format!("{}/auth/oidc/callback", base.trim_end_matches('/'));
        Provider::new(config, redirect)
            .map(Some)
            .map_err(|e| Error::Internal(e.to_string()))
    }

    /// Begins a sign-in at `provider`: its state, nonce and PKCE verifier kept (by the hash of
    /// a fresh flow cookie) for `SIGN_IN_MS`.
    pub async fn start_sign_in(&self, provider: &Provider) -> Result<SignInStarted, Error> {
        let (url, pending) = provider.start().await.map_err(|e| {
            tracing::warn!(error = %e, "could not start an OpenID Connect sign-in");
            Error::Internal(e.to_string())
        })?;
        let flow = random_token(32);
        let now = Timestamp::now_ms();
        let body = serde_json::to_string(&pending).map_err(|e| Error::Internal(e.to_string()))?;
        self.repos
            .secrets
            .keep_secret(&HashedSecret {
                hash: hash_secret(&flow),
                kind: SecretKind::OidcSignIn,
                body,
                created_ms: now,
                expires_ms: Some(now.saturating_add(SIGN_IN_MS)),
            })
            .await?;
        Ok(SignInStarted { url, flow })
    }

    /// Finishes a sign-in: the pending one under `flow` (spent), its `state` matched, the
    /// code exchanged and the ID token checked, then the person found (`person_for`) and
    /// logged in on this browser.
    pub async fn finish_sign_in(
        &self,
        provider: &Provider,
        flow: Option<&str>,
        state: &str,
        code: &str,
        device: &str,
    ) -> Result<SignedIn, Error> {
        let pending = self.take_pending(flow).await?;
        if !bool::from(pending.state.as_bytes().ct_eq(state.as_bytes())) {
            self.refused_as("oidc".into(), "oidc", "state", "the state did not match")
                .await?;
            return Err(Error::Forbidden(
                "this sign-in's state did not match the one this browser started: start again from the login page".into(),
            ));
        }
        let identity = provider.finish(code, &pending).await.map_err(|e| {
            tracing::warn!(error = %e, "an OpenID Connect sign-in failed");
            Error::Forbidden(format!("the sign-in could not be completed: {e}"))
        })?;
        let person = self.person_for(&identity).await?;
        self.log_person_in(&person, device).await
    }

    /// The pending sign-in under the flow cookie, spent; none (expired, another browser, a
    /// second use) is refused.
    async fn take_pending(&self, flow: Option<&str>) -> Result<Pending, Error> {
        let expired = || {
            Error::Unauthorized(
                "this sign-in expired or was started in another browser: start again from the login page".into(),
            )
        };
        let flow = flow.ok_or_else(expired)?;
        let row = self
            .repos
            .secrets
            .take_secret(SecretKind::OidcSignIn, &hash_secret(flow))
            .await?
            .ok_or_else(expired)?;
        serde_json::from_str(&row.body).map_err(|_| expired())
    }

    /// Who a checked identity is: the person bound to it; else, by a verified email, the
    /// person invited with it (bound now) or a new viewer of an allowed domain. Anyone else
    /// is refused (audited, nothing created).
    async fn person_for(&self, identity: &Identity) -> Result<Person, Error> {
        let people = self.repos.people.as_ref();
        if let Some(person) = people
            .person_by_subject(&identity.issuer, &identity.subject)
            .await?
        {
            return Ok(person);
        }
        let email = match (&identity.email, identity.email_verified) {
            (Some(email), true) => email.clone(),
            _ => {
                // Nobody vouched for this address (the account typed it): the audit names
                // no person by it, and keeps no more of it than an address holds.
                let claimed: String = identity
                    .email
                    .as_deref()
                    .unwrap_or(&identity.subject)
                    .chars()
                    .take(254)
                    .collect();
                self.refused_as("oidc".into(), &claimed, "unverified", "no verified email")
                    .await?;
                return Err(Error::Forbidden(
                    "your provider did not vouch for your email address (it is not verified), so nobody can tell whether you were invited".into(),
                ));
            }
        };
        // The provider vouches for an address, not for its spelling: one an invitation would
        // refuse (spaces, control characters, no domain) names nobody. Written into an actor
        // as is, `a@x via token:t@y` would read back as `a@x`'s token.
        if super::people::normalized_email(&email).ok().as_deref() != Some(email.as_str()) {
            let claimed: String = email
                .chars()
                .filter(|c| !c.is_control())
                .take(254)
                .collect();
            self.refused_as(
                "oidc".into(),
                &claimed,
                "not_an_address",
                "not an email address",
            )
            .await?;
            return Err(Error::Forbidden(
                "your provider's email address is not plainly one (name@example.com, no spaces), so nobody can tell whether you were invited".into(),
            ));
        }
        if let Some(person) = people.person_by_email(&email).await? {
            return self.bind(person, identity).await;
        }
        if self.domain_allowed(&email) {
            return self.join(&email, identity).await;
        }
        self.refused(&email, "not_invited", "not invited").await?;
        Err(Error::Forbidden(format!(
            "{email} was not invited: ask an admin to invite you"
        )))
    }

    /// Binds an invited person to the identity at their first sign-in; one already bound to
    /// another identity is refused.
    async fn bind(&self, person: Person, identity: &Identity) -> Result<Person, Error> {
        let bound = self
            .repos
            .people
            .bind_person(
                &person.id,
                &identity.issuer,
                &identity.subject,
                identity.name.as_deref(),
            )
            .await?;
        if !bound {
            self.refused(&person.email, "bound_elsewhere", "already bound")
                .await?;
            return Err(Error::Forbidden(format!(
                "{} already signs in with another account: ask an admin",
                person.email
            )));
        }
        self.person(&person.id).await
    }

    fn domain_allowed(&self, email: &str) -> bool {
        let live = self.config();
        let domain = email.rsplit_once('@').map_or("", |(_, d)| d);
        live.config
            .auth
            .oidc
            .as_ref()
            .is_some_and(|o| o.allowed_domains.iter().any(|d| d == domain))
    }

    /// A person of an allowed domain, the first time: created a viewer, bound at once.
    async fn join(&self, email: &str, identity: &Identity) -> Result<Person, Error> {
        let person = Person {
            id: uuid::Uuid::new_v4().to_string(),
            email: email.to_owned(),
            name: identity.name.clone(),
            roles: vec![Role::Viewer],
            groups: Vec::new(),
            issuer: Some(identity.issuer.clone()),
            subject: Some(identity.subject.clone()),
            created_at: Timestamp::now(),
        };
        let audit = AuditDraft {
            actor: format!("{PERSON_ACTOR_PREFIX}{email}"),
            action: PERSON_JOINED,
            subject: format!("person:{}", person.id),
            detail: json!({ "email": email, "roles": person.roles, "with": "allowed_domain" }),
        };
        self.add_person(&person, audit).await?;
        Ok(person)
    }

    /// A browser login for `person` (found again at each request), audited.
    async fn log_person_in(&self, person: &Person, device: &str) -> Result<SignedIn, Error> {
        let login = BrowserLogin {
            token_hash: None,
            admin_hash: None,
            person_id: Some(person.id.clone()),
            device: device.to_owned(),
        };
        let cookie = logins::mint_browser_login(self.repos.secrets.as_ref(), &login).await?;
        let draft = AuditDraft {
            actor: format!("{PERSON_ACTOR_PREFIX}{}", person.email),
            action: super::logins::BROWSER_LOGGED_IN,
            subject: logins::login_id(&hash_secret(&cookie)),
            detail: json!({ "with": "oidc", "device": device }),
        };
        self.repos.audit.append_audit(vec![draft]).await?;
        Ok(SignedIn {
            cookie,
            email: person.email.clone(),
        })
    }

    /// Audits a refused sign-in: who (an email, or the provider's `sub`) and why.
    async fn refused(&self, who: &str, reason: &str, words: &str) -> Result<(), Error> {
        self.refused_as(format!("{PERSON_ACTOR_PREFIX}{who}"), who, reason, words)
            .await
    }

    /// Audits a refused sign-in under `actor` (`oidc` when nobody is known yet).
    async fn refused_as(
        &self,
        actor: String,
        who: &str,
        reason: &str,
        words: &str,
    ) -> Result<(), Error> {
        let draft = AuditDraft {
            actor,
            action: SIGN_IN_REFUSED,
            subject: who.to_owned(),
            detail: json!({ "reason": reason, "why": words }),
        };
        Ok(self.repos.audit.append_audit(vec![draft]).await?)
    }
}
