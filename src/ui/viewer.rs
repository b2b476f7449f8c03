//! Who is looking: whether the page's credential may do everything (admin), only read and
//! answer cards (an approver, a phone's `approve` token) or only read (a viewer, a `view`
//! token). The page shows only the controls the credential may use; the server checks every
//! call again either way.
//!
//! The server renders it into `<body data-scope>` from the request's credential (and
//! `<body data-modes>` from the configuration in force, `<body data-person>` from the person
//! behind it), and the browser reads it back from there before it hydrates, so both draw the
//! same page.

use leptos::prelude::*;

use crate::protocol::Mode;

/// The page's credential, as far as the UI needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Viewer {
    /// May send messages, change modes, manage sessions, rules, the configuration and tokens.
    pub admin: bool,
    /// May answer cards (approve, edit, deny, allow always): an admin or an approver, never
    /// a viewer.
    pub decides: bool,
    /// The modes a session may be put in while the page was drawn: all of them, unless
    /// `approvals.require_passkey = "all"` holds them to those that open every card.
    pub modes: Modes,
    /// The email of the person behind the credential (signed in, or the maker of its token);
    /// `None` for the admin's own login.
    pub person: Option<String>,
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
        use_context::<Viewer>().unwrap_or_else(|| Viewer::of_scope_attr("", Modes::EVERY, None))
    }

    /// The `data-scope` the shell writes (`admin`, `approve` or `view`).
    pub fn scope_attr(&self) -> &'static str {
        match (self.admin, self.decides) {
            (true, _) => "admin",
            (false, true) => "approve",
            (false, false) => "view",
        }
    }

    /// The viewer a `data-scope` names; anything else may only read.
    pub fn of_scope_attr(scope: &str, modes: Modes, person: Option<String>) -> Viewer {
        Viewer {
            admin: scope == "admin",
            decides: matches!(scope, "admin" | "approve"),
            modes,
            person,
        }
    }

    /// On the server: from the request's credential, and the modes from the configuration in
    /// force (`approvals.require_passkey`).
    #[cfg(feature = "ssr")]
    pub fn of_request() -> Viewer {
        use crate::server::principal::Principal;
        let who = use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>().cloned());
        let modes = use_context::<crate::server::state::AppState>()
            .map(|state| {
                let step_up = state.core.config().config.approvals.require_passkey;
                Modes::of(|mode| step_up.effective_mode(mode) == mode)
            })
            .unwrap_or(Modes::EVERY);
        let scope = who.as_ref().map(|w| w.scope().as_str()).unwrap_or("");
        let person = who
            .as_ref()
            .and_then(|w| w.person_email().map(str::to_owned));
        Viewer::of_scope_attr(scope, modes, person)
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
            let person = Some(body("data-person")).filter(|p| !p.is_empty());
            Viewer::of_scope_attr(
                &body("data-scope"),
                Modes::parse(&body("data-modes")),
                person,
            )
        }
    }
}

/// The email of the person signed in (OpenID Connect, issue 41), or the maker of the page's
/// token, shown in the sidebar; empty for the admin's own login (`Viewer::person`).
pub fn signed_in_person() -> String {
    Viewer::get().person.unwrap_or_default()
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

    #[test]
    fn the_scope_reads_back_as_written_and_anything_else_only_reads() {
        for scope in ["admin", "approve", "view"] {
            let viewer = Viewer::of_scope_attr(scope, Modes::EVERY, None);
            assert_eq!(viewer.scope_attr(), scope);
        }
        let approver = Viewer::of_scope_attr("approve", Modes::EVERY, None);
        assert!(approver.decides && !approver.admin);
        for other in ["", "gates", "Admin", "view", "admin "] {
            let viewer = Viewer::of_scope_attr(other, Modes::EVERY, None);
            assert!(!viewer.admin && !viewer.decides, "{other:?}");
        }
    }
}
