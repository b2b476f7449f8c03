//! Who is asking: a bearer token or the session cookie (a cookie-authenticated write must come
//! from this site), and the login page that sets the cookie. What each route needs of the one
//! asking is declared with the route and checked in front of it (`scopes`).
//!
//! **Invariant 34** ([ARCHITECTURE.md](../../../ARCHITECTURE.md#invariants)): every request but health, login and assets passes this middleware.

use axum::extract::{Query, Request, State};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderMap, Method, header};
use serde::Deserialize;

use crate::server::core::{Error as CoreError, LoggedIn, LoginWith};
use crate::server::credentials;
use crate::server::http::error::ApiError;
use crate::server::logins::Presented;
use crate::server::state::AppState;

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

/// A cookie-authenticated write that did not come from this site: every route that needs a
/// credential refuses it (`403 csrf`); public routes do not look.
#[derive(Clone, Copy, Debug)]
pub struct CrossSite;

/// The credential presented could not be looked up (the store is down): every route that
/// needs one answers `503 storage_unavailable`; public routes do not look.
#[derive(Clone, Copy, Debug)]
pub struct LookupFailed;

/// Finds who is asking and records it in the request's extensions (`Principal`, and what it
/// presented, `Presented`, by hash), where each route's check (`scopes`), handlers and
/// server functions read it. Refuses nothing itself: what a route needs is declared with the
/// route, and a request with no credential that authenticates simply has no principal.
pub async fn require_auth(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    crate::timeline::mark("http: request reached the app");
    let Some(presented) = credentials::presented(req.headers()) else {
        return next.run(req).await;
    };
    // A cookie travels with every request the browser makes, a bearer only with ours: a write
    // that relies on the cookie must come from this site.
    if matches!(presented, Presented::Cookie(_))
        && is_state_changing(req.method())
        && !same_origin(req.headers())
    {
        req.extensions_mut().insert(CrossSite);
        return next.run(req).await;
    }
    let principal = match state.core.who_presented(&presented).await {
        Ok(Some(principal)) => principal,
        Ok(None) => return next.run(req).await,
        // Nobody can be found: a public route still answers; any other says the store is
        // down (`503`), as the operation itself would.
        Err(err) => {
            tracing::warn!(error = %err, "could not look up a credential");
            req.extensions_mut().insert(LookupFailed);
            return next.run(req).await;
        }
    };
    // A person's credential (the browser, an admin or approve token) keeps its connection out
    // of the cap on strangers; an agent's `gates` token does not (it could hold thousands).
    if principal.scope() != crate::server::principal::Scope::Gates {
        mark_authenticated(&req);
    }
    super::person_now::attach(&state, &principal, &mut req).await;
    req.extensions_mut().insert(principal);
    req.extensions_mut().insert(presented);
    next.run(req).await
}

/// A request with no credential that authenticates: `401` for the API and for writes, the
/// login page for a page.
pub(super) fn unauthenticated(req: &Request) -> Response {
    // Under a nested router the path is the part after its prefix: the request's own is kept.
    let path = req
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .map_or_else(|| req.uri().path(), |original| original.path());
    if path.starts_with("/api/") || req.method() != Method::GET {
        return ApiError::Unauthorized.into_response();
    }
    Redirect::to("/login").into_response()
}

/// The connection this request came on has spoken with a credential.
fn mark_authenticated(req: &Request) {
    if let Some(conn) = req.extensions().get::<super::listen::ConnHandle>() {
        conn.authenticated();
    }
}

#[derive(Deserialize)]
pub struct LoginQuery {
    code: Option<String>,
    token: Option<String>,
}

/// `/login?code=…` (a login link: `countersign login` prints one) or `/login?token=…` logs the
/// browser in (a cookie whose hash alone is kept) and goes home; without either, a small login
/// page. A login link and the admin token log in as `browser`; a named `admin` or `approve`
/// token logs in as itself (its scope applies, and it lands on the Inbox); a `gates` token
/// cannot log in.
pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Response {
    let with = match (query.code.as_deref(), query.token.as_deref()) {
        (Some(code), _) => LoginWith::Code(code.trim()),
        (None, Some(token)) => LoginWith::Token(token.trim()),
        (None, None) => return login_page(None, &state).into_response(),
    };
    // A link followed from a page — another site's, or one on this site that shows what
    // someone else wrote (a card's markdown) — could swap this browser's login for one its
    // author holds (login CSRF): the person confirms it here, with a form only this site
    // can post.
    if !logs_in_at_once(&headers) {
        // It holds the code: no cache keeps it (a shared machine's back button, a proxy).
        let no_store = [(header::CACHE_CONTROL, "no-store")];
        return (no_store, confirm_login_page(&with)).into_response();
    }
    log_in(&state, &headers, with).await
}

/// Whether a login link may log in without a confirmation: only when the browser says no page
/// started the navigation (`Sec-Fetch-Site: none`: typed, pasted, bookmarked, scanned, opened
/// from a terminal), or when the request is plainly no browser navigation (no
/// `Sec-Fetch-Site` and no `Accept` naming `text/html`: curl, the CLI, scripts). Everything
/// else is confirmed: `same-origin` too (a relative link in a card), and a browser that sends
/// no `Sec-Fetch-*` at all (plain http on a LAN address is no secure context).
fn logs_in_at_once(headers: &HeaderMap) -> bool {
    match headers.get("sec-fetch-site") {
        Some(site) => site
            .to_str()
            .is_ok_and(|site| site.trim().eq_ignore_ascii_case("none")),
        None => !accepts_html(headers),
    }
}

/// Whether the request asks for a page (`Accept` names `text/html`), as a browser's
/// navigation does.
fn accepts_html(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT).iter().any(|accept| {
        String::from_utf8_lossy(accept.as_bytes())
            .to_ascii_lowercase()
            .contains("text/html")
    })
}

