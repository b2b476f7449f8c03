//! Who is asking, as the credential says: the auth middleware derives a `Principal` from how a
//! request authenticated and puts it in the request's extensions; core operations that record
//! an actor take it from there, never from a request body.
//!
//! **Invariant 31** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): an actor comes from the principal, never from a body field.

use crate::protocol::Actor;
pub use crate::protocol::Scope;

/// The authenticated caller of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// A browser holding the session cookie.
    Browser,
    /// A bearer token, by name (the startup token is named `admin`).
    Token { name: String, scope: Scope },
    /// A tap on an ntfy notification's Approve or Deny (`[notify] format = "ntfy"`): whoever
    /// reads that topic. It only ever holds a one-time answer capability, never a session.
    Ntfy,
}

/// The name the startup token carries in actors (`token:admin`).
pub const STARTUP_TOKEN_NAME: &str = "admin";
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
    /// Read what the person sees: sessions, feeds, the inbox, rules, the audit, pages.
    Read,
    /// Answer a gate, and keep a device that answers (its push subscription).
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
        )
    }
}

impl Principal {
    /// The startup token (`--token`, `COUNTERSIGN_TOKEN` or the generated one).
    pub fn startup_token() -> Self {
        Principal::Token {
            name: STARTUP_TOKEN_NAME.to_owned(),
            scope: Scope::Admin,
        }
    }

    /// How the audit and `approval_resolved.actor` name this caller.
    pub fn actor(&self) -> String {
        match self {
            Principal::Browser => Actor::Browser,
            Principal::Token { name, .. } => Actor::Token(name),
            Principal::Ntfy => Actor::Ntfy,
        }
        .to_string()
    }

    pub fn scope(&self) -> Scope {
        match self {
            Principal::Browser => Scope::Admin,
            Principal::Token { scope, .. } => *scope,
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

    pub fn rule(rule_id: &crate::protocol::RuleId) -> String {
        format!("rule:{rule_id}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_name_the_credential() {
        assert_eq!(Principal::Browser.actor(), "browser");
        assert_eq!(Principal::startup_token().actor(), "token:admin");
        assert_eq!(Principal::startup_token().scope(), Scope::Admin);
        assert_eq!(actors::rule(&"r1".into()), "rule:r1");
    }
}
