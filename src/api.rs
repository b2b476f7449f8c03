//! Server functions the UI calls. Each is a thin wrapper over one `server::core` operation —
//! the same one the REST route uses — and sits behind the same auth middleware.
//!
//! **Invariant 35** ([ARCHITECTURE.md](../ARCHITECTURE.md#invariants)): each server function declares its need with `needs!` right above it.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::protocol::{
    ApprovalId, ApprovalRequest, AuditEntry, AuditVerdict, ConfigView, CreatedToken, DecideOutcome,
    DecisionRequest, DecisionStats, ErrorBody, Event, FloorDiff, PhoneLogin, Rule, RuleId, Session,
    SessionId, Snapshot, TokenInfo, TurnId,
};

/// Declares what the server function at `endpoint` needs (a [`Need`](crate::server::principal::Need)).
macro_rules! needs {
    ($endpoint:literal, $need:ident) => {
        #[cfg(feature = "ssr")]
        inventory::submit! {
            backend::Declared {
                endpoint: $endpoint,
                need: crate::server::principal::Need::$need,
            }
        }
    };
}

/// What the server function at `endpoint` (its path after `/api/ui/`) needs: as declared
/// beside it, or an admin's when nothing is.
#[cfg(feature = "ssr")]
pub fn need_of(endpoint: &str) -> crate::server::principal::Need {
    inventory::iter::<backend::Declared>
        .into_iter()
        .find(|declared| declared.endpoint == endpoint)
        .map_or(crate::server::principal::Need::Admin, |declared| {
            declared.need
        })
}

#[cfg(feature = "ssr")]
mod backend {
    use std::sync::Arc;

    use leptos::prelude::*;

    use crate::server::core::{Core, Error};
    use crate::server::principal::Principal;
    use crate::server::state::AppState;

    /// One server function's declared need (`needs!`).
    pub struct Declared {
        pub endpoint: &'static str,
        pub need: crate::server::principal::Need,
    }

    inventory::collect!(Declared);

    use crate::protocol::{ErrorBody, ErrorCode};

    pub fn core() -> Result<Arc<Core>, ErrorBody> {
        use_context::<AppState>()
            .map(|s| s.core)
            .ok_or_else(|| ErrorBody::new(ErrorCode::Internal, "server state missing"))
    }

    /// Who called, as the auth middleware found from the credential.
    pub fn principal() -> Result<Principal, ErrorBody> {
        use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().cloned())
            .ok_or_else(|| ErrorBody::new(ErrorCode::Unauthorized, "no credential on this request"))
    }

    /// The caller of the server function at `endpoint`, if its credential has what the
    /// function declared it needs (`needs!`): checked in the function itself too, since a page
    /// rendered on the server calls it in-process, past the route.
    pub fn caller(endpoint: &str) -> Result<Principal, ErrorBody> {
        let who = principal()?;
        if super::need_of(endpoint).permits(who.scope()) {
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
            response.set_status(err.status());
        }
        if let Error::Internal(cause) = &err {
            tracing::error!(%cause, "internal error in a server function");
        }
        ErrorBody::new(err.code(), err.to_string())
    }

    /// A session id an argument carried, checked once here as a route's path is
    /// (`core::ids`): what is not a session's id is `unknown_session` before any core call.
    pub fn session_id(
        id: &crate::protocol::SessionId,
    ) -> Result<crate::protocol::SessionId, ErrorBody> {
        crate::server::core::ids::session_id(id.as_str()).map_err(to_server_error)
    }

    /// A mode an argument carried, or `invalid_approval_mode`.
    pub fn mode(raw: &str) -> Result<crate::protocol::Mode, ErrorBody> {
        crate::server::core::ids::mode(raw).map_err(to_server_error)
    }
}

needs!("snapshot", Read);
#[server(prefix = "/api/ui", endpoint = "snapshot", input = Json)]
pub async fn get_snapshot(session_id: SessionId) -> Result<Snapshot, ErrorBody> {
    backend::caller("snapshot")?;
    let core = backend::core()?;
    core.recent_snapshot(&backend::session_id(&session_id)?)
        .await
        .map_err(backend::to_server_error)
}

needs!("older_events", Read);
/// The turns before `before` (the first seq the page has), for "Show earlier".
#[server(prefix = "/api/ui", endpoint = "older_events", input = Json)]
pub async fn get_older_events(session_id: SessionId, before: u64) -> Result<Vec<Event>, ErrorBody> {
    backend::caller("older_events")?;
    let core = backend::core()?;
    core.older_events(&backend::session_id(&session_id)?, before)
        .await
        .map_err(backend::to_server_error)
}