/// The login page's form (a token), or the confirmation of a link followed from another site
/// (its code or token): in the body, so it lands in no URL (history, logs).
#[derive(Deserialize)]
pub struct LoginForm {
    token: Option<String>,
    code: Option<String>,
}

/// The login page's form. Only from this site: a form posted from elsewhere could log a
/// browser in as someone else.
pub async fn login_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<LoginForm>,
) -> Response {
    if !same_origin(&headers) {
        return ApiError::Csrf.into_response();
    }
    let with = match (form.code.as_deref(), form.token.as_deref()) {
        (Some(code), _) => LoginWith::Code(code.trim()),
        (None, Some(token)) => LoginWith::Token(token.trim()),
        (None, None) => {
            return login_page(Some("paste a token to log in"), &state).into_response();
        }
    };
    log_in(&state, &headers, with).await
}

/// Logs the browser in `with` a code or a token: its cookie and where it lands, or the login
/// page saying why not.
async fn log_in(state: &AppState, headers: &HeaderMap, with: LoginWith<'_>) -> Response {
    let device = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(crate::server::logins::device_of)
        .unwrap_or_else(|| crate::server::logins::device_of(""));
    match state.core.log_in(with, &device).await {
        Ok(LoggedIn { cookie, landing }) => (
            [(header::SET_COOKIE, credentials::login_cookie(&cookie))],
            Redirect::to(landing),
        )
            .into_response(),
        Err(err @ (CoreError::Unauthorized(_) | CoreError::Forbidden(_))) => {
            let status = err.status();
            (status, login_page(Some(&err.to_string()), state)).into_response()
        }
        Err(err) => ApiError::Core(err).into_response(),
    }
}

/// `text` safe inside HTML text and a double-quoted attribute.
pub(super) fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Asks before a link followed from another site logs this browser in: nothing is spent or
/// set until the person presses the button (a form this site alone can post).
fn confirm_login_page(with: &LoginWith<'_>) -> Html<String> {
    let (field, value) = match with {
        LoginWith::Code(code) => ("code", escaped(code)),
        LoginWith::Token(token) => ("token", escaped(token)),
    };
    Html(format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in? · Countersign</title><link rel="stylesheet" href="/pkg/countersign.css"></head>
<body class="login"><main class="login-box"><h1>Countersign</h1>
<p role="alert">This login link was opened from a page, not typed or pasted. Log in only if you opened it yourself: a link someone else wrote could log this browser in as them, and anything you then approve would be theirs.</p>
<form method="post" action="/login"><input type="hidden" name="{field}" value="{value}">
<button type="submit" data-action="confirm-login">Log in on this browser</button> <a href="/">Cancel</a></form></main></body></html>"#
    ))
}

/// "Sign in with <provider>" when `[auth.oidc]` names one (issue 41).
fn sign_in_link(state: &AppState) -> String {
    let live = state.core.config();
    live.config
        .auth
        .oidc
        .as_ref()
        .map(|oidc| {
            format!(
                r#"<p><a class="sign-in" href="/auth/oidc/start" data-action="sign-in-oidc">Sign in with {}</a></p>"#,
                escaped(&oidc.name)
            )
        })
        .unwrap_or_default()
}

fn login_page(problem: Option<&str>, state: &AppState) -> Html<String> {
    let problem = problem
        .map(|p| format!(r#"<p class="login-error" role="alert">{}</p>"#, escaped(p)))
        .unwrap_or_default();
    let sign_in = sign_in_link(state);
    Html(format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · Countersign</title><link rel="stylesheet" href="/pkg/countersign.css"></head>
<body class="login"><main class="login-box"><h1>Countersign</h1>
{sign_in}<p>Open a login link: <code>countersign login</code> on the server's machine prints a fresh one (it works once, for 15 minutes). Or paste a token.</p>{problem}
<form method="post" action="/login"><label for="token">Token</label>
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

    /// Only a navigation no page started logs in at once, or a client that is no browser;
    /// every other spelling of a followed link is confirmed first.
    #[test]
    fn only_a_link_no_page_started_logs_in_at_once() {
        for site in ["none", "None", " none "] {
            assert!(
                logs_in_at_once(&headers(&[("sec-fetch-site", site)])),
                "{site}"
            );
        }
        for site in [
            "cross-site",
            "same-site",
            "same-origin",
            "",
            "nonee",
            "none, none",
        ] {
            assert!(
                !logs_in_at_once(&headers(&[("sec-fetch-site", site)])),
                "{site}"
            );
            assert!(
                !logs_in_at_once(&headers(&[("sec-fetch-site", site), ("accept", "*/*")])),
                "{site} with a plain Accept"
            );
        }
        // No Sec-Fetch-* (plain http on a LAN): a browser asks for a page, so it confirms.
        for accept in [
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "TEXT/HTML",
            "application/xml, text/html;q=0.1",
        ] {
            assert!(
                !logs_in_at_once(&headers(&[("accept", accept)])),
                "{accept}"
            );
        }
        assert!(logs_in_at_once(&headers(&[])));
        assert!(logs_in_at_once(&headers(&[("accept", "*/*")])));
        assert!(logs_in_at_once(&headers(&[("accept", "application/json")])));
    }

    #[test]
    fn the_confirmation_carries_the_code_escaped_in_a_form_only_this_site_posts() {
        let page = confirm_login_page(&LoginWith::Code("csl_a\"><script>x</script>")).0;
        assert!(
            page.contains(r#"name="code" value="csl_a&quot;&gt;&lt;script&gt;"#),
            "{page}"
        );
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains(r#"method="post" action="/login""#), "{page}");
    }
}
