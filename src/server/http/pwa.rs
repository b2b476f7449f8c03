//! The installable app's files: manifest, service worker, offline page, icons, and the small
//! scripts that work the "Notify this device" and "Security" pages' controls (the pages
//! themselves are the app's: `ui/notify_page.rs`, `ui/security_page.rs`).
//!
//! The manifest, the worker, the offline page and the icons are public: browsers fetch a
//! manifest without cookies, and none of them holds anything of the person's.

use http::{HeaderValue, header};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;

use super::scopes::{Need, Routes};

/// The files above (public: none holds anything of the person's), from the site root
/// (`public/` is copied there).
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
}