needs!("sessions", Read);
#[server(prefix = "/api/ui", endpoint = "sessions", input = Json)]
pub async fn list_sessions() -> Result<Vec<Session>, ErrorBody> {
    backend::caller("sessions")?;
    let core = backend::core()?;
    core.list_sessions().await.map_err(backend::to_server_error)
}

needs!("create_session", Admin);
#[server(prefix = "/api/ui", endpoint = "create_session", input = Json)]
pub async fn create_session() -> Result<Session, ErrorBody> {
    let who = backend::caller("create_session")?;
    let core = backend::core()?;
    core.create_session(None, None, who.person_email())
        .await
        .map_err(backend::to_server_error)
}

needs!("delete_session", Admin);
#[server(prefix = "/api/ui", endpoint = "delete_session", input = Json)]
pub async fn delete_session(session_id: SessionId) -> Result<(), ErrorBody> {
    backend::caller("delete_session")?;
    let core = backend::core()?;
    core.delete_session(&backend::session_id(&session_id)?)
        .await
        .map_err(backend::to_server_error)
}

needs!("rename_session", Admin);
#[server(prefix = "/api/ui", endpoint = "rename_session", input = Json)]
pub async fn rename_session(session_id: SessionId, title: String) -> Result<Session, ErrorBody> {
    backend::caller("rename_session")?;
    let core = backend::core()?;
    core.rename_session(&backend::session_id(&session_id)?, &title)
        .await
        .map_err(backend::to_server_error)
}

needs!("send_message", Admin);
#[server(prefix = "/api/ui", endpoint = "send_message", input = Json)]
pub async fn send_message(
    session_id: SessionId,
    text: String,
    approval_mode: String,
) -> Result<TurnId, ErrorBody> {
    let who = backend::caller("send_message")?;
    let core = backend::core()?;
    let mode = backend::mode(&approval_mode)?;
    let session_id = backend::session_id(&session_id)?;
    core.send_message(&session_id, &text, Some(mode), &who)
        .await
        .map_err(backend::to_server_error)
}

