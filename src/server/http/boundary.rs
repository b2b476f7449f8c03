//! The OS boundary over HTTP: every request with a `gates` credential has its peer checked
//! (whether the agent runs as the server's own user, [`check_peer`]); the admin's report
//! (`GET /api/v1/boundary`); an agent's own answer (`GET /api/v1/gates/os-user`: whether *the
//! caller* runs as the server's user, nothing more, so the route tells an attacker nothing it
//! does not know). The Security page's section is `os_user::section`.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Extension, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use super::listen::{ConnHandle, LocalAddr};
use crate::protocol::AgentOsUser;
use crate::server::os_user::Report;
use crate::server::principal::{Principal, Scope};
use crate::server::state::AppState;

/// What [`check_peer`] found for this request (a request extension).
#[derive(Clone, Copy, Debug)]
pub struct PeerSameUser(pub Option<bool>);

/// Middleware (after auth): a request with a `gates` credential over loopback is looked up in
/// the kernel's socket table (once per connection); an agent running as the server's own user
/// is recorded.
pub async fn check_peer(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let who = req.extensions().get::<Principal>().cloned();
    let same = match who.filter(|w| w.scope() == Scope::Gates) {
        Some(who) => match peer_uid(&state, Connection::of(&req)).await {
            Some(uid) => state.core.note_agent_uid(&who, uid),
            None => None,
        },
        None => None,
    };
    req.extensions_mut().insert(PeerSameUser(same));
    next.run(req).await
}

/// What the listener told a request about its connection.
struct Connection {
    handle: Option<ConnHandle>,
    local: Option<SocketAddr>,
    peer: Option<SocketAddr>,
}

impl Connection {
    fn of(req: &Request) -> Connection {
        let ext = req.extensions();
        Connection {
            handle: ext.get::<ConnHandle>().cloned(),
            local: ext.get::<LocalAddr>().map(|l| l.0),
            peer: ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0),
        }
    }
}

/// The uid of the process at the other end, looked up once per connection.
async fn peer_uid(state: &AppState, conn: Connection) -> Option<u32> {
    if let Some(known) = conn.handle.as_ref().and_then(ConnHandle::peer_uid) {
        return known;
    }
    let uid = state.core.peer_uid(conn.local?, conn.peer?).await;
    if let Some(handle) = conn.handle {
        handle.remember_peer_uid(uid);
    }
    uid
}

/// `GET /api/v1/boundary` (admin): the server's user, its files' owners and modes, the agents
/// seen from its own user.
pub async fn report(State(state): State<AppState>) -> Result<Json<Report>, ApiError> {
    Ok(Json(state.core.os_boundary_report().await?))
}

/// `GET /api/v1/gates/os-user`: whether the caller runs as the server's own user (`null`:
/// cannot tell — not a `gates` credential, not over loopback).
pub async fn agent_os_user(found: Option<Extension<PeerSameUser>>) -> Json<AgentOsUser> {
    Json(AgentOsUser {
        same_user: found.and_then(|Extension(PeerSameUser(same))| same),
    })
}
