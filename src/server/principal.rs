//! Who is asking, as the credential says: the auth middleware derives a `Principal` from how a
//! request authenticated and puts it in the request's extensions; core operations that record
//! an actor take it from there, never from a request body.
//!
//! **Invariant 31** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): an actor comes from the principal, never from a body field.

use crate::protocol::Actor;
pub use crate::protocol::{LoginRef, Scope};

/// The authenticated caller of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// A browser holding the session cookie of a login made with a login link or the admin
    /// token: which login, and its device.
    Browser { login: LoginRef },
    /// A token, by name (the startup token is named `admin`): as a bearer (`login` `None`), or
    /// through the browser login it made (a phone logged in with its `approve` token). `scope`
    /// is what it may do now: a person's token never more than their roles give today.
    Token {
        name: String,
        scope: Scope,
        login: Option<LoginRef>,
        /// The email of the person who made it (issue 41); `None`: the admin's.
        owner: Option<String>,
    },
    /// A person signed in with OpenID Connect (issue 41), through their browser login: their
    /// email, and the scope their roles give.
    Person {
        email: String,
        scope: Scope,
        login: LoginRef,
    },
    /// A tap on an ntfy notification's Approve or Deny (`[notify] format = "ntfy"`): whoever
    /// reads that topic. It only ever holds a one-time answer capability, never a session.
    Ntfy,
}

/// The name the startup token carries in actors (`token:admin`).
pub const STARTUP_TOKEN_NAME: &str = "admin";
/// How the audit names a signed-in person: `person:<email>`.
pub const PERSON_ACTOR_PREFIX: &str = "person:";
/// The name the local CLI's short-lived credential carries in actors (`token:cli`).
pub const CLI_TOKEN_NAME: &str = "cli";

/// What a request needs of its credential: each route and server function declares one
/// (`http::scopes::Routes`, `api::needs!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Nothing: the login page, the bundle, the installable app's files, a push answer (its
    /// one-time capability is the credential), the health check.
    Public,
    /// Any credential: an outside agent opens its gates, waits for them, cancels them.
    Gates,
    /// Read what the person sees: sessions, feeds, the inbox, rules, the audit, pages (every
    /// scope but `gates`: a viewer reaches these and nothing more).
    Read,
    /// Answer a gate, and keep a device that answers (its push subscription): `approve` and
    /// `admin`, never `view`.
    Decide,
    /// Everything else: messages, modes, sessions, configuration, tokens, passkeys.
    Admin,
}

impl Need {
    /// Whether a credential of `scope` has what this need asks.
    pub fn permits(self, scope: Scope) -> bool {
        matches!(
            (self, scope),
            (Need::Public | Need::Gates, _)
                | (_, Scope::Admin)
                | (Need::Read | Need::Decide, Scope::Approve)
                | (Need::Read, Scope::View)
        )
    }
}

impl Principal {
    /// The startup token (`--token`, `COUNTERSIGN_TOKEN` or the generated one).
    pub fn startup_token() -> Self {
        Principal::bearer(STARTUP_TOKEN_NAME, Scope::Admin)
    }

    /// An admin's token presented as a bearer (the API, the CLI, an agent's hook).
    pub fn bearer(name: impl Into<String>, scope: Scope) -> Self {
        Principal::Token {
            name: name.into(),
            scope,
            login: None,
            owner: None,
        }
    }

    /// This token as made by the person whose email is `owner` (their scope already capped).
    pub fn owned_by(self, owner: impl Into<String>) -> Self {
        match self {
            Principal::Token {
                name, scope, login, ..
            } => Principal::Token {
                name,
                scope,
                login,
                owner: Some(owner.into()),
            },
            other => other,
        }
    }

    /// This token's principal as the browser login it made: same name and scope, and the
    /// login said, so an answer names the device it came from.
    pub fn through(self, seen: LoginRef) -> Self {
        match self {
            Principal::Token {
                name, scope, owner, ..
            } => Principal::Token {
                name,
                scope,
                login: Some(seen),
                owner,
            },
            other => other,
        }
    }

    /// The browser login this caller came through, if any (never for a bearer or ntfy).
    pub fn login(&self) -> Option<&LoginRef> {
        match self {
            Principal::Browser { login } => Some(login),
            Principal::Token { login, .. } => login.as_ref(),
            Principal::Person { login, .. } => Some(login),
            Principal::Ntfy => None,
        }
    }

    /// A browser logged in as the person (a login link or the admin token), not a token.
    pub fn is_browser(&self) -> bool {
        matches!(self, Principal::Browser { .. })
    }

