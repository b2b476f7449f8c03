//! Server functions the UI calls. Each is a thin wrapper over one `server::core` operation —
//! the same one the REST route uses — and sits behind the same auth middleware.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::protocol::{
    ApprovalId, ApprovalRequest, AuditEntry, AuditVerdict, ConfigView, CreatedToken, DecideOutcome,
    DecisionInput, ErrorBody, Event, Rule, RuleId, Session, SessionId, Snapshot, TokenInfo, TurnId,
};

#[cfg(feature = "ssr")]
use backend::Need;

#[cfg(feature = "ssr")]
mod backend {
    use std::sync::Arc;

    use leptos::prelude::*;

    use crate::server::core::{Core, Error};
    use crate::server::http::error::status_of;
    use crate::server::principal::Principal;
    use crate::server::state::AppState;

    pub use crate::server::http::scopes::Need;

    use crate::protocol::ErrorBody;

    pub fn core() -> Result<Arc<Core>, ErrorBody> {
        use_context::<AppState>()
            .map(|s| s.core)
            .ok_or_else(|| ErrorBody::new("internal", "server state missing"))
    }

    /// Who called, as the auth middleware found from the credential.
    pub fn principal() -> Result<Principal, ErrorBody> {
        use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().cloned())
            .ok_or_else(|| ErrorBody::new("unauthorized", "no credential on this request"))
    }

    /// The caller, if its credential has what this server function `need`s — checked here,
    /// in the function itself, where each declares its need: a page rendered on the server
    /// calls server functions in-process, past any route.
    pub fn caller(need: Need) -> Result<Principal, ErrorBody> {
        let who = principal()?;
        if need.permits(who.scope()) {
            Ok(who)
        } else {
            Err(to_server_error(Error::Forbidden(format!(
                "a credential with the `{}` scope may not do this",
                who.scope().as_str()
            ))))
        }
    }

    /// The protocol's JSON error body, with the HTTP status the REST route would answer.
    pub fn to_server_error(err: Error) -> ErrorBody {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(status_of(&err));
        }
        if let Error::Internal(cause) = &err {
            tracing::error!(%cause, "internal error in a server function");
        }
        ErrorBody::new(err.code(), err.to_string())
    }
}

#[server(prefix = "/api/ui", endpoint = "snapshot", input = Json)]
pub async fn get_snapshot(session_id: SessionId) -> Result<Snapshot, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    core.recent_snapshot(session_id.as_str())
        .await
        .map_err(backend::to_server_error)
}

/// The turns before `before` (the first seq the page has), for "Show earlier".
#[server(prefix = "/api/ui", endpoint = "older_events", input = Json)]
pub async fn get_older_events(session_id: SessionId, before: u64) -> Result<Vec<Event>, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    core.older_events(session_id.as_str(), before)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "sessions", input = Json)]
pub async fn list_sessions() -> Result<Vec<Session>, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    core.list_sessions().await.map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "create_session", input = Json)]
pub async fn create_session() -> Result<Session, ErrorBody> {
    backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.create_session(None, None)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "delete_session", input = Json)]
pub async fn delete_session(session_id: SessionId) -> Result<(), ErrorBody> {
    backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.delete_session(session_id.as_str())
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "rename_session", input = Json)]
pub async fn rename_session(session_id: SessionId, title: String) -> Result<Session, ErrorBody> {
    backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.rename_session(session_id.as_str(), &title)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "send_message", input = Json)]
pub async fn send_message(
    session_id: SessionId,
    text: String,
    approval_mode: String,
) -> Result<TurnId, ErrorBody> {
    let who = backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.send_message(session_id.as_str(), &text, Some(&approval_mode), &who)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "set_mode", input = Json)]
pub async fn set_mode(session_id: SessionId, approval_mode: String) -> Result<(), ErrorBody> {
    let who = backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.set_mode(session_id.as_str(), &approval_mode, &who)
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "cancel", input = Json)]
pub async fn cancel_turn(session_id: SessionId) -> Result<(), ErrorBody> {
    backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.cancel(session_id.as_str())
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "decide", input = Json)]
pub async fn decide(
    session_id: SessionId,
    approval_id: ApprovalId,
    input: DecisionInput,
) -> Result<DecideOutcome, ErrorBody> {
    let who = backend::caller(Need::Decide)?;
    use crate::server::core::Error;
    use crate::server::core::{DecisionRequest, RuleRequest};
    let core = backend::core()?;
    let rule =
        (input.rule_scope.is_some() || input.rule_pattern.is_some()).then_some(RuleRequest {
            scope: input.rule_scope,
            pattern: input.rule_pattern,
            expires_in_secs: None,
        });
    let request = DecisionRequest {
        decision: Some(input.decision),
        digest: input.digest,
        edits: input.edits,
        reason: input.reason,
        rule,
        client_id: input.client_id,
        execution_mode: input.execution_mode,
        passkey: input.passkey,
    };
    let answer =
        crate::server::core::Answer::try_from(request).map_err(backend::to_server_error)?;
    match core
        .decide(session_id.as_str(), approval_id.as_str(), answer, &who)
        .await
    {
        Ok(resolution) => Ok(DecideOutcome::Decided { resolution }),
        Err(Error::AlreadyResolved(resolution) | Error::Gone(resolution)) => {
            Ok(DecideOutcome::Lost {
                resolution: *resolution,
            })
        }
        Err(other) => Err(backend::to_server_error(other)),
    }
}

