//! Every route of the server, one router per need: what an outside agent's `gates` credential
//! reaches, what a reader (a phone's `approve` token) reads and answers, what only an admin
//! does, and what is public. Each route names its need where it is added ([`Routes`]).

use std::time::Duration;

use axum::Router;
use http::{HeaderValue, StatusCode, header};
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

use super::scopes::{Need, Routes};
use super::{
    approvals, auth, boundary, forms, gates, home, oidc, passkeys, people, push, pwa, sessions,
    sse, stats,
};
use crate::app::{App, shell};
use crate::server::state::AppState;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

fn timed(router: Router<AppState>) -> Router<AppState> {
    router.layer(TimeoutLayer::with_status_code(
        StatusCode::REQUEST_TIMEOUT,
        REQUEST_TIMEOUT,
    ))
}

/// `/api/v1/…`: the REST API.
pub fn api() -> Routes {
    let answering = outside_gates()
        .merge(reading())
        .merge(deciding())
        .merge(administering())
        .merge(public_api())
        .map(timed);
    // The feeds and the gates' long-poll have no request timeout: they are meant to wait.
    let waiting = Routes::new()
        .get(Need::Read, "/sessions/{sid}/events", sse::feed)
        .get(Need::Read, "/changes", sse::changes)
        .get(Need::Gates, "/gates/{id}", gates::wait);
    answering.merge(waiting)
}

/// An outside agent's: open a gate, wait for it, cancel it.
fn outside_gates() -> Routes {
    Routes::new()
        .post(Need::Gates, "/gates", gates::open)
        .get(Need::Gates, "/gates/os-user", boundary::agent_os_user)
        .post(Need::Gates, "/gates/{id}/cancel", gates::cancel)
}

/// What the person sees.
fn reading() -> Routes {
    Routes::new()
        .get(Need::Read, "/sessions", sessions::list)
        .get(Need::Read, "/sessions/{sid}", sessions::snapshot)
        .get(Need::Read, "/approvals", approvals::pending)
        .get(Need::Read, "/rules", approvals::rules)
        .get(Need::Read, "/audit", approvals::audit)
        .get(Need::Read, "/audit/verify", approvals::verify_audit)
}

/// Answering a card, and the device that answers.
fn deciding() -> Routes {
    Routes::new()
        .post(
            Need::Decide,
            "/sessions/{sid}/approvals/{aid}",
            approvals::decide,
        )
        .post(
            Need::Decide,
            "/sessions/{sid}/approvals/{aid}/passkey",
            passkeys::start_gate_assertion,
        )
        // "I would not have approved this": whoever may answer cards may report the reviewer's.
        .post(
            Need::Decide,
            "/review/disagree/{approval_id}",
            approvals::review_disagree,
        )
        .get(Need::Decide, "/push/key", push::key)
        .post(Need::Decide, "/push/subscriptions", push::subscribe)
        .get(Need::Decide, "/push/subscriptions", push::list)
        .delete(Need::Decide, "/push/subscriptions/{id}", push::unsubscribe)
        .post(Need::Decide, "/push/subscriptions/{id}/test", push::test)
}

/// Changing anything else: sessions, messages, modes, rules, configuration, tokens, passkeys.
fn administering() -> Routes {
    Routes::new()
        .post(Need::Admin, "/sessions", sessions::create)
        .patch(Need::Admin, "/sessions/{sid}", sessions::rename)
        .delete(Need::Admin, "/sessions/{sid}", sessions::delete)
        // The person's view of a floor file (`core::floor_view`): admin only, since what the
        // file holds is shown to the person at the console and to no reader or agent.
        .get(
            Need::Admin,
            "/sessions/{sid}/approvals/{aid}/floor-diff",
            approvals::floor_diff,
        )
        .put(Need::Admin, "/sessions/{sid}/mode", sessions::set_mode)
        .post(
            Need::Admin,
            "/sessions/{sid}/messages",
            sessions::send_message,
        )
        .post(Need::Admin, "/sessions/{sid}/cancel", sessions::cancel)
        .get(Need::Admin, "/passkeys", passkeys::list)
        .post(Need::Admin, "/passkeys", passkeys::finish_registration)
        .post(
            Need::Admin,
            "/passkeys/registrations",
            passkeys::start_registration,
        )
        .post(
            Need::Admin,
            "/passkeys/assertions",
            passkeys::start_manage_assertion,
        )
        .delete(Need::Admin, "/passkeys/{id}", passkeys::remove)
        .delete(Need::Admin, "/rules/{id}", approvals::revoke_rule)
        .get(Need::Admin, "/config", approvals::config)
        .get(Need::Admin, "/review", approvals::review)
        .put(
            Need::Admin,
            "/review/classes/{class}/{source}",
            approvals::review_trust,
        )
        .put(Need::Admin, "/config/{key}", approvals::set_config)
        .post(Need::Admin, "/tokens", gates::create_token)
        .get(Need::Admin, "/tokens", gates::list_tokens)
        .delete(Need::Admin, "/tokens/{name}", gates::revoke_token)
        .post(Need::Admin, "/people", people::invite)
        .get(Need::Admin, "/people", people::list)
        .get(Need::Admin, "/people/{id}", people::get)
        .put(Need::Admin, "/people/{id}", people::change)
        .delete(Need::Admin, "/people/{id}", people::remove)
        .get(Need::Admin, "/boundary", boundary::report)
        // The person's own answering habits: how they answer is theirs alone, not a reader's.
        .get(Need::Admin, "/stats/decisions", stats::decisions)
}