    /// How the audit and `approval_resolved.actor` name this caller: the person, and the
    /// credential's kind and name (`browser`, `token:<name>`, `person:<email>`, `person:<email>
    /// via token:<name>` for a person's token), spelled by `protocol::Actor`; which browser
    /// login, and its device, is `login()`, kept beside it (`Resolution::login`).
    pub fn actor(&self) -> String {
        match self {
            Principal::Browser { .. } => Actor::Browser,
            Principal::Token {
                name,
                owner: Some(email),
                ..
            } => Actor::Person {
                email,
                via: Some(name),
            },
            Principal::Token { name, .. } => Actor::Token(name),
            Principal::Person { email, .. } => Actor::Person { email, via: None },
            Principal::Ntfy => Actor::Ntfy,
        }
        .to_string()
    }

    /// Which credential this is, whoever is behind it (`token:<name>` for any named token,
    /// `person:<email>`, `browser`, `ntfy`): what a push subscription, an outside agent's
    /// claimed name and the gates it opened are bound to, so they end with that credential.
    pub fn credential(&self) -> String {
        match self {
            Principal::Token { name, .. } => Actor::Token(name).to_string(),
            other => other.actor(),
        }
    }

    /// The person behind this caller: the one signed in, or the maker of the token it holds.
    /// `None` for the admin's own credentials (the startup token, a login link's browser, the
    /// local CLI, the admin's tokens) and ntfy.
    pub fn person_email(&self) -> Option<&str> {
        match self {
            Principal::Person { email, .. } => Some(email),
            Principal::Token { owner, .. } => owner.as_deref(),
            _ => None,
        }
    }

    pub fn scope(&self) -> Scope {
        match self {
            Principal::Browser { .. } => Scope::Admin,
            Principal::Token { scope, .. } | Principal::Person { scope, .. } => *scope,
            Principal::Ntfy => Scope::Approve,
        }
    }
}

/// Actors of resolutions no person made.
pub mod actors {
    pub const TIMEOUT: &str = "timeout";
    pub const CANCEL: &str = "cancel";
    pub const MODE: &str = "mode";
    /// A card whose file changed before the answer: it is closed, and a fresh card for the
    /// same call shows the change (the answer got `409 stale_digest`).
    pub const STALE: &str = "stale";
    /// The reviewer, answering a card of a class the person trusted it with (issue 40).
    pub const REVIEWER: &str = "reviewer";

    pub fn rule(rule_id: &crate::protocol::RuleId) -> String {
        format!("rule:{rule_id}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_name_the_credential() {
        let seen = LoginRef {
            id: "l1".into(),
            device: "Chrome on Pixel 7".into(),
        };
        let browser = Principal::Browser {
            login: seen.clone(),
        };
        assert_eq!(browser.actor(), "browser");
        assert_eq!(browser.login(), Some(&seen));
        assert_eq!(Principal::startup_token().actor(), "token:admin");
        assert_eq!(Principal::startup_token().scope(), Scope::Admin);
        assert_eq!(Principal::startup_token().login(), None);
        assert_eq!(actors::rule(&"r1".into()), "rule:r1");
    }

    /// A token's browser login keeps the token's name and scope, and says which login.
    #[test]
    fn a_token_through_a_browser_login_is_still_the_token() {
        let seen = LoginRef {
            id: "l2".into(),
            device: "Chrome on Pixel 7".into(),
        };
        let phone = Principal::bearer("phone", Scope::Approve).through(seen.clone());
        assert_eq!(phone.actor(), "token:phone");
        assert_eq!(phone.scope(), Scope::Approve);
        assert_eq!(phone.login(), Some(&seen));
        assert!(!phone.is_browser());
        assert_eq!(Principal::Ntfy.through(seen).login(), None);
    }

    /// A person's token names the person and the token; its credential stays the token's,
    /// and through its browser login it keeps its maker.
    #[test]
    fn a_persons_token_acts_as_the_person_via_the_token() {
        let seen = LoginRef {
            id: "l3".into(),
            device: "Firefox on Linux".into(),
        };
        let wall = Principal::bearer("wall", Scope::View).owned_by("alice@example.test");
        assert_eq!(wall.actor(), "person:alice@example.test via token:wall");
        assert_eq!(wall.credential(), "token:wall");
        assert_eq!(wall.person_email(), Some("alice@example.test"));
        let through = wall.through(seen.clone());
        assert_eq!(through.actor(), "person:alice@example.test via token:wall");
        assert_eq!(through.login(), Some(&seen));
        let person = Principal::Person {
            email: "bob@example.test".into(),
            scope: Scope::View,
            login: seen,
        };
        assert_eq!(person.actor(), "person:bob@example.test");
        assert_eq!(person.credential(), person.actor());
        assert_eq!(Principal::startup_token().person_email(), None);
        assert_eq!(
            Principal::bearer("ci", Scope::Gates).credential(),
            "token:ci"
        );
        assert_eq!(Principal::Ntfy.person_email(), None);
    }
}
