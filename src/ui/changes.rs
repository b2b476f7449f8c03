//! The page's one follower of the server's change stream (`GET /api/v1/changes`): the session
//! list and the Inbox refetch when a notice says what they show may have changed, instead of
//! polling. Notices within [`WINDOW`] are coalesced into one refetch of what they concern;
//! every (re)connect refetches both once, since notices sent while away are not replayed.

use std::time::Duration;

use leptos::prelude::*;

use crate::protocol::ChangeKind;

/// How long notices are gathered before the lists are fetched again.
pub const WINDOW: Duration = Duration::from_millis(250);

/// What to fetch again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refetch {
    /// The session list (titles, running turns, which sessions exist).
    pub sessions: bool,
    /// The pending gates (the Inbox, and the list's dots).
    pub gates: bool,
}

impl Refetch {
    pub const ALL: Refetch = Refetch {
        sessions: true,
        gates: true,
    };

    /// What a notice of `kind` makes stale.
    pub fn of(kind: ChangeKind) -> Refetch {
        match kind {
            ChangeKind::SessionCreated
            | ChangeKind::SessionRenamed
            | ChangeKind::ModeChanged
            | ChangeKind::TurnStarted
            | ChangeKind::TurnFinished => Refetch {
                sessions: true,
                gates: false,
            },
            ChangeKind::ApprovalOpened | ChangeKind::ApprovalResolved => Refetch {
                sessions: false,
                gates: true,
            },
            // A deleted session's cards go with it; a resync (or a kind this build does not
            // know) may be anything.
            ChangeKind::SessionDeleted | ChangeKind::Resync | ChangeKind::Unknown => Refetch::ALL,
        }
    }

    fn join(self, other: Refetch) -> Refetch {
        Refetch {
            sessions: self.sessions || other.sessions,
            gates: self.gates || other.gates,
        }
    }
}

/// Notices gathered over one window: the first arms the timer, those until it fires join it.
#[derive(Debug, Default)]
pub struct Coalesce {
    pending: Refetch,
    armed: bool,
}

impl Coalesce {
    /// Notes a notice's refetch; `true` when it opens a window (the caller arms the timer).
    pub fn note(&mut self, refetch: Refetch) -> bool {
        self.pending = self.pending.join(refetch);
        let opens = !self.armed && self.pending != Refetch::default();
        self.armed |= opens;
        opens
    }

    /// The window ended: what to fetch again, once.
    pub fn fire(&mut self) -> Refetch {
        self.armed = false;
        std::mem::take(&mut self.pending)
    }
}

/// Counters the lists refetch on: each bumped once per window that concerned it, and on every
/// (re)connect. `Copy`, one per page (see [`Changes::use_or_start`]).
#[derive(Clone, Copy)]
pub struct Changes {
    pub sessions: RwSignal<u64>,
    pub gates: RwSignal<u64>,
}

impl Changes {
    /// The page's change stream: the one a parent provides, else a new one, provided here
    /// and (in the browser) connected for as long as the calling component lives.
    pub fn use_or_start() -> Changes {
        if let Some(changes) = use_context::<Changes>() {
            return changes;
        }
        let changes = Changes {
            sessions: RwSignal::new(0),
            gates: RwSignal::new(0),
        };
        provide_context(changes);
        #[cfg(feature = "hydrate")]
        browser::connect(changes);
        changes
    }

