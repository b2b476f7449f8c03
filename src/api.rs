//! Server functions the UI calls. Each is a thin wrapper over one `server::core` operation —
//! the same one the REST route uses — and sits behind the same auth middleware.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::protocol::{Session, Snapshot};

#[cfg(feature = "ssr")]
mod backend {
    use std::sync::Arc;

    use leptos::prelude::*;

    use crate::server::core::Core;
    use crate::server::error::ApiError;
    use crate::server::state::AppState;

    pub fn core() -> Result<Arc<Core>, ServerFnError> {
        use_context::<AppState>()
            .map(|s| s.core)
            .ok_or_else(|| ServerFnError::new("internal: server state missing"))
    }

    /// The client shows `message`; `code` keeps it machine-readable.
    pub fn to_server_error(err: ApiError) -> ServerFnError {
        ServerFnError::new(format!("{}: {}", err.code(), err))
    }
}

#[server(prefix = "/api/ui", endpoint = "snapshot", input = Json)]
pub async fn get_snapshot(session_id: String) -> Result<Snapshot, ServerFnError> {
    let core = backend::core()?;
    core.snapshot(&session_id)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "sessions", input = Json)]
pub async fn list_sessions() -> Result<Vec<Session>, ServerFnError> {
    let core = backend::core()?;
    core.list_sessions().await.map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "create_session", input = Json)]
pub async fn create_session() -> Result<Session, ServerFnError> {
    let core = backend::core()?;
    core.create_session(None, None)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "delete_session", input = Json)]
pub async fn delete_session(session_id: String) -> Result<(), ServerFnError> {
    let core = backend::core()?;
    core.delete_session(&session_id)
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "send_message", input = Json)]
pub async fn send_message(
    session_id: String,
    text: String,
    approval_mode: String,
) -> Result<String, ServerFnError> {
    let core = backend::core()?;
    core.send_message(&session_id, &text, Some(&approval_mode))
        .await
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "set_mode", input = Json)]
pub async fn set_mode(session_id: String, approval_mode: String) -> Result<(), ServerFnError> {
    let core = backend::core()?;
    core.set_mode(&session_id, &approval_mode)
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

#[server(prefix = "/api/ui", endpoint = "cancel", input = Json)]
pub async fn cancel_turn(session_id: String) -> Result<(), ServerFnError> {
    let core = backend::core()?;
    core.cancel(&session_id)
        .await
        .map(|_| ())
        .map_err(backend::to_server_error)
}

/// The human part of a server function error (`"code: message"` → `message`).
pub fn error_message(err: &ServerFnError) -> String {
    let text = match err {
        ServerFnError::ServerError(m) => m.clone(),
        other => other.to_string(),
    };
    match text.split_once(": ") {
        Some((code, rest)) if code.chars().all(|c| c.is_ascii_lowercase() || c == '_') => {
            rest.to_owned()
        }
        _ => text,
    }
}