/// Every pending gate across sessions, oldest first (the inbox).
#[server(prefix = "/api/ui", endpoint = "pending", input = Json)]
pub async fn pending_approvals() -> Result<Vec<ApprovalRequest>, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    core.pending_approvals()
        .await
        .map_err(backend::to_server_error)
}

/// Standing rules in force.
#[server(prefix = "/api/ui", endpoint = "rules", input = Json)]
pub async fn list_rules() -> Result<Vec<Rule>, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    core.list_rules().await.map_err(backend::to_server_error)
}

/// Revokes a rule; the audit names the credential (`browser`). `client_id` is accepted for
/// compatibility and only labels the tab.
#[server(prefix = "/api/ui", endpoint = "revoke_rule", input = Json)]
pub async fn revoke_rule(rule_id: RuleId, client_id: String) -> Result<(), ErrorBody> {
    let who = backend::caller(Need::Admin)?;
    let _ = client_id;
    let core = backend::core()?;
    core.revoke_rule(&rule_id, &who.actor())
        .await
        .map_err(backend::to_server_error)
}

/// Audit entries before `before` (at most 500), newest first, optionally of one action or
/// subject: the Audit page reads from the end.
#[server(prefix = "/api/ui", endpoint = "audit", input = Json)]
pub async fn audit(
    before: Option<u64>,
    action: Option<String>,
    subject: Option<String>,
) -> Result<Vec<AuditEntry>, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    let nonempty = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (action, subject) = (nonempty(&action), nonempty(&subject));
    core.audit_newest(before, action.as_deref(), subject.as_deref())
        .await
        .map_err(backend::to_server_error)
}

/// Walks the whole audit chain.
#[server(prefix = "/api/ui", endpoint = "verify_audit", input = Json)]
pub async fn verify_audit() -> Result<AuditVerdict, ErrorBody> {
    backend::caller(Need::Read)?;
    let core = backend::core()?;
    core.verify_audit().await.map_err(backend::to_server_error)
}

/// The resolved configuration: every key with its value, default, source and whether it may
/// be changed here; whether the file on disk is valid; the provider key only as set or unset.
/// (`name`: the generated argument struct would otherwise clash with `protocol::ConfigView`.)
#[server(name = GetConfigView, prefix = "/api/ui", endpoint = "config", input = Json)]
pub async fn config_view() -> Result<ConfigView, ErrorBody> {
    backend::caller(Need::Admin)?;
    let core = backend::core()?;
    Ok(core.config_view())
}

/// Sets one config key (refused for protected keys); the audit names the credential
/// (`browser`). `client_id` only labels the tab.
#[server(prefix = "/api/ui", endpoint = "set_config", input = Json)]
pub async fn set_config(
    key: String,
    value: serde_json::Value,
    client_id: String,
) -> Result<(), ErrorBody> {
    let who = backend::caller(Need::Admin)?;
    let _ = client_id;
    let core = backend::core()?;
    core.set_config(&key, &value, &who.actor(), "ui")
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

/// Named tokens, by name: scope, created, last used; never a secret. Admin only (not in the
/// scope table's list for `approve`).
#[server(prefix = "/api/ui", endpoint = "tokens", input = Json)]
pub async fn list_tokens() -> Result<Vec<TokenInfo>, ErrorBody> {
    backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.list_tokens().await.map_err(backend::to_server_error)
}

/// Creates a named token; the answer is the one time its secret is shown. The audit names the
/// credential that made it.
#[server(prefix = "/api/ui", endpoint = "create_token", input = Json)]
pub async fn create_token(name: String, scope: String) -> Result<CreatedToken, ErrorBody> {
    let who = backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.create_token(Some(&name), Some(&scope), &who)
        .await
        .map_err(backend::to_server_error)
}

/// Revokes a named token: the next request that presents it is refused.
#[server(prefix = "/api/ui", endpoint = "revoke_token", input = Json)]
pub async fn revoke_token(name: String) -> Result<(), ErrorBody> {
    let who = backend::caller(Need::Admin)?;
    let core = backend::core()?;
    core.revoke_token(&name, &who)
        .await
        .map_err(backend::to_server_error)
}

/// What the UI shows for a failed server function.
pub fn error_message(err: &ErrorBody) -> String {
    err.error.message.clone()
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    /// Every server function declares its need in its own body, first thing: one with none
    /// (or a name instead of a need) fails here before it can be reached.
    #[test]
    fn every_server_function_declares_its_need() {
        let source = include_str!("api.rs");
        let mut seen = 0;
        for (at, _) in source.match_indices("#[server(") {
            let rest = &source[at..];
            let body_start = rest.find(") -> Result<").and_then(|i| rest[i..].find('{').map(|j| i + j));
            let body = body_start.map(|b| &rest[b..]).unwrap_or("");
            let first_line = body.lines().nth(1).unwrap_or("").trim();
            assert!(
                first_line.contains("backend::caller(Need::"),
                "a server function whose first line declares no need: {}",
                rest.lines().take(3).collect::<Vec<_>>().join(" ")
            );
            seen += 1;
        }
        assert!(seen >= 20, "found only {seen} server functions");
    }
}
