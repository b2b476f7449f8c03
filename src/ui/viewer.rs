//! Who is looking: whether the page's credential may do everything (admin) or only read and
//! answer cards (a phone's `approve` token). The page shows only the controls the credential
//! may use; the server checks every call again either way.
//!
//! The server renders it into `<body data-scope>` from the request's credential, and the
//! browser reads it back from there before it hydrates, so both draw the same page.

use leptos::prelude::*;

/// The page's credential, as far as the UI needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewer {
    /// May send messages, change modes, manage sessions, rules, the configuration and tokens.
    pub admin: bool,
}

impl Viewer {
    /// The viewer of this page (admin when nobody said otherwise: the server still checks).
    pub fn get() -> Viewer {
        use_context::<Viewer>().unwrap_or(Viewer { admin: true })
    }

    /// The `data-scope` the shell writes (`admin` or `approve`).
    pub fn scope_attr(self) -> &'static str {
        if self.admin { "admin" } else { "approve" }
    }

    /// On the server: from the request's credential.
    #[cfg(feature = "ssr")]
    pub fn of_request() -> Viewer {
        use crate::server::principal::{Principal, Scope};
        let admin = use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().map(Principal::scope))
            .is_none_or(|scope| scope == Scope::Admin);
        Viewer { admin }
    }

    /// Where the page is drawn: the request's credential on the server, the attribute the
    /// server wrote in the browser.
    pub fn current() -> Viewer {
        #[cfg(feature = "ssr")]
        return Viewer::of_request();
        #[cfg(not(feature = "ssr"))]
        {
            #[cfg(feature = "hydrate")]
            let scope = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.body())
                .and_then(|b| b.get_attribute("data-scope"))
                .unwrap_or_default();
            #[cfg(not(feature = "hydrate"))]
            let scope = String::new();
            Viewer {
                admin: scope != "approve",
            }
        }
    }
}
