//! The page's follower of the server's change stream (`GET /api/v1/changes`): the session
//! list and the Inbox refetch when a notice says what they show may have changed, instead of
//! polling. Notices within [`WINDOW`] are coalesced into one refetch of what they concern;
//! every (re)connect refetches both once, since notices sent while away are not replayed.
//!
//! One connection per browser, not per tab: over plain HTTP/1.1 a browser opens at most six
//! connections to a host, and a session tab already holds its own feed. Were every tab to hold
//! its own change stream too, three session tabs would take all six, and every other request
//! from any tab (server functions, page loads) would wait for one to close. So the tabs elect
//! one holder with a Web Lock ([`SHARED_NAME`]; the next tab takes it over when the holder
//! closes or leaves the page), and the holder relays what it hears on a `BroadcastChannel` of
//! the same name ([`Relayed`]). Where either is missing (Web Locks need a secure context:
//! https, localhost — not a plain `http://` LAN address) each tab holds its own stream, but
//! only while it is visible: a hidden tab lets go of it and refetches when it is shown again,
//! so tabs in the background never hold connections the one in front needs.

use std::time::Duration;

use leptos::prelude::*;

use crate::protocol::{Change, ChangeKind};

/// The Web Lock that elects the tab holding the connection, and the `BroadcastChannel` it
/// relays notices on.
pub const SHARED_NAME: &str = "countersign-changes";

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

/// What a message on the tabs' channel asks of the tab that hears it. The holder posts the
/// stream's data verbatim for a notice, [`Relayed::RECONNECTED`] on every (re)open and
/// [`Relayed::LOST`] when its stream breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relayed {
    /// The holder's stream (re)opened: what changed while nobody held it was not replayed, so
    /// everything is fetched again, at once.
    Reconnected,
    /// The holder's stream broke: each tab checks whether the server can still be reached
    /// (`reach::lost`), and says so while it cannot.
    Lost,
    /// A notice, gathered into the window as the tab's own would be.
    Notice(ChangeKind),
}

impl Relayed {
    pub const RECONNECTED: &'static str = "reconnected";
    pub const LOST: &'static str = "lost";

    /// Reads a channel message. Anything this build cannot read (not a string, not a notice)
    /// is a notice of a kind it does not know: everything is fetched again.
    pub fn read(message: Option<&str>) -> Relayed {
        match message {
            Some(Self::RECONNECTED) => Relayed::Reconnected,
            Some(Self::LOST) => Relayed::Lost,
            Some(data) => Relayed::Notice(notice_kind(data)),
            None => Relayed::Notice(ChangeKind::Unknown),
        }
    }

    /// What it makes stale.
    pub fn refetch(self) -> Refetch {
        match self {
            Relayed::Reconnected => Refetch::ALL,
            Relayed::Lost => Refetch::default(),
            Relayed::Notice(kind) => Refetch::of(kind),
        }
    }
}

