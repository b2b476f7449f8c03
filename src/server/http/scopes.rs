//! What each token scope may reach, by method and path: the one table the auth middleware
//! consults after it knows who is asking.
//!
//! **Invariant:** a `gates` credential reaches only the outside-gate routes, so an agent that
//! holds one can open its gates and wait for them but never answer one.

use http::Method;

use crate::server::principal::Scope;

/// What a request needs of its credential.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Read what the person sees: sessions, feeds, the inbox, rules, the audit.
    Read,
    /// Answer a gate.
    Decide,
    /// Everything else: messages, modes, sessions, configuration, tokens.
    Admin,
}

/// Whether a credential of `scope` has what `need` asks.
pub fn permits(scope: Scope, need: Need) -> bool {
    match scope {
        Scope::Admin => true,
        Scope::Approve => matches!(need, Need::Read | Need::Decide),
        Scope::Gates => false,
    }
}

/// Every server function (`/api/ui/<name>`) and what it needs. The middleware checks the
/// HTTP call against it, and each server function checks its caller against it again
/// (`api::backend::caller`), because a page rendered on the server calls them in-process.
/// A name not listed needs admin.
const SERVER_FNS: [(&str, Need); 20] = [
    ("snapshot", Need::Read),
    ("older_events", Need::Read),
    ("sessions", Need::Read),
    ("pending", Need::Read),
    ("rules", Need::Read),
    ("audit", Need::Read),
    ("verify_audit", Need::Read),
    ("decide", Need::Decide),
    ("create_session", Need::Admin),
    ("delete_session", Need::Admin),
    ("rename_session", Need::Admin),
    ("send_message", Need::Admin),
    ("set_mode", Need::Admin),
    ("cancel", Need::Admin),
    ("revoke_rule", Need::Admin),
    ("config", Need::Admin),
    ("set_config", Need::Admin),
    ("tokens", Need::Admin),
    ("create_token", Need::Admin),
    ("revoke_token", Need::Admin),
];

/// What the server function `name` needs.
pub fn server_fn_need(name: &str) -> Need {
    SERVER_FNS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(Need::Admin, |(_, need)| *need)
}

/// `/api/v1/gates`, `/api/v1/gates/{id}` (read) and `/api/v1/gates/{id}/cancel`.
fn is_gates_route(method: &Method, path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v1/gates") else {
        return false;
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return false;
    }
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    matches!(
        (method, parts.as_slice()),
        (&Method::POST, []) | (&Method::GET | &Method::HEAD, [_]) | (&Method::POST, [_, "cancel"])
    )
}

/// Reading what the person sees: sessions, their feeds, the inbox, rules, the audit, pages.
fn is_read(method: &Method, path: &str) -> bool {
    if !matches!(*method, Method::GET | Method::HEAD) {
        return false;
    }
    match path.strip_prefix("/api/v1/") {
        Some(api) => {
            let first = api.split('/').next().unwrap_or("");
            matches!(first, "sessions" | "approvals" | "rules" | "audit")
        }
        // Pages (server-rendered reads); the config page's data comes through a server
        // function this scope may not call.
        None => !path.starts_with("/api/"),
    }
}

/// Answering a gate, by REST or the UI's server function; reading through server functions.
fn is_decision_or_ui_read(method: &Method, path: &str) -> bool {
    if *method != Method::POST {
        return false;
    }
    if let Some(name) = path.strip_prefix("/api/ui/") {
        return permits(Scope::Approve, server_fn_need(name));
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    matches!(
        parts.as_slice(),
        ["api", "v1", "sessions", _, "approvals", _]
            | ["api", "v1", "sessions", _, "approvals", _, "passkey"]
            | ["forms", "decide"]
    )
}

/// A device's own push subscription: the key, subscribing, listing, removing, a test push.
/// (What a subscription may do is its credential's: core checks that the credential decides.)
fn is_push_route(method: &Method, path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v1/push/") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    matches!(
        (method, parts.as_slice()),
        (&Method::GET | &Method::HEAD, ["key"])
            | (
                &Method::GET | &Method::HEAD | &Method::POST,
                ["subscriptions"]
            )
            | (&Method::DELETE, ["subscriptions", _])
            | (&Method::POST, ["subscriptions", _, "test"])
    )
}

