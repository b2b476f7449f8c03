//! Who is looking: whether the page's credential may do everything (admin) or only read and
//! answer cards (a phone's `approve` token). The page shows only the controls the credential
//! may use; the server checks every call again either way.
//!
//! The server renders it into `<body data-scope>` from the request's credential (and
//! `<body data-modes>` from the configuration in force), and the browser reads it back from
//! there before it hydrates, so both draw the same page.

use leptos::prelude::*;

use crate::protocol::Mode;

/// The page's credential, as far as the UI needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewer {
    /// May send messages, change modes, manage sessions, rules, the configuration and tokens.
    pub admin: bool,
    /// The modes a session may be put in while the page was drawn: all of them, unless
    /// `approvals.require_passkey = "all"` holds them to those that open every card.
    pub modes: Modes,
}

/// Which modes a session may be put in (`RequirePasskey::effective_mode` keeps a mode as it
/// is), as the server wrote them into `<body data-modes>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modes([bool; Mode::ALL.len()]);

impl Modes {
    /// Every mode (what the page assumes when the server said nothing: the server checks).
    pub const EVERY: Modes = Modes([true; Mode::ALL.len()]);

    /// The modes `allowed` keeps.
    pub fn of(allowed: impl Fn(Mode) -> bool) -> Modes {
        Modes(Mode::ALL.map(allowed))
    }

    pub fn allows(self, mode: Mode) -> bool {
        Mode::ALL
            .iter()
            .position(|m| *m == mode)
            .is_some_and(|i| self.0[i])
    }

    /// `data-modes`: the allowed modes' wire names, space-separated.
    pub fn attr(self) -> String {
        Mode::ALL
            .into_iter()
            .filter(|m| self.allows(*m))
            .map(Mode::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Read back from `data-modes`; absent or empty, every mode.
    pub fn parse(attr: &str) -> Modes {
        let named: Vec<Mode> = attr.split_whitespace().filter_map(Mode::parse).collect();
        if named.is_empty() {
            Modes::EVERY
        } else {
            Modes::of(|m| named.contains(&m))
        }
    }
}

impl Viewer {
    /// The viewer of this page: the narrowest when nobody said otherwise (no admin control is
    /// drawn for a credential the page could not name; the server checks all the same).
    pub fn get() -> Viewer {
        use_context::<Viewer>().unwrap_or(Viewer {
            admin: false,
            modes: Modes::EVERY,
        })
    }

    /// The `data-scope` the shell writes (`admin` or `approve`).
    pub fn scope_attr(self) -> &'static str {
        if self.admin { "admin" } else { "approve" }
    }

    /// On the server: from the request's credential, and the modes from the configuration in
    /// force (`approvals.require_passkey`).
    #[cfg(feature = "ssr")]
    pub fn of_request() -> Viewer {
        use crate::server::principal::{Principal, Scope};
        let admin = use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().map(Principal::scope))
            .is_some_and(|scope| scope == Scope::Admin);
        let modes = use_context::<crate::server::state::AppState>()
            .map(|state| {
                let step_up = state.core.config().config.approvals.require_passkey;
                Modes::of(|mode| step_up.effective_mode(mode) == mode)
            })
            .unwrap_or(Modes::EVERY);
        Viewer { admin, modes }
    }

    /// Where the page is drawn: the request's credential on the server, the attribute the
    /// server wrote in the browser.
    pub fn current() -> Viewer {
        #[cfg(feature = "ssr")]
        return Viewer::of_request();
        #[cfg(not(feature = "ssr"))]
        {
            #[cfg(feature = "hydrate")]
            let body = |name: &str| {
                web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.body())
                    .and_then(|b| b.get_attribute(name))
                    .unwrap_or_default()
            };
            #[cfg(not(feature = "hydrate"))]
            let body = |_: &str| String::new();
            Viewer {
                admin: body("data-scope") == "admin",
                modes: Modes::parse(&body("data-modes")),
            }
        }
    }
}

/// The email of the person signed in (OpenID Connect, issue 41), shown in the sidebar; empty
/// for any other credential. The server writes it into `<body data-person>`, the browser reads
/// it back from there, so both draw the same page.
pub fn signed_in_person() -> String {
    #[cfg(feature = "ssr")]
    {
        use crate::server::principal::Principal;
        use_context::<http::request::Parts>()
            .and_then(|parts| {
                let who = parts.extensions.get::<Principal>()?;
                who.person_email().map(str::to_owned)
            })
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        thread_local! {
            static PERSON: String = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.body())
                .and_then(|b| b.get_attribute("data-person"))
                .unwrap_or_default();
        }
        PERSON.with(String::clone)
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modes_read_back_as_written() {
        let held = Modes::of(|m| matches!(m, Mode::Plan | Mode::Ask));
        assert_eq!(held.attr(), "plan ask");
        assert_eq!(Modes::parse(&held.attr()), held);
        assert!(held.allows(Mode::Ask) && !held.allows(Mode::Yolo));
        assert_eq!(Modes::parse(""), Modes::EVERY);
        assert_eq!(Modes::parse("nonsense"), Modes::EVERY);
        assert_eq!(Modes::EVERY.attr(), "plan ask auto_edit yolo");
    }
}