/// The kind of a notice, read from the stream's data; `Unknown` when it cannot be read.
pub fn notice_kind(data: &str) -> ChangeKind {
    crate::ui::json::from_str::<Change>(data).map_or(ChangeKind::Unknown, |change| change.kind)
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
    //! retry stops for good after an HTTP error), as the session feed does; held by one tab
    //! and relayed to the others (see [`shared`]) where the browser allows.

    use std::cell::RefCell;
    use std::rc::Rc;

    use leptos::prelude::*;
    use send_wrapper::SendWrapper;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::JsValue;
    use wasm_bindgen::closure::Closure;
    use web_sys::{EventSource, MessageEvent};

    use super::{Changes, Coalesce, Refetch, Relayed, WINDOW, notice_kind};
    use crate::ui::stream::Link;

    #[derive(Default)]
    struct State {
        link: Option<Link>,
        failures: u32,
        closed: bool,
        coalesce: Coalesce,
        /// The tabs' channel, when they share one stream: where this tab hears the holder,
        /// and where it relays when it holds the stream itself.
        channel: Option<shared::Channel>,
        /// Resolves the promise this tab holds the lock with: calling it lets the next tab
        /// take the stream over.
        release: Option<js_sys::Function>,
        /// With a stream of its own (no shared one): the `visibilitychange` listener that
        /// closes it while the tab is hidden and opens it again when it is shown.
        visibility: Option<Closure<dyn FnMut(web_sys::Event)>>,
    }

    type Shared = Rc<RefCell<State>>;

    pub fn connect(changes: Changes) {
        let state: Shared = Rc::default();
        if !shared::join(changes, &state) {
            open(changes, state.clone());
            follow_visibility(changes, &state);
        }
        let cleanup = SendWrapper::new(state);
        on_cleanup(move || {
            // Taken out first: dropping or resolving them runs browser code.
            let (link, channel, release, visibility) = {
                let mut state = cleanup.borrow_mut();
                state.closed = true;
                (
                    state.link.take(),
                    state.channel.take(),
                    state.release.take(),
                    state.visibility.take(),
                )
            };
            drop(link);
            drop(channel);
            if let (Some(listener), Some(document)) = (visibility, document()) {
                let _ = document.remove_event_listener_with_callback(
                    "visibilitychange",
                    listener.as_ref().unchecked_ref(),
                );
            }
            if let Some(release) = release {
                let _ = release.call0(&JsValue::UNDEFINED);
            }
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
                let data = e
                    .dyn_ref::<MessageEvent>()
                    .and_then(|m| m.data().as_string());
                changed(changes, state.clone(), data.as_deref());
            })
        };
        let _ =
            source.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        let opened = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                state.borrow_mut().failures = 0;
                crate::ui::reach::reached();
                // Whatever changed while away was not replayed: fetch both once, here and in
                // the tabs that listen.
                relay(&state, Relayed::RECONNECTED);
                changes.bump(Refetch::ALL);
            })
        };
        source.set_onopen(Some(opened.as_ref().unchecked_ref()));
        let failed = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                let link = state.borrow_mut().link.take();
                drop(link);
                crate::ui::reach::lost();
                relay(&state, Relayed::LOST);
                schedule_retry(changes, state.clone());
            })
        };
        source.set_onerror(Some(failed.as_ref().unchecked_ref()));
        state.borrow_mut().link = Some(Link {
            source,
            handlers: vec![on_change, opened, failed],
        });
    }

    fn document() -> Option<web_sys::Document> {
        web_sys::window().and_then(|w| w.document())
    }

    /// A stream of this tab's own is held only while the tab is shown: hidden, it is closed;
    /// shown again, it is opened (and its `open` refetches everything once).
    fn follow_visibility(changes: Changes, state: &Shared) {
        let Some(page) = document() else {
            return;
        };
        let listener = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                let hidden = document().is_some_and(|d| d.hidden());
                if hidden {
                    let link = state.borrow_mut().link.take();
                    drop(link);
                } else if state.borrow().link.is_none() {
                    state.borrow_mut().failures = 0;
                    open(changes, state.clone());
                }
            })
        };
        let _ = page.add_event_listener_with_callback(
            "visibilitychange",
            listener.as_ref().unchecked_ref(),
        );
        state.borrow_mut().visibility = Some(listener);
    }

    /// A notice from this tab's own stream: relayed to the other tabs, and noted here.
    fn changed(changes: Changes, state: Shared, data: Option<&str>) {
        if let Some(data) = data {
            relay(&state, data);
        }
        let kind = data.map_or(crate::protocol::ChangeKind::Unknown, notice_kind);
        noted(changes, state, Refetch::of(kind));
    }

    /// Posts a message to the other tabs, when they share this tab's stream.
    fn relay(state: &Shared, message: &str) {
        let channel = state.borrow().channel.as_ref().map(shared::Channel::handle);
        if let Some(channel) = channel {
            let _ = channel.post_message(&JsValue::from_str(message));
        }
    }

    /// What the holder relayed: a reconnect is fetched at once, a notice joins the window.
    fn heard(changes: Changes, state: Shared, relayed: Relayed) {
        match relayed {
            Relayed::Reconnected => {
                crate::ui::reach::reached();
                changes.bump(relayed.refetch());
            }
            Relayed::Lost => crate::ui::reach::lost(),
            Relayed::Notice(_) => noted(changes, state, relayed.refetch()),
        }
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
        let state = SendWrapper::new(state);
        set_timeout(
            move || open(changes, state.take()),
            crate::ui::stream::retry_delay(failures),
        );
    }

    mod shared {
        //! One stream for all the browser's tabs: a Web Lock elects the tab that opens it,
        //! a `BroadcastChannel` carries what it hears to the others. `navigator.locks` is
        //! reached through `Reflect` (web-sys binds it only under `web_sys_unstable_apis`).

        use js_sys::{Function, Promise, Reflect};
        use wasm_bindgen::JsCast;
        use wasm_bindgen::JsValue;
        use wasm_bindgen::closure::Closure;
        use web_sys::{BroadcastChannel, MessageEvent};

        use super::{Shared, heard, noted, open};
        use crate::ui::changes::{Changes, Refetch, Relayed, SHARED_NAME};

        /// The tab's end of the channel, closed when dropped.
        pub struct Channel {
            channel: BroadcastChannel,
            _on_message: Closure<dyn FnMut(MessageEvent)>,
        }

        impl Channel {
            pub fn handle(&self) -> BroadcastChannel {
                self.channel.clone()
            }
        }

        impl Drop for Channel {
            fn drop(&mut self) {
                self.channel.set_onmessage(None);
                self.channel.close();
            }
        }

        /// Listens on the tabs' channel and queues for the lock; `false` where the browser
        /// has no Web Locks or no `BroadcastChannel` (the caller opens its own stream).
        pub fn join(changes: Changes, state: &Shared) -> bool {
            let Some(locks) = lock_manager() else {
                return false;
            };
            let Ok(channel) = BroadcastChannel::new(SHARED_NAME) else {
                return false;
            };
            let on_message = {
                let state = state.clone();
                Closure::<dyn FnMut(MessageEvent)>::new(move |m: MessageEvent| {
                    let message = m.data().as_string();
                    heard(changes, state.clone(), Relayed::read(message.as_deref()));
                })
            };
            channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            state.borrow_mut().channel = Some(Channel {
                channel,
                _on_message: on_message,
            });
            if request_lock(&locks, changes, state.clone()).is_err() {
                state.borrow_mut().channel = None;
                return false;
            }
            // Notices sent before this tab listened reached it nowhere (the page may show
            // what the server rendered): fetch both once, after the window.
            noted(changes, state.clone(), Refetch::ALL);
            true
        }

        /// `navigator.locks`, where the browser has it (a secure context).
        fn lock_manager() -> Option<JsValue> {
            let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
            let locks = Reflect::get(&navigator, &"locks".into()).ok()?;
            (!locks.is_undefined() && !locks.is_null()).then_some(locks)
        }

        /// Queues for the lock: once granted, this tab holds the stream until its cleanup.
        fn request_lock(locks: &JsValue, changes: Changes, state: Shared) -> Result<(), JsValue> {
            let request: Function = Reflect::get(locks, &"request".into())?.dyn_into()?;
            let granted = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
                hold(changes, state).into()
            });
            // Settles when the lock is released; nothing waits on it.
            request.call2(locks, &JsValue::from_str(SHARED_NAME), &granted)?;
            Ok(())
        }

        /// The lock is this tab's: open the stream, and hold the lock with a promise only the
        /// cleanup resolves (or the browser drops, with the page). A page already cleaned up
        /// lets it go at once.
        fn hold(changes: Changes, state: Shared) -> Promise {
            if state.borrow().closed {
                return Promise::resolve(&JsValue::UNDEFINED);
            }
            let held = Promise::new(&mut |resolve, _reject| {
                state.borrow_mut().release = Some(resolve);
            });
            open(changes, state);
            held
        }
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

    #[test]
    fn a_relayed_reconnect_refetches_everything() {
        let relayed = Relayed::read(Some(Relayed::RECONNECTED));
        assert_eq!(relayed, Relayed::Reconnected);
        assert_eq!(relayed.refetch(), Refetch::ALL);
    }

    #[test]
    fn a_relayed_loss_is_read_as_such_and_refetches_nothing() {
        let relayed = Relayed::read(Some(Relayed::LOST));
        assert_eq!(relayed, Relayed::Lost);
        assert_eq!(relayed.refetch(), Refetch::default());
    }

    #[test]
    fn a_relayed_notice_refetches_what_its_kind_makes_stale() {
        let session_id: crate::protocol::SessionId = "s-1".into();
        let data =
            serde_json::to_string(&Change::of(ChangeKind::ApprovalOpened, &session_id)).unwrap();
        let relayed = Relayed::read(Some(&data));
        assert_eq!(relayed, Relayed::Notice(ChangeKind::ApprovalOpened));
        assert_eq!(
            relayed.refetch(),
            Refetch {
                sessions: false,
                gates: true
            }
        );
        let resync = serde_json::to_string(&Change::resync()).unwrap();
        assert_eq!(
            Relayed::read(Some(&resync)),
            Relayed::Notice(ChangeKind::Resync)
        );
    }

    #[test]
    fn an_unreadable_message_refetches_everything() {
        for message in [
            None,
            Some(""),
            Some("not json"),
            Some(r#"{"kind":"from_the_future"}"#),
        ] {
            let relayed = Relayed::read(message);
            assert_eq!(relayed, Relayed::Notice(ChangeKind::Unknown), "{message:?}");
            assert_eq!(relayed.refetch(), Refetch::ALL, "{message:?}");
        }
    }
}
