//! The OpenID Connect sign-in's two routes (issue 41): `GET /auth/oidc/start` sends the
//! browser to the provider (its pending sign-in kept under a short-lived HttpOnly flow
//! cookie), `GET /auth/oidc/callback` finishes it (core checks everything) and logs the
//! browser in as the person, or says plainly why not.

use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;

use crate::server::core::{Error as CoreError, SignedIn};
use crate::server::credentials;
use crate::server::http::error::ApiError;
use crate::server::oidc::Provider;
use crate::server::state::AppState;

/// The flow cookie: which pending sign-in this browser started. `Lax`, so the provider's
/// redirect back (a navigation from its site) carries it; only under `/auth/oidc`.
const FLOW_COOKIE: &str = "countersign_oidc";

fn flow_cookie(value: &str, max_age_secs: i64) -> String {
    format!(
        "{FLOW_COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/auth/oidc; Max-Age={max_age_secs}"
    )
}

/// The flow cookie's value, when the request carries one that could be ours.
fn flow_of(headers: &HeaderMap) -> Option<&str> {
    credentials::our_cookie(headers, FLOW_COOKIE)
}

/// Where the provider sends the person back: `server.public_url`, else this request's host.
fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    let live = state.core.config();
    let public = live.config.server.public_url.trim();
    if !public.is_empty() {
        return public.to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// The provider `[auth.oidc]` names, or the page saying there is none.
fn provider(state: &AppState, headers: &HeaderMap) -> Result<Provider, Box<Response>> {
    match state.core.oidc_provider(&base_url(state, headers)) {
        Ok(Some(provider)) => Ok(provider),
        Ok(None) => Err(Box::new(page(
            StatusCode::NOT_FOUND,
            "Sign-in with a provider is not set up on this server.",
        ))),
        Err(err) => {
            tracing::error!(error = %err, "the OpenID Connect provider is not usable");
            Err(Box::new(page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign-in with a provider is not available now: the server's log says why.",
            )))
        }
    }
}

/// `GET /auth/oidc/start`.
pub async fn start(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let provider = match provider(&state, &headers) {
        Ok(provider) => provider,
        Err(page) => return *page,
    };
    match state.core.start_sign_in(&provider).await {
        Ok(started) => {
            let no_store = (header::CACHE_CONTROL, "no-store".to_owned());
            let cookie = (
                header::SET_COOKIE,
                flow_cookie(&started.flow, crate::server::core::SIGN_IN_SECS),
            );
            ([no_store, cookie], Redirect::to(&started.url)).into_response()
        }
        Err(CoreError::Internal(_)) => page(
            StatusCode::BAD_GATEWAY,
            "The sign-in provider could not be reached. Try again in a moment.",
        ),
        Err(err) => ApiError::Core(err).into_response(),
    }
}

#[derive(Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// What the page says of a provider's refusal: its error code when it is one (`access_denied`,
/// lowercase letters and `_`), never its free-text `error_description` — anyone can send a
/// person this address with any words in it, and the page must not speak them.
fn provider_error_shown(error: Option<&str>) -> String {
    match error {
        Some(code)
            if !code.is_empty()
                && code.len() <= 64
                && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
        {
            format!("`{code}`")
        }
        _ => "the provider sent no code".into(),
    }
}

/// `GET /auth/oidc/callback`.
pub async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<Callback>,
) -> Response {
    let provider = match provider(&state, &headers) {
        Ok(provider) => provider,
        Err(page) => return *page,
    };
    let (Some(code), Some(given_state)) = (query.code.as_deref(), query.state.as_deref()) else {
        let why = provider_error_shown(query.error.as_deref());
        return page(
            StatusCode::FORBIDDEN,
            &format!("The provider did not sign you in: {why}"),
        );
    };
    let device = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map_or_else(
            || crate::server::logins::device_of(""),
            crate::server::logins::device_of,
        );
    let finished = state
        .core
        .finish_sign_in(&provider, flow_of(&headers), given_state, code, &device)
        .await;
    let forget_flow = (header::SET_COOKIE, flow_cookie("", 0));
    match finished {
        Ok(SignedIn { cookie, email }) => signed_in(&cookie, &email, forget_flow),
        Err(err @ (CoreError::Unauthorized(_) | CoreError::Forbidden(_))) => {
            let mut refused = page(err.status(), &err.to_string());
            if let Ok(value) = flow_cookie("", 0).parse() {
                refused.headers_mut().append(header::SET_COOKIE, value);
            }
            refused
        }
        Err(err) => ApiError::Core(err).into_response(),
    }
}

/// The browser logged in: its session cookie, and a page that goes home by itself. Not a
/// redirect: the session cookie is `SameSite=Strict`, and a redirect would still belong to
/// the provider's navigation, which does not send it.
fn signed_in(cookie: &str, email: &str, forget_flow: (header::HeaderName, String)) -> Response {
    let session = (header::SET_COOKIE, credentials::login_cookie(cookie));
    let mut response = (
        [session, (header::CACHE_CONTROL, "no-store".into())],
        Html(format!(
            r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">
<title>Signed in · Countersign</title><link rel="stylesheet" href="/pkg/countersign.css"></head>
<body class="login"><main class="login-box"><h1>Countersign</h1>
<p data-testid="signed-in">Signed in as {}.</p><p><a href="/">Continue</a></p></main></body></html>"#,
            super::auth::escaped(email)
        )),
    )
        .into_response();
    if let Ok(value) = forget_flow.1.parse() {
        response.headers_mut().append(forget_flow.0, value);
    }
    response
}

/// A page saying why a sign-in did not happen, with a way back to the login page.
fn page(status: StatusCode, words: &str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        Html(format!(
            r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not signed in · Countersign</title><link rel="stylesheet" href="/pkg/countersign.css"></head>
<body class="login"><main class="login-box"><h1>Countersign</h1>
<p class="login-error" role="alert" data-testid="sign-in-refused">{}</p><p><a href="/login">Back to the login page</a></p></main></body></html>"#,
            super::auth::escaped(words)
        )),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only an error code is shown; a description or anything else anyone put in the link
    /// is not.
    #[test]
    fn a_providers_refusal_is_shown_by_its_code_only() {
        assert_eq!(
            provider_error_shown(Some("access_denied")),
            "`access_denied`"
        );
        for odd in [
            Some("Your account is locked, call +1 555"),
            Some("<b>x</b>"),
            Some(""),
            Some("ACCESS_DENIED"),
            None,
        ] {
            assert_eq!(
                provider_error_shown(odd),
                "the provider sent no code",
                "{odd:?}"
            );
        }
    }

    #[test]
    fn the_flow_cookie_is_read_only_when_it_could_be_ours() {
        let mut h = HeaderMap::new();
        let value = "a".repeat(43);
        h.insert(
            header::COOKIE,
            format!("x=1; {FLOW_COOKIE}=short; {FLOW_COOKIE}={value}")
                .parse()
                .unwrap(),
        );
        assert_eq!(flow_of(&h), Some(value.as_str()));
        assert_eq!(flow_of(&HeaderMap::new()), None);
        let set = flow_cookie(&value, 600);
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Lax"),
            "{set}"
        );
    }
}