/// The health check, and a notification's Approve or Deny: its one-time capability is the
/// credential (core checks it), and no cookie or token is ever sent with it.
fn public_api() -> Routes {
    Routes::new()
        .get(Need::Public, "/health", sessions::health)
        .post(Need::Public, "/push/answers/{capability}", push::answer)
}

/// The pages: Leptos's (and its server functions, each of which checks its own need), the
/// login page, the no-script answer form and home.
pub fn pages(state: &AppState) -> Routes {
    let leptos_options = state.leptos_options.clone();
    let listing = generate_route_list(App);
    let pages = listing
        .iter()
        .map(|r| (http::Method::GET, r.path().to_owned()));
    let server_fns =
        leptos::server_fn::axum::server_fn_paths().map(|(path, method)| (method, path.to_owned()));
    let declared: Vec<_> = pages.chain(server_fns).collect();
    let leptos = Router::new().leptos_routes(state, listing, {
        let options = leptos_options.clone();
        move || shell(options.clone())
    });
    Routes::new()
        .get(Need::Read, "/", home)
        .get(Need::Public, "/login", auth::login)
        .post(Need::Public, "/login", auth::login_form)
        .get(Need::Public, "/auth/oidc/start", oidc::start)
        .get(Need::Public, "/auth/oidc/callback", oidc::callback)
        .post(Need::Decide, "/forms/decide", forms::decide)
        .built(page_or_server_fn, declared, leptos)
        .map(timed)
}

/// A page needs a reader; a server function (`/api/ui/<endpoint>`) what it declared beside
/// itself (`api::needs!`), read here before its body is — told apart by being one of the
/// registered server functions, not by its prefix. Only matched routes reach this.
fn page_or_server_fn(path: &str) -> Need {
    let server_fn = leptos::server_fn::axum::server_fn_paths().any(|(at, _)| at == path);
    match (server_fn, path.strip_prefix("/api/ui/")) {
        (true, Some(endpoint)) => crate::api::need_of(endpoint),
        // A server function under another prefix declared nothing here: an admin's.
        (true, None) => Need::Admin,
        (false, _) => Need::Read,
    }
}

/// The bundle, the icons and the installable app's files.
pub fn files(site_root: &str) -> Routes {
    // The bundle's folder serves scripts, wasm and CSS as subresources; anything else
    // opened there as a page (a planted HTML form) runs sandboxed: no script, no form.
    let bundle = tower::ServiceBuilder::new()
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("sandbox; default-src 'none'; form-action 'none'"),
        ))
        // The bundle's files keep their names from build to build (the main module, its glue,
        // the lazy pages' chunks): a browser revalidates each (a 304 when unchanged) so it
        // never runs a new main module with an old chunk.
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache"),
        ))
        .service(ServeDir::new(format!("{site_root}/pkg")));
    let favicon = ServeFile::new(format!("{site_root}/favicon.svg"));
    Routes::new()
        .files(Need::Public, "/pkg", true, bundle)
        .files(Need::Public, "/favicon.svg", false, favicon.clone())
        .files(Need::Public, "/favicon.ico", false, favicon)
        .merge(pwa::routes(site_root))
}
