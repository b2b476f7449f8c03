//! The OS boundary over HTTP: every request with a `gates` credential has its peer checked
//! (whether the agent runs as the server's own user, [`check_peer`]); the admin's report
//! (`GET /api/v1/boundary`); an agent's own answer (`GET /api/v1/gates/os-user`: whether *the
//! caller* runs as the server's user, nothing more, so the route tells an attacker nothing it
//! does not know); and the Security page's section.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Extension, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use super::listen::{ConnHandle, LocalAddr};
use crate::protocol::AgentOsUser;
use crate::server::os_user::{Report, SEE_README};
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

/// The Security page's section about the boundary, as HTML (every value escaped).
pub fn security_section(report: &Report) -> String {
    let text = escape;
    let mut html = format!(
        "<section id=\"os-boundary\" class=\"os-boundary\" data-testid=\"os-boundary\" data-holds=\"{}\">\n\
         <h2>Outside agents and the OS boundary</h2>\n",
        report.holds
    );
    let status = if report.holds {
        format!(
            "Countersign runs as {}, a user of its own: an outside agent running as you can \
             neither read nor change its data dir, database or config, and reaches it only over \
             HTTP with a <code>gates</code> token.",
            text(&report.assessment.who())
        )
    } else {
        text(
            report
                .warning
                .as_deref()
                .unwrap_or("warning: the OS boundary does not hold")
                .trim_start_matches("warning: "),
        )
    };
    html.push_str(&format!(
        "<p data-testid=\"os-boundary-status\" data-problem=\"{}\">{status}</p>\n",
        !report.holds
    ));
    if !report.reasons.is_empty() {
        html.push_str("<ul data-testid=\"os-boundary-reasons\">");
        for reason in &report.reasons {
            html.push_str(&format!("<li>{}</li>", text(reason)));
        }
        html.push_str("</ul>\n");
    }
    if !report.same_user_agents.is_empty() {
        html.push_str(
            "<p>Outside agents that connected as Countersign's own OS user:</p>\
             <ul data-testid=\"os-boundary-same-user\">",
        );
        for seen in &report.same_user_agents {
            html.push_str(&format!(
                "<li>{} · first {} · last {} · {} request{}</li>",
                text(&seen.credential),
                text(seen.first_seen.as_str()),
                text(seen.last_seen.as_str()),
                seen.requests,
                if seen.requests == 1 { "" } else { "s" }
            ));
        }
        html.push_str("</ul>\n");
    }
    html.push_str(&format!(
        "<p class=\"muted\">{}.</p>\n</section>\n",
        text(SEE_README)
    ));
    html
}

/// The Security page's parts: an alert at its top when the boundary does not hold (a link to
/// the section), and the section. Empty when the report could not be made.
pub async fn security_parts(state: &AppState) -> (String, String) {
    let Ok(report) = state.core.os_boundary_report().await else {
        return (String::new(), String::new());
    };
    let alert = if report.holds {
        String::new()
    } else {
        "<p class=\"error\" role=\"alert\" data-testid=\"os-boundary-alert\">The OS boundary \
         does not hold: an outside agent may read and change Countersign's files. \
         <a href=\"#os-boundary\">Why, and what to do</a>.</p>"
            .to_owned()
    };
    (alert, security_section(&report))
}

/// Text as HTML: the five characters that could end an element or an attribute, written out.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_section_quotes_cannot_become_markup() {
        assert_eq!(
            escape(r#"/tmp/<b>"x" & 'y'"#),
            "/tmp/&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;"
        );
    }
}