needs!("set_mode", Admin);
#[server(prefix = "/api/ui", endpoint = "set_mode", input = Json)]
pub async fn set_mode(session_id: SessionId, approval_mode: String) -> Result<(), ErrorBody> {
    let who = backend::caller("set_mode")?;
    let core = backend::core()?;
    let mode = backend::mode(&approval_mode)?;
    core.set_mode(&backend::session_id(&session_id)?, mode, &who)
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

needs!("cancel", Admin);
#[server(prefix = "/api/ui", endpoint = "cancel", input = Json)]
pub async fn cancel_turn(session_id: SessionId) -> Result<(), ErrorBody> {
    backend::caller("cancel")?;
    let core = backend::core()?;
    core.cancel(&backend::session_id(&session_id)?)
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

needs!("decide", Decide);
#[server(prefix = "/api/ui", endpoint = "decide", input = Json)]
pub async fn decide(
    session_id: SessionId,
    approval_id: ApprovalId,
    input: DecisionRequest,
) -> Result<DecideOutcome, ErrorBody> {
    let who = backend::caller("decide")?;
    use crate::server::core::{Answered, Error};
    let core = backend::core()?;
    let answer = crate::server::core::Answer::try_from(input).map_err(backend::to_server_error)?;
    let session_id = backend::session_id(&session_id)?;
    match core.decide(&session_id, &approval_id, answer, &who).await {
        Ok(Answered::Resolved(resolution)) => Ok(DecideOutcome::Decided { resolution }),
        Ok(Answered::Counted { approvals, quorum }) => Ok(DecideOutcome::Counted {
            approval_id,
            approvals,
            quorum,
        }),
        Err(Error::AlreadyResolved(resolution) | Error::Gone(resolution)) => {
            Ok(DecideOutcome::Lost {
                resolution: *resolution,
            })
        }
        Err(other) => Err(backend::to_server_error(other)),
    }
}

needs!("floor_diff", Admin);
/// What a pending floor write would change in its file, masked (`core::floor_view`): the
/// person's alone, so an admin's, and never cached.
#[server(prefix = "/api/ui", endpoint = "floor_diff", input = Json)]
pub async fn get_floor_diff(
    session_id: SessionId,
    approval_id: ApprovalId,
) -> Result<FloorDiff, ErrorBody> {
    let who = backend::caller("floor_diff")?;
    let core = backend::core()?;
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.insert_header(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-store"),
        );
    }
    core.floor_diff(&backend::session_id(&session_id)?, &approval_id, &who)
        .await
        .map_err(backend::to_server_error)
}

needs!("pending", Read);
/// Every pending gate across sessions, oldest first (the inbox).
#[server(prefix = "/api/ui", endpoint = "pending", input = Json)]
pub async fn pending_approvals() -> Result<Vec<ApprovalRequest>, ErrorBody> {
    backend::caller("pending")?;
    let core = backend::core()?;
    core.pending_approvals()
        .await
        .map_err(backend::to_server_error)
}

needs!("rules", Read);
/// Standing rules in force.
#[server(prefix = "/api/ui", endpoint = "rules", input = Json)]
pub async fn list_rules() -> Result<Vec<Rule>, ErrorBody> {
    backend::caller("rules")?;
    let core = backend::core()?;
    core.list_rules().await.map_err(backend::to_server_error)
}

needs!("revoke_rule", Admin);
/// Revokes a rule; the audit names the credential (`browser`). `client_id` is accepted for
/// compatibility and only labels the tab.
#[server(prefix = "/api/ui", endpoint = "revoke_rule", input = Json)]
pub async fn revoke_rule(rule_id: RuleId, client_id: String) -> Result<(), ErrorBody> {
    let who = backend::caller("revoke_rule")?;
    let _ = client_id;
    let core = backend::core()?;
    core.revoke_rule(&rule_id, &who.actor())
        .await
        .map_err(backend::to_server_error)
}

needs!("review_disagree", Decide);
/// "I would not have approved this" on a card the reviewer answered: a false approval, and
/// the class's trust ends (`POST /api/v1/review/disagree/{approval_id}`). The class reported.
#[server(prefix = "/api/ui", endpoint = "review_disagree", input = Json)]
pub async fn review_disagree(approval_id: ApprovalId) -> Result<String, ErrorBody> {
    let who = backend::caller("review_disagree")?;
    let core = backend::core()?;
    core.disagree_with_reviewer(approval_id.as_str(), &who.actor())
        .await
        .map(|standing| standing.class.as_str().to_owned())
        .map_err(backend::to_server_error)
}

needs!("audit", Read);
/// Audit entries before `before` (at most 500), newest first, optionally of one action or
/// subject: the Audit page reads from the end.
#[server(prefix = "/api/ui", endpoint = "audit", input = Json)]
pub async fn audit(
    before: Option<u64>,
    action: Option<String>,
    subject: Option<String>,
) -> Result<Vec<AuditEntry>, ErrorBody> {
    backend::caller("audit")?;
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

needs!("your_answers", Admin);
/// The person's answering figures over the last `days` days up to now (the Your answers
/// page): the same core operation as `GET /api/v1/stats/decisions?since=…`.
#[server(prefix = "/api/ui", endpoint = "your_answers", input = Json)]
pub async fn your_answers(days: u32) -> Result<DecisionStats, ErrorBody> {
    backend::caller("your_answers")?;
    let core = backend::core()?;
    let since = crate::protocol::Timestamp::now().plus_ms(-i64::from(days) * 86_400_000);
    core.decision_stats(Some(since.as_str()), None)
        .await
        .map_err(backend::to_server_error)
}

needs!("verify_audit", Read);
/// Walks the whole audit chain.
#[server(prefix = "/api/ui", endpoint = "verify_audit", input = Json)]
pub async fn verify_audit() -> Result<AuditVerdict, ErrorBody> {
    backend::caller("verify_audit")?;
    let core = backend::core()?;
    core.verify_audit().await.map_err(backend::to_server_error)
}

needs!("config", Admin);
/// The resolved configuration: every key with its value, default, source and whether it may
/// be changed here; whether the file on disk is valid; the provider key only as set or unset.
/// (`name`: the generated argument struct would otherwise clash with `protocol::ConfigView`.)
#[server(name = GetConfigView, prefix = "/api/ui", endpoint = "config", input = Json)]
pub async fn config_view() -> Result<ConfigView, ErrorBody> {
    backend::caller("config")?;
    let core = backend::core()?;
    Ok(core.config_view())
}

needs!("set_config", Admin);
/// Sets one config key (refused for protected keys); the audit names the credential
/// (`browser`). `client_id` only labels the tab.
#[server(prefix = "/api/ui", endpoint = "set_config", input = Json)]
pub async fn set_config(
    key: String,
    value: serde_json::Value,
    client_id: String,
) -> Result<(), ErrorBody> {
    let who = backend::caller("set_config")?;
    let _ = client_id;
    let core = backend::core()?;
    core.set_config(&key, &value, &who.actor(), "ui")
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

needs!("tokens", Admin);
/// Named tokens, by name: scope, created, last used; never a secret. Admin only (not in the
/// scope table's list for `approve`).
#[server(prefix = "/api/ui", endpoint = "tokens", input = Json)]
pub async fn list_tokens() -> Result<Vec<TokenInfo>, ErrorBody> {
    backend::caller("tokens")?;
    let core = backend::core()?;
    core.list_tokens().await.map_err(backend::to_server_error)
}

needs!("create_token", Admin);
/// Creates a named token; the answer is the one time its secret is shown. The audit names the
/// credential that made it.
#[server(prefix = "/api/ui", endpoint = "create_token", input = Json)]
pub async fn create_token(name: String, scope: String) -> Result<CreatedToken, ErrorBody> {
    let who = backend::caller("create_token")?;
    let core = backend::core()?;
    core.create_token(Some(&name), Some(&scope), &who)
        .await
        .map_err(backend::to_server_error)
}

needs!("security_boundary", Admin);
/// The Security page's two parts about the OS boundary, as the server renders them (every
/// value escaped, `http/boundary.rs`): an alert for the page's top when the boundary does not
/// hold, and the section that says why. Both empty when the report could not be made.
#[server(prefix = "/api/ui", endpoint = "security_boundary", input = Json)]
pub async fn security_boundary() -> Result<(String, String), ErrorBody> {
    backend::caller("security_boundary")?;
    let report = backend::core()?.os_boundary_report().await.ok();
    Ok(crate::server::os_user::section::security_parts(
        report.as_ref(),
    ))
}

needs!("phone_login", Admin);
/// A phone's login link for the `approve` token just made (its secret, still on the page,
/// shows the caller has it) at the page's own `origin`, and a QR code of that link. The link
/// carries a single-use code good for 15 minutes, never the secret.
#[server(name = MakePhoneLogin, prefix = "/api/ui", endpoint = "phone_login", input = Json)]
pub async fn phone_login(token: String, origin: String) -> Result<PhoneLogin, ErrorBody> {
    let who = backend::caller("phone_login")?;
    let core = backend::core()?;
    core.phone_login(&who, &token, &origin)
        .await
        .map_err(backend::to_server_error)
}

needs!("revoke_token", Admin);
/// Revokes a named token: the next request that presents it is refused.
#[server(prefix = "/api/ui", endpoint = "revoke_token", input = Json)]
pub async fn revoke_token(name: String) -> Result<(), ErrorBody> {
    let who = backend::caller("revoke_token")?;
    let core = backend::core()?;
    core.revoke_token(&name, &who)
        .await
        .map_err(backend::to_server_error)
}

/// What the UI shows for a failed server function: the server's own sentence, or, where the
/// failure is the browser's or the transport's (whose text is for developers: "error reaching
/// server to call server function: TypeError: Failed to fetch"), a plain one that says whether
/// anything was sent. Every error the page shows goes through here.
pub fn error_message(err: &ErrorBody) -> String {
    use crate::protocol::ErrorCode;
    // Only the machinery's own codes can carry its text; a refusal's sentence (403, 409 …)
    // is the server's and is shown as written, whatever words it holds.
    let machinery = matches!(
        err.error.code,
        ErrorCode::Internal | ErrorCode::InvalidRequest | ErrorCode::MethodNotAllowed
    );
    match &err.error.code {
        ErrorCode::Network => NOT_SENT.to_owned(),
        _ if machinery && is_developer_text(&err.error.message) => UNREADABLE.to_owned(),
        _ => err.error.message.clone(),
    }
}

/// A reply that could not be read: the request may have done its work, so it is not called
/// unsent; the page shows what happened once it reloads.
pub const UNREADABLE: &str =
    "Countersign's answer could not be read: it may have been done. Reload to see what happened.";

/// A call that never reached the server, in words: nothing was sent, and nothing will be
/// sent later unseen.
pub const NOT_SENT: &str =
    "Can't reach Countersign, so nothing was sent. Try again once it is back.";

/// Text written for developers, not people: the server-function machinery's own errors (each
/// of `ServerFnErrorErr`'s messages names its stage) and the browser's fetch failures.
fn is_developer_text(message: &str) -> bool {
    const MARKS: [&str; 10] = [
        "server function",
        "error running middleware",
        "error creating response",
        "error trying to build",
        "missing argument",
        "TypeError",
        "Failed to fetch",
        "NetworkError",
        "Load failed",
        "wasm",
    ];
    MARKS.iter().any(|mark| message.contains(mark))
}

#[cfg(test)]
mod error_words {
    use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};

    use super::error_message;
    use crate::protocol::{ErrorBody, ErrorCode};

    /// What no person should read.
    const DEVELOPER_WORDS: [&str; 8] = [
        "TypeError",
        "Failed to fetch",
        "server function",
        "NetworkError",
        "panicked",
        "wasm",
        "undefined",
        "error ",
    ];

    /// No developer text reaches a person: a transport failure says, in words, that nothing
    /// was sent; the server's own sentences pass as they are.
    #[test]
    fn a_failure_reads_as_a_sentence() {
        let shown = |code, message: &str| error_message(&ErrorBody::new(code, message));
        let lost = shown(
            ErrorCode::Network,
            "error reaching server to call server function: TypeError: Failed to fetch",
        );
        assert!(lost.starts_with("Can't reach Countersign"), "{lost}");
        assert!(!lost.contains("TypeError") && !lost.contains("server function"));
        let odd = shown(
            ErrorCode::Internal,
            "error running server function: bad json",
        );
        assert!(!odd.contains("server function"), "{odd}");
        assert_eq!(
            shown(ErrorCode::UnknownSession, "no session with id x"),
            "no session with id x"
        );
        // A refusal's own sentence is shown as written, whatever words it holds.
        let refused = "`wasm-app/.env` is on the safety floor";
        assert_eq!(shown(ErrorCode::Forbidden, refused), refused);
        // A reply that could not be read may have done its work: never "nothing was sent".
        let unread = error_message(&ErrorBody::from_server_fn_error(
            ServerFnErrorErr::Response("TypeError: body stream".into()),
        ));
        assert_eq!(unread, super::UNREADABLE);
    }

    /// Every way the server-function machinery itself can fail, in the browser or on the
    /// server, as the page would show it: words only.
    #[test]
    fn every_failure_of_the_machinery_reads_as_words() {
        let detail = || "TypeError: Failed to fetch at wasm-function[12] (undefined)".to_owned();
        let failures = [
            ServerFnErrorErr::Registration(detail()),
            ServerFnErrorErr::UnsupportedRequestMethod(detail()),
            ServerFnErrorErr::Request(detail()),
            ServerFnErrorErr::ServerError(detail()),
            ServerFnErrorErr::MiddlewareError(detail()),
            ServerFnErrorErr::Deserialization(detail()),
            ServerFnErrorErr::Serialization(detail()),
            ServerFnErrorErr::Args(detail()),
            ServerFnErrorErr::MissingArg(detail()),
            ServerFnErrorErr::Response(detail()),
        ];
        for failure in failures {
            let shown = error_message(&ErrorBody::from_server_fn_error(failure.clone()));
            for word in DEVELOPER_WORDS {
                assert!(!shown.contains(word), "{failure:?} shows {shown:?}");
            }
        }
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use crate::server::principal::Need;

    /// Every server function declares its need with `needs!` right above it (its doc
    /// comment between), under its own endpoint, and checks its caller against that very
    /// declaration first thing: one without, or checking another's, fails here.
    #[test]
    fn every_server_function_declares_its_need_beside_it() {
        let source = include_str!("api.rs");
        let mut seen = 0;
        for (at, _) in source.match_indices("\n#[server(") {
            let rest = &source[at + 1..];
            let endpoint = rest
                .split("endpoint = \"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or("");
            let before: Vec<&str> = source[..at].lines().rev().collect();
            let declared = before
                .iter()
                .find(|l| !l.starts_with("///"))
                .copied()
                .unwrap_or("");
            assert!(
                declared.starts_with(&format!("needs!(\"{endpoint}\", ")),
                "`{endpoint}` has no `needs!` above it (found `{declared}`)"
            );
            let body = rest
                .find(") -> Result<")
                .and_then(|i| rest[i..].find('{').map(|j| i + j));
            let first_line = body.map_or("", |b| rest[b..].lines().nth(1).unwrap_or("").trim());
            assert!(
                first_line.contains(&format!("backend::caller(\"{endpoint}\")")),
                "`{endpoint}` does not check its caller first: {first_line}"
            );
            seen += 1;
        }
        assert!(seen >= 20, "found only {seen} server functions");
    }

    /// The declarations are read back as written; an endpoint nobody declared needs an admin.
    #[test]
    fn declared_needs_are_read_back_and_the_rest_need_an_admin() {
        assert_eq!(super::need_of("snapshot"), Need::Read);
        assert_eq!(super::need_of("decide"), Need::Decide);
        assert_eq!(super::need_of("set_config"), Need::Admin);
        assert_eq!(super::need_of("no_such_function"), Need::Admin);
    }
}
