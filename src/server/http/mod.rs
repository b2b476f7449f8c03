//! The HTTP surface: router assembly, layers, and the page routes that are not Leptos views.

pub mod approvals;
pub mod auth;
pub mod boundary;
pub mod csp;
pub mod error;
pub mod forms;
pub mod gates;
pub mod json;
pub mod listen;
pub mod passkeys;
pub mod push;
pub mod pwa;
pub mod scopes;
pub mod sessions;
pub mod sse;

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post, put};
use http::{HeaderValue, StatusCode, header};
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_http::compression::CompressionLayer;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::app::{App, shell};
use crate::server::http::error::ApiError;
use crate::server::state::AppState;

/// Bodies above this answer `413 payload_too_large`.
pub const BODY_LIMIT: usize = 1024 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The whole application router (tests drive it directly; `serve` binds it to a socket).
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/health", get(sessions::health))
        .route("/sessions", post(sessions::create).get(sessions::list))
        .route(
            "/sessions/{sid}",
            get(sessions::snapshot)
                .patch(sessions::rename)
                .delete(sessions::delete),
        )
        .route("/sessions/{sid}/mode", put(sessions::set_mode))
        .route("/sessions/{sid}/messages", post(sessions::send_message))
        .route("/sessions/{sid}/cancel", post(sessions::cancel))
        .route("/sessions/{sid}/approvals/{aid}", post(approvals::decide))
        .route(
            "/sessions/{sid}/approvals/{aid}/passkey",
            post(passkeys::start_gate_assertion),
        )
        .route(
            "/passkeys",
            get(passkeys::list).post(passkeys::finish_registration),
        )
        .route(
            "/passkeys/registrations",
            post(passkeys::start_registration),
        )
        .route(
            "/passkeys/assertions",
            post(passkeys::start_manage_assertion),
        )
        .route("/passkeys/{id}", axum::routing::delete(passkeys::remove))
        .route("/approvals", get(approvals::pending))
        .route("/rules", get(approvals::rules))
        .route("/rules/{id}", axum::routing::delete(approvals::revoke_rule))
        .route("/audit", get(approvals::audit))
        .route("/audit/verify", get(approvals::verify_audit))
        .route("/config", get(approvals::config))
        .route("/config/{key}", put(approvals::set_config))
        .route("/tokens", post(gates::create_token).get(gates::list_tokens))
        .route("/tokens/{name}", axum::routing::delete(gates::revoke_token))
        .route("/gates", post(gates::open))
        .route("/gates/os-user", get(boundary::agent_os_user))
        .route("/boundary", get(boundary::report))
        .route("/gates/{id}/cancel", post(gates::cancel))
        .route("/push/key", get(push::key))
        .route("/push/subscriptions", post(push::subscribe).get(push::list))
        .route(
            "/push/subscriptions/{id}",
            axum::routing::delete(push::unsubscribe),
        )
        .route("/push/subscriptions/{id}/test", post(push::test))
        .route("/push/answers/{capability}", post(push::answer))
        .fallback(api_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ));
    // The feed and the gates' long-poll have no request timeout: they are meant to wait.
    let feed = Router::new()
        .route("/sessions/{sid}/events", get(sse::feed))
        .route("/gates/{id}", get(gates::wait));

    let leptos_options = state.leptos_options.clone();
    let routes = generate_route_list(App);
    let pkg_dir = format!("{}/pkg", leptos_options.site_root);
    let pages = Router::new()
        .route("/", get(home))
        .route("/login", get(auth::login).post(auth::login_form))
        .route("/forms/decide", post(forms::decide))
        .leptos_routes(&state, routes, {
            let options = leptos_options.clone();
            move || shell(options.clone())
        })
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ));

    Router::new()
        .nest(
            "/api/v1",
            api.merge(feed).layer(middleware::from_fn_with_state(
                state.clone(),
                boundary::check_peer,
            )),
        )
        .merge(pages)
        // The bundle's folder serves scripts, wasm and CSS as subresources; anything else
        // opened there as a page (a planted HTML form) runs sandboxed: no script, no form.
        .nest_service(
            "/pkg",
            tower::ServiceBuilder::new()
                .layer(SetResponseHeaderLayer::overriding(
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static("sandbox; default-src 'none'; form-action 'none'"),
                ))
                // The bundle's files keep their names from build to build (the main module,
                // its glue, the lazy pages' chunks): a browser revalidates each (a 304 when
                // unchanged) so it never runs a new main module with an old chunk.
                .layer(SetResponseHeaderLayer::overriding(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("no-cache"),
                ))
                .service(ServeDir::new(pkg_dir)),
        )
        .merge(pwa::routes(&leptos_options.site_root))
        .route_service(
            "/favicon.svg",
            ServeFile::new(format!("{}/favicon.svg", leptos_options.site_root)),
        )
        .route_service(
            "/favicon.ico",
            ServeFile::new(format!("{}/favicon.svg", leptos_options.site_root)),
        )
        .fallback(page_not_found)
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

async fn api_not_found(req: Request) -> ApiError {
    ApiError::NotFound(req.uri().path().to_owned())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

async fn page_not_found(req: Request) -> Response {
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
    let admin = who.is_some_and(|w| w.scope() == crate::server::principal::Scope::Admin);
    if !admin {
        return Ok(Redirect::to("/inbox").into_response());
    }
    let sessions = state.core.list_sessions().await?;
    let id = match sessions.first() {
        Some(session) => session.id.clone(),
        None => state.core.create_session(None, None).await?.id,
    };
    Ok(Redirect::to(&format!("/sessions/{id}")).into_response())
}
