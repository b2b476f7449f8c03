//! The installable app's files (manifest, service worker, offline page, icons, the pages'
//! small scripts) and the two pages served without the app's bundle: "Notify this device"
//! and "Security" (passkeys).
//!
//! The manifest, the worker, the offline page and the icons are public: browsers fetch a
//! manifest without cookies, and none of them holds anything of the person's.

use axum::extract::{Extension, State};
use axum::response::{Html, IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;

use super::scopes::{Need, Routes};
use crate::server::principal::{Principal, Scope};
use crate::server::state::AppState;

/// The files above (public: none holds anything of the person's) and the two pages, from the
/// site root (`public/` is copied there).
pub fn routes(site_root: &str) -> Routes {
    let file = |name: &str| ServeFile::new(format!("{site_root}/{name}"));
    // A new worker or script is picked up at once, never from a cache.
    let fresh = |name: &str| {
        tower::ServiceBuilder::new()
            .layer(SetResponseHeaderLayer::overriding(
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-cache"),
            ))
            .service(file(name))
    };
    let manifest = tower::ServiceBuilder::new()
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/manifest+json"),
        ))
        .service(file("manifest.webmanifest"));
    let icons = ServeDir::new(format!("{site_root}/icons"));
    Routes::new()
        .files(Need::Public, "/manifest.webmanifest", false, manifest)
        .files(Need::Public, "/sw.js", false, fresh("sw.js"))
        .files(Need::Public, "/pwa.js", false, file("pwa.js"))
        .files(Need::Public, "/notify.js", false, fresh("notify.js"))
        .files(Need::Public, "/passkey.js", false, fresh("passkey.js"))
        .files(Need::Public, "/security.js", false, fresh("security.js"))
        .files(Need::Public, "/offline.html", false, file("offline.html"))
        .files(Need::Public, "/offline.js", false, fresh("offline.js"))
        .files(Need::Public, "/icons", true, icons)
        .get(Need::Read, "/notify", notify_page)
        // An admin's page; another credential is told so on the page itself.
        .get(Need::Read, "/security", security_page)
}

/// "Security": the passkeys (an admin's page; the work is `public/security.js`) and whether
/// the OS boundary holds (rendered here, `http/boundary.rs`).
async fn security_page(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
) -> Response {
    if who.scope() != Scope::Admin {
        return (
            StatusCode::FORBIDDEN,
            Html("<!doctype html><title>Security · Countersign</title><p>Passkeys are managed with an admin credential. <a href=\"/inbox\">Back to the Inbox</a></p>"),
        )
            .into_response();
    }
    let (alert, section) = super::boundary::security_parts(&state).await;
    Html(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Security · Countersign</title>
<link rel="stylesheet" href="/pkg/countersign.css"><link rel="manifest" href="/manifest.webmanifest">
<link rel="icon" type="image/svg+xml" href="/favicon.svg"><script src="/passkey.js" defer></script><script src="/security.js" defer></script></head>
<body class="notify-page"><main class="notify-box">
<p><a href="/inbox">← Inbox</a></p>
<!--os-boundary-alert-->
<h1>Security: passkeys</h1>
<p>With <code>[approvals] require_passkey = "floor"</code> (or <code>"all"</code>) in the config file, answering
such a card needs a fresh confirmation with one of these passkeys, made for that card. Once one is
registered, adding or removing another asks for it first. Lost them all? On the server's machine,
<code>countersign passkey reset</code> removes every one.</p>
<p id="passkey-status" role="status" data-testid="passkey-status"></p>
<p class="notify-actions">
<label for="passkey-name">Name</label> <input id="passkey-name" data-testid="passkey-name" maxlength="64" placeholder="phone">
<button type="button" id="passkey-add" data-testid="passkey-add">Register a passkey</button>
</p>
<h2>Registered passkeys</h2>
<p id="passkey-none" data-testid="passkey-none">None yet.</p>
<ul id="passkey-list" data-testid="passkey-list"></ul>
<!--os-boundary-->
</main></body></html>"#
            .replace("<!--os-boundary-alert-->", &alert)
            .replace("<!--os-boundary-->", &section),
    )
    .into_response()
}

/// "Notify this device": subscribe, test, stop (the work is `public/notify.js`).
async fn notify_page() -> impl IntoResponse {
    Html(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Notify this device · Countersign</title>
<link rel="stylesheet" href="/pkg/countersign.css"><link rel="manifest" href="/manifest.webmanifest">
<link rel="icon" type="image/svg+xml" href="/favicon.svg"><script src="/notify.js" defer></script></head>
<body class="notify-page"><main class="notify-box">
<p><a href="/inbox">← Inbox</a></p>
<h1>Notify this device</h1>
<p>When a card waits for you, this device shows a notification. An ordinary card's notification has
<strong>Approve</strong> and <strong>Deny</strong> on it; a card on the safety floor only opens the card.
Notifications answer as the credential this browser is logged in with.</p>
<p id="push-status" role="status" data-testid="push-status">Checking…</p>
<p class="notify-actions">
<button type="button" id="push-on" data-testid="push-on">Notify this device</button>
<button type="button" id="push-test" data-testid="push-test" hidden>Send a test</button>
<button type="button" id="push-off" data-testid="push-off" hidden>Stop notifying this device</button>
</p>
<h2>Your notified devices</h2>
<ul id="push-list" data-testid="push-list"></ul>
</main></body></html>"#,
    )
}
