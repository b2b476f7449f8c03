//! The HTTP surface: router assembly, layers, and the page routes that are not Leptos views.

pub mod approvals;
pub mod auth;
pub mod boundary;
pub mod error;
pub mod forms;
pub mod gates;
pub mod json;
pub mod listen;
pub mod oidc;
pub mod passkeys;
pub mod people;
pub mod person_now;
pub mod push;
pub mod pwa;
pub mod routes;
pub mod scopes;
pub mod sessions;
pub mod sse;
pub mod stats;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderValue, StatusCode, header};
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

use crate::server::csp;
use crate::server::http::error::ApiError;
use crate::server::state::AppState;

/// Bodies above this answer `413 payload_too_large`.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// The whole application router (`serve` binds it to a socket), with every route it declared
/// and what each needs (`tests/api/scopes.rs` sends each every scope's credential).
pub fn router(state: AppState) -> (Router, Vec<scopes::Declared>) {
    let (router, declared) = declared_router(&state);
    (with_layers(router, state), declared)
}

/// Every route, each behind the check its need asks.
fn declared_router(state: &AppState) -> (Router<AppState>, Vec<scopes::Declared>) {
    let api = routes::api().map(|api| {
        api.fallback(api_not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .layer(middleware::from_fn_with_state(
                state.clone(),
                boundary::check_peer,
            ))
    });
    scopes::Routes::nest("/api/v1", api)
        .merge(routes::pages(state))
        .merge(routes::files(&state.leptos_options.site_root))
        .into_parts()
}

/// The layers every request passes: who is asking, body limits, compression, the security
/// headers and the request's span.
fn with_layers(router: Router<AppState>, state: AppState) -> Router {
    router
        .fallback(page_not_found)
        // A declared path asked with another method: said only to a credential that may read
        // (the route's own check wraps its handlers, not this).
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_auth,
        ))
        .layer(middleware::from_fn(reject_oversized))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(CompressionLayer::new())
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(csp::STATIC_POLICY),
        ))
        // The span names the path only: a query may carry a secret (`/login?token=…`), and
        // a capability's path is cut to its route.
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let path = req.uri().path();
            let path = if path.starts_with("/api/v1/push/answers/") {
                "/api/v1/push/answers/…"
            } else {
                path
            };
            tracing::debug_span!("request", method = %req.method(), path = %path)
        }))
        .with_state(state)
}

/// A declared `Content-Length` over the limit is refused before anything reads the body.
async fn reject_oversized(req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > BODY_LIMIT) {
        return ApiError::PayloadTooLarge.into_response();
    }
    next.run(req).await
}

/// No such API route: said only to a credential that may read (others learn nothing of the
/// routes there are).
async fn api_not_found(req: Request) -> Response {
    if let Some(refused) = scopes::refusal(scopes::Need::Read, &req) {
        return refused;
    }
    ApiError::NotFound(req.uri().path().to_owned()).into_response()
}

async fn method_not_allowed(req: Request) -> Response {
    if let Some(refused) = scopes::refusal(scopes::Need::Read, &req) {
        return refused;
    }
    ApiError::MethodNotAllowed.into_response()
}

/// No such page: as for the API, said only to a credential that may read.
async fn page_not_found(req: Request) -> Response {
    if let Some(refused) = scopes::refusal(scopes::Need::Read, &req) {
        return refused;
    }
    if req.uri().path().starts_with("/api/") {
        return ApiError::NotFound(req.uri().path().to_owned()).into_response();
    }
    (
        StatusCode::NOT_FOUND,
        Html(r#"<!doctype html><title>Not found · Countersign</title><p>Nothing here. <a href="/">Back to your sessions</a></p>"#),
    )
        .into_response()
}

/// `/` opens the most recent session, creating one on first use; a credential that may not
/// create sessions (a phone's `approve` token) goes to the Inbox instead.
async fn home(
    State(state): State<AppState>,
    who: Option<axum::Extension<crate::server::principal::Principal>>,
) -> Result<Response, ApiError> {
    let owner = who
        .as_ref()
        .and_then(|w| w.person_email().map(str::to_owned));
    let admin = who.is_some_and(|w| w.scope() == crate::server::principal::Scope::Admin);
    if !admin {
        return Ok(Redirect::to("/inbox").into_response());
    }
    let sessions = state.core.list_sessions().await?;
    let id = match sessions.first() {
        Some(session) => session.id.clone(),
        None => {
            let owner = owner.as_deref();
            state.core.create_session(None, None, owner).await?.id
        }
    };
    Ok(Redirect::to(&format!("/sessions/{id}")).into_response())
}
