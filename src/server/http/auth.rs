//! Access control for everything but health, login and static assets: a bearer token or the
//! session cookie, plus a same-origin check for state-changing requests that rely on the cookie.
//!
//! **Invariant:** server functions sit behind this same middleware, so no door skips it.

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderMap, Method, StatusCode, header};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::server::http::error::ApiError;
use crate::server::principal::Principal;
use crate::server::state::AppState;

pub const COOKIE_NAME: &str = "countersign_session";

/// The access token. Not `Serialize`, and `Debug` does not print it.
pub struct AccessToken(String);

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(***)")
    }
}

impl AccessToken {
    pub fn new(token: String) -> Self {
        AccessToken(token)
    }

    pub fn reveal(&self) -> &str {
        &self.0
    }
}

/// What the middleware checks against: the token and the cookie value derived from it (the
/// cookie never carries the token itself, so a leaked cookie jar does not leak the API key).
pub struct Auth {
    token: AccessToken,
    cookie_value: String,
}

impl Auth {
    pub fn new(token: AccessToken) -> Self {
        let digest = Sha256::digest(format!("countersign-cookie:{}", token.reveal()));
        Auth {
            cookie_value: hex::encode(digest),
            token,
        }
    }

    pub fn token(&self) -> &AccessToken {
        &self.token
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), self.token.0.as_bytes()))
    }

    fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| {
                name == COOKIE_NAME
                    && constant_time_eq(value.as_bytes(), self.cookie_value.as_bytes())
            })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn is_public(path: &str) -> bool {
    path == "/api/v1/health"
        || path == "/login"
        || path.starts_with("/pkg/")
        || path == "/favicon.ico"
        || path == "/favicon.svg"
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
    let path = req.uri().path();
    if is_public(path) {
        return next.run(req).await;
    }
    let auth = &state.auth;
    let headers = req.headers();
    if auth.bearer_ok(headers) {
        req.extensions_mut().insert(Principal::startup_token());
        return next.run(req).await;
    }
    if auth.cookie_ok(headers) {
        if is_state_changing(req.method()) && !same_origin(headers) {
            return ApiError::Csrf.into_response();
        }
        req.extensions_mut().insert(Principal::Browser);
        return next.run(req).await;
    }
    let path = req.uri().path();
    if path.starts_with("/api/") || req.method() != Method::GET {
        return ApiError::Unauthorized.into_response();
    }
    Redirect::to("/login").into_response()
}

#[derive(Deserialize)]
pub struct LoginQuery {
    token: Option<String>,
}

/// `/login?token=…` sets the cookie and goes home; without a valid token, a small login page.
pub async fn login(State(state): State<AppState>, Query(query): Query<LoginQuery>) -> Response {
    let auth: &Arc<Auth> = &state.auth;
    match query.token.as_deref().map(str::trim) {
        Some(token) if constant_time_eq(token.as_bytes(), auth.token.0.as_bytes()) => {
            let cookie = format!(
                "{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000",
                auth.cookie_value
            );
            ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
        }
        Some(_) => (
            StatusCode::UNAUTHORIZED,
            login_page(Some(
                "That token is not valid. Use the login URL the server printed.",
            )),
        )
            .into_response(),
        None => login_page(None).into_response(),
    }
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

    #[test]
    fn bearer_and_cookie_are_checked_exactly() {
        let auth = Auth::new(AccessToken::new("secret".into()));
        assert!(auth.bearer_ok(&headers(&[("authorization", "Bearer secret")])));
        assert!(!auth.bearer_ok(&headers(&[("authorization", "Bearer secre")])));
        assert!(!auth.bearer_ok(&headers(&[("authorization", "secret")])));
        let cookie = format!("a=b; {COOKIE_NAME}={}", auth.cookie_value);
        assert!(auth.cookie_ok(&headers(&[("cookie", &cookie)])));
        assert!(!auth.cookie_ok(&headers(&[("cookie", "countersign_session=secret")])));
        assert!(!format!("{:?}", auth.token()).contains("secret"));
    }
}