    #[cfg(feature = "hydrate")]
    fn bump(self, refetch: Refetch) {
        if refetch.sessions {
            self.sessions.try_update(|n| *n += 1);
        }
        if refetch.gates {
            self.gates.try_update(|n| *n += 1);
        }
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    //! The EventSource, closed and opened again with backoff on any error (the browser's own
    //! retry stops for good after an HTTP error), as the session feed does.

    use std::cell::RefCell;
    use std::rc::Rc;
    use std::time::Duration;

    use leptos::prelude::*;
    use send_wrapper::SendWrapper;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    use web_sys::{EventSource, MessageEvent};

    use super::{Changes, Coalesce, Refetch, WINDOW};
    use crate::protocol::{Change, ChangeKind};

    struct Link {
        source: EventSource,
        _handlers: Vec<Closure<dyn FnMut(web_sys::Event)>>,
    }

    impl Drop for Link {
        fn drop(&mut self) {
            self.source.close();
        }
    }

    #[derive(Default)]
    struct State {
        link: Option<Link>,
        failures: u32,
        closed: bool,
        coalesce: Coalesce,
    }

    type Shared = Rc<RefCell<State>>;

    pub fn connect(changes: Changes) {
        let state: Shared = Rc::default();
        open(changes, state.clone());
        let cleanup = SendWrapper::new(state);
        on_cleanup(move || {
            let mut state = cleanup.borrow_mut();
            state.closed = true;
            state.link = None;
        });
    }

    fn open(changes: Changes, state: Shared) {
        if state.borrow().closed {
            return;
        }
        let Ok(source) = EventSource::new("/api/v1/changes") else {
            schedule_retry(changes, state);
            return;
        };
        let on_change = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
                let kind = e
                    .dyn_ref::<MessageEvent>()
                    .and_then(|m| m.data().as_string())
                    .and_then(|data| crate::ui::json::from_str::<Change>(&data).ok())
                    .map_or(ChangeKind::Unknown, |change| change.kind);
                noted(changes, state.clone(), Refetch::of(kind));
            })
        };
        let _ =
            source.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        let opened = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                state.borrow_mut().failures = 0;
                // Whatever changed while away was not replayed: fetch both once.
                changes.bump(Refetch::ALL);
            })
        };
        source.set_onopen(Some(opened.as_ref().unchecked_ref()));
        let failed = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                let link = state.borrow_mut().link.take();
                drop(link);
                schedule_retry(changes, state.clone());
            })
        };
        source.set_onerror(Some(failed.as_ref().unchecked_ref()));
        state.borrow_mut().link = Some(Link {
            source,
            _handlers: vec![on_change, opened, failed],
        });
    }

    /// Gathers a notice into the current window, arming its timer when it opens one.
    fn noted(changes: Changes, state: Shared, refetch: Refetch) {
        if !state.borrow_mut().coalesce.note(refetch) {
            return;
        }
        let state = SendWrapper::new(state);
        set_timeout(
            move || {
                let due = state.borrow_mut().coalesce.fire();
                changes.bump(due);
            },
            WINDOW,
        );
    }

    fn schedule_retry(changes: Changes, state: Shared) {
        let failures = {
            let mut s = state.borrow_mut();
            if s.closed {
                return;
            }
            s.failures = s.failures.saturating_add(1);
            s.failures
        };
        let delay = 2u64
            .saturating_pow(failures.saturating_sub(1).min(4))
            .min(15);
        let state = SendWrapper::new(state);
        set_timeout(
            move || open(changes, state.take()),
            Duration::from_secs(delay),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_in_one_window_make_one_refetch_of_what_they_concern() {
        let mut window = Coalesce::default();
        assert!(
            window.note(Refetch::of(ChangeKind::TurnStarted)),
            "the first opens it"
        );
        assert!(!window.note(Refetch::of(ChangeKind::TurnFinished)));
        assert!(!window.note(Refetch::of(ChangeKind::ApprovalOpened)));
        assert_eq!(window.fire(), Refetch::ALL);
        // Fired: nothing is due until the next notice, which opens the next window.
        assert_eq!(window.fire(), Refetch::default());
        assert!(window.note(Refetch::of(ChangeKind::ApprovalResolved)));
        assert_eq!(
            window.fire(),
            Refetch {
                sessions: false,
                gates: true
            }
        );
    }

    #[test]
    fn each_kind_refetches_what_it_makes_stale() {
        let sessions_only = Refetch {
            sessions: true,
            gates: false,
        };
        assert_eq!(Refetch::of(ChangeKind::SessionRenamed), sessions_only);
        assert_eq!(Refetch::of(ChangeKind::ModeChanged), sessions_only);
        assert!(!Refetch::of(ChangeKind::ApprovalOpened).sessions);
        assert_eq!(Refetch::of(ChangeKind::SessionDeleted), Refetch::ALL);
        assert_eq!(Refetch::of(ChangeKind::Resync), Refetch::ALL);
        assert_eq!(Refetch::of(ChangeKind::Unknown), Refetch::ALL);
    }
}