/// Whether `scope` may make this request.
pub fn allows(scope: Scope, method: &Method, path: &str) -> bool {
    match scope {
        Scope::Admin => true,
        Scope::Approve => {
            is_gates_route(method, path)
                || is_push_route(method, path)
                || is_read(method, path)
                || is_decision_or_ui_read(method, path)
        }
        Scope::Gates => is_gates_route(method, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "/api/v1/sessions/0b7b1f3e-1111-4222-8333-444455556666";

    #[test]
    fn gates_reach_only_their_routes() {
        let g = |m: Method, p: &str| allows(Scope::Gates, &m, p);
        assert!(g(Method::POST, "/api/v1/gates"));
        assert!(g(Method::GET, "/api/v1/gates/abc"));
        assert!(g(Method::POST, "/api/v1/gates/abc/cancel"));
        assert!(!g(Method::DELETE, "/api/v1/gates/abc"));
        assert!(!g(Method::POST, &format!("{S}/approvals/abc")));
        assert!(!g(Method::POST, "/api/ui/decide"));
        assert!(!g(Method::POST, "/forms/decide"));
        assert!(!g(Method::GET, "/api/v1/sessions"));
        assert!(!g(Method::GET, "/api/v1/approvals"));
        assert!(!g(Method::GET, "/inbox"));
        assert!(!g(Method::GET, "/api/v1/gatesx"));
        assert!(!g(Method::POST, "/api/v1/push/subscriptions"));
        assert!(!g(Method::GET, "/api/v1/push/key"));
    }

    #[test]
    fn approve_reads_and_decides_but_changes_nothing_else() {
        let a = |m: Method, p: &str| allows(Scope::Approve, &m, p);
        assert!(a(Method::GET, "/api/v1/sessions"));
        assert!(a(Method::GET, &format!("{S}/events")));
        assert!(a(Method::GET, "/api/v1/audit/verify"));
        assert!(a(Method::POST, &format!("{S}/approvals/abc")));
        assert!(a(Method::POST, "/api/ui/decide"));
        assert!(a(Method::POST, "/forms/decide"));
        assert!(!a(Method::POST, "/forms/other"));
        assert!(a(Method::GET, "/inbox"));
        assert!(a(Method::POST, "/api/v1/gates"));
        assert!(!a(Method::POST, "/api/v1/sessions"));
        assert!(!a(Method::POST, &format!("{S}/messages")));
        assert!(!a(Method::PUT, &format!("{S}/mode")));
        assert!(!a(Method::DELETE, "/api/v1/rules/r1"));
        assert!(!a(Method::GET, "/api/v1/config"));
        assert!(!a(Method::PUT, "/api/v1/config/tools.max_parallel"));
        assert!(!a(Method::GET, "/api/v1/tokens"));
        assert!(!a(Method::POST, "/api/ui/set_config"));
        assert!(!a(Method::POST, "/api/ui/send_message"));
        assert!(!a(Method::POST, "/api/ui/config"));
        assert!(!a(Method::POST, "/api/ui/create_session"));
        assert!(!a(Method::POST, "/api/ui/unknown_function"));
        // Its own device's push subscription, and nothing more under /push.
        assert!(a(Method::GET, "/api/v1/push/key"));
        assert!(a(Method::POST, "/api/v1/push/subscriptions"));
        assert!(a(Method::DELETE, "/api/v1/push/subscriptions/x"));
        assert!(a(Method::POST, "/api/v1/push/subscriptions/x/test"));
        assert!(!a(Method::PUT, "/api/v1/push/subscriptions/x"));
        assert!(!a(Method::POST, "/api/v1/push/subscriptions/x/test/more"));
        assert!(!a(Method::DELETE, "/api/v1/push/subscriptions"));
        // A card's passkey options, yes; managing passkeys, no.
        assert!(a(Method::POST, &format!("{S}/approvals/abc/passkey")));
        assert!(!a(Method::GET, "/api/v1/passkeys"));
        assert!(!a(Method::POST, "/api/v1/passkeys/registrations"));
        assert!(!a(Method::DELETE, "/api/v1/passkeys/p1"));
    }
}
