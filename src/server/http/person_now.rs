//! A signed-in person's roles and groups as the people store has them now, put beside the
//! request's `Principal` for the page it draws (issue 41): the page shows a routed card's
//! buttons only to those who may answer it (`ui::approver`). Read for pages only; every
//! answer is checked again on the server.

use axum::extract::Request;

use crate::protocol::PageApprover;
use crate::server::principal::Principal;
use crate::server::state::AppState;

/// Whether the request draws a page (not the API, a server function or a file).
fn draws_a_page(req: &Request) -> bool {
    let path = req.uri().path();
    req.method() == http::Method::GET
        && !["/api/", "/pkg/", "/auth/"]
            .iter()
            .any(|prefix| path.starts_with(prefix))
}

/// Puts the person as a routed card sees them (`PageApprover`) in the request's extensions when a signed-in person asks for a page. A
/// store that cannot be read leaves it out (the page then shows no routed card's buttons but
/// the admin's; the server decides either way).
pub async fn attach(state: &AppState, who: &Principal, req: &mut Request) {
    let Some(email) = who.person_email() else {
        return;
    };
    if !draws_a_page(req) {
        return;
    }
    match state.core.roles_and_groups(email).await {
        Ok((roles, groups)) => {
            let email = crate::protocol::email_key(email);
            req.extensions_mut().insert(PageApprover {
                email,
                roles,
                groups,
            });
        }
        Err(e) => tracing::warn!(error = %e, "could not read a person's groups for the page"),
    }
}
