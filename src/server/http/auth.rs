//! Access control for everything but health, login and static assets: a bearer token or the
//! session cookie, plus a same-origin check for state-changing requests that rely on the cookie.
//!
//! **Invariant:** server functions sit behind this same middleware, so no door skips it.

use axum::extract::{Query, Request, State};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderMap, Method, StatusCode, header};
use serde::Deserialize;

use super::scopes;
use crate::server::credentials::COOKIE_NAME;
use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

fn is_public(path: &str) -> bool {
    // A notification's Approve or Deny: its one-time capability is the credential (core
    // checks it), and no cookie or token is ever sent with it.
    if let Some(capability) = path.strip_prefix("/api/v1/push/answers/") {
        return !capability.is_empty() && !capability.contains('/');
    }
    path == "/api/v1/health"
        || path == "/login"
        || path.starts_with("/pkg/")
        || path == "/favicon.ico"
        || path == "/favicon.svg"
        || super::pwa::is_public(path)
}

fn is_state_changing(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A cookie-authenticated write must come from this site: `Sec-Fetch-Site` says so directly;
/// otherwise `Origin` must name this host. A request with neither (not a browser) passes.
fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return site == "same-origin" || site == "none";
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    !host.is_empty() && authority == host
}

/// Checks the credential and records who it is (`Principal`) in the request's extensions,
/// where handlers and server functions read the actor from.
pub async fn require_auth(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    crate::timeline::mark("http: request reached the app");
    let path = req.uri().path();
    let credentials = &state.credentials;
    if is_public(path) {
        // A browser fetching the bundle with its cookie is a person's connection: it is
        // no stranger's (the cap on unauthenticated connections, `listen.rs`).
        if credentials.bearer_ok(req.headers()) || credentials.cookie_ok(req.headers()) {
            mark_authenticated(&req);
        }
        return next.run(req).await;
    }
    let headers = req.headers();
    let principal = if credentials.bearer_ok(headers) {
        Principal::startup_token()
    } else if let Some(secret) = bearer(headers) {
        match state.core.token_principal(secret).await {
            Ok(Some(principal)) => principal,
            Ok(None) => return ApiError::Unauthorized.into_response(),
            Err(err) => return ApiError::Core(err).into_response(),
        }
    } else if credentials.cookie_ok(headers) {
        if is_state_changing(req.method()) && !same_origin(headers) {
            return ApiError::Csrf.into_response();
        }
        Principal::Browser
    } else if let Some(hash) = credentials.named_cookie_hash(headers) {
        // A browser logged in with a named token (a phone with an `approve` token): the token
        // is the principal, looked up each time so a revoke ends the session at once.
        if is_state_changing(req.method()) && !same_origin(headers) {
            return ApiError::Csrf.into_response();
        }
        match state.core.token_principal_by_hash(hash).await {
            Ok(Some(principal)) => principal,
            Ok(None) if req.uri().path().starts_with("/api/") => {
                return ApiError::Unauthorized.into_response();
            }
            Ok(None) => return Redirect::to("/login").into_response(),
            Err(err) => return ApiError::Core(err).into_response(),
        }
    } else {
        let path = req.uri().path();
        if path.starts_with("/api/") || req.method() != Method::GET {
            return ApiError::Unauthorized.into_response();
        }
        return Redirect::to("/login").into_response();
    };
    if !scopes::allows(principal.scope(), req.method(), req.uri().path()) {
        let why = format!(
            "a token with the `{}` scope may not do this",
            principal.scope().as_str()
        );
        return ApiError::Core(crate::server::core::Error::Forbidden(why)).into_response();
    }
    // A person's credential (the browser, an admin or approve token) keeps its connection out
    // of the cap on strangers; an agent's `gates` token does not (it could hold thousands).
    if principal.scope() != crate::server::principal::Scope::Gates {
        mark_authenticated(&req);
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// The connection this request came on has spoken with a credential.
fn mark_authenticated(req: &Request) {
    if let Some(conn) = req.extensions().get::<super::listen::ConnHandle>() {
        conn.authenticated();
    }
}

/// The hash of the named token a request presented (its bearer secret, else its named-token
/// cookie), which is what identifies that exact token: a token made again under the same name
/// has another.
pub fn presented_token_hash(
    credentials: &crate::server::credentials::Credentials,
    headers: &HeaderMap,
) -> Option<String> {
    match bearer(headers) {
        Some(secret) => Some(crate::server::core::secret_hash(secret)),
        None => credentials.named_cookie_hash(headers).map(str::to_owned),
    }
}

/// The bearer secret a request presents, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

#[derive(Deserialize)]
pub struct LoginQuery {
    token: Option<String>,
}

/// `/login?token=…` sets the cookie and goes home; without a valid token, a small login page.
/// The startup token logs in as `browser`; a named `admin` or `approve` token logs in as
/// itself (its scope applies, and it lands on the Inbox); a `gates` token cannot log in.
pub async fn login(State(state): State<AppState>, Query(query): Query<LoginQuery>) -> Response {
    let credentials = &state.credentials;
    let Some(token) = query.token.as_deref().map(str::trim) else {
        return login_page(None).into_response();
    };
    if credentials.token_matches(token) {
        return logged_in(credentials.cookie_value(), "/");
    }
    let refused = |status, why: &str| (status, login_page(Some(why))).into_response();
    match state.core.token_principal(token).await {
        Ok(Some(Principal::Token { scope, .. })) if scope.decides() => {
            let hash = crate::server::core::secret_hash(token);
            logged_in(&credentials.named_cookie_value(&hash), "/inbox")
        }
        Ok(Some(_)) => refused(
            StatusCode::FORBIDDEN,
            "That token has the gates scope: it is for an agent's hook and cannot log in. Use an approve or admin token.",
        ),
        Ok(None) => refused(
            StatusCode::UNAUTHORIZED,
            "That token is not valid. Use the login URL the server printed, or a named token.",
        ),
        Err(err) => ApiError::Core(err).into_response(),
    }
}

/// Sets the session cookie and goes to `to`.
fn logged_in(cookie_value: &str, to: &str) -> Response {
    let cookie = format!(
        "{COOKIE_NAME}={cookie_value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000"
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to(to)).into_response()
}

fn login_page(problem: Option<&str>) -> Html<String> {
    let problem = problem
        .map(|p| format!(r#"<p class="login-error" role="alert">{p}</p>"#))
        .unwrap_or_default();
    Html(format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · Countersign</title><link rel="stylesheet" href="/pkg/countersign.css"></head>
<body class="login"><main class="login-box"><h1>Countersign</h1>
<p>Open the login URL printed when the server started, or paste its access token.</p>{problem}
<form method="get" action="/login"><label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button></form></main></body></html>"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn same_origin_rules() {
        assert!(same_origin(&headers(&[("sec-fetch-site", "same-origin")])));
        assert!(!same_origin(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!same_origin(&headers(&[("sec-fetch-site", "same-site")])));
        assert!(same_origin(&headers(&[
            ("origin", "http://127.0.0.1:9"),
            ("host", "127.0.0.1:9")
        ])));
        assert!(!same_origin(&headers(&[
            ("origin", "http://evil.test"),
            ("host", "127.0.0.1:9")
        ])));
        assert!(!same_origin(&headers(&[
            ("origin", "null"),
            ("host", "127.0.0.1:9")
        ])));
        assert!(same_origin(&headers(&[])));
    }
}
