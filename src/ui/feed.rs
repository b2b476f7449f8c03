//! The client-side state of one open session and the reducer that applies events to it,
//! plus (in the browser) the EventSource that feeds it.
//!
//! **Invariant:** events are applied idempotently by seq: anything at or below the cursor is
//! ignored, so a reconnect that replays from the cursor never shows a thing twice.

use leptos::prelude::*;

use crate::protocol::{Event, EventBody, Mode, SessionId, Snapshot, TurnId};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    Connecting,
    Live,
    /// Retrying in this many seconds.
    Reconnecting(u32),
}

/// Signals of one session view; `Copy`, so closures capture it freely.
#[derive(Clone, Copy)]
pub struct Feed {
    pub session_id: StoredValue<SessionId>,
    pub events: RwSignal<Vec<Event>>,
    pub cursor: RwSignal<u64>,
    /// Assistant text streaming in for the running turn (transient deltas).
    pub streaming: RwSignal<String>,
    pub mode: RwSignal<Mode>,
    pub running_turn: RwSignal<Option<TurnId>>,
    pub connection: RwSignal<Connection>,
}

impl Feed {
    pub fn new(snapshot: Snapshot) -> Self {
        Feed {
            session_id: StoredValue::new(snapshot.session.id.clone()),
            events: RwSignal::new(snapshot.events),
            cursor: RwSignal::new(snapshot.cursor),
            streaming: RwSignal::new(String::new()),
            mode: RwSignal::new(snapshot.session.approval_mode),
            running_turn: RwSignal::new(snapshot.session.running_turn_id),
            connection: RwSignal::new(Connection::Connecting),
        }
    }

    /// Applies one event from the feed.
    pub fn apply(&self, event: Event) {
        let Some(seq) = event.seq else {
            if let EventBody::AssistantDelta { text } = &event.body {
                self.streaming.update(|s| s.push_str(text));
            }
            return;
        };
        if seq <= self.cursor.get_untracked() {
            return;
        }
        match &event.body {
            EventBody::UserMessage { .. } => {
                self.running_turn.set(event.turn_id.clone());
                self.streaming.set(String::new());
            }
            EventBody::ModeChanged { next, .. } => self.mode.set(*next),
            EventBody::AssistantMessage { .. } => self.streaming.set(String::new()),
            EventBody::TurnFinished { .. } => {
                self.running_turn.set(None);
                self.streaming.set(String::new());
            }
            _ => {}
        }
        self.cursor.set(seq);
        self.events.update(|events| events.push(event));
    }
}

impl Feed {
    /// The first seq shown; seqs are gapless from 1, so anything above 1 means older turns
    /// were left out of the page (see "Show earlier").
    pub fn first_seq(&self) -> Option<u64> {
        self.events.read().first().and_then(|e| e.seq)
    }

    /// Puts older events (a page from "Show earlier") before those shown; anything not older
    /// than the first shown is dropped, so a repeated page changes nothing.
    pub fn prepend(&self, older: Vec<Event>) {
        self.events.update(|events| {
            let first = events.first().and_then(|e| e.seq).unwrap_or(u64::MAX);
            let mut merged: Vec<Event> = older
                .into_iter()
                .filter(|e| e.seq.is_some_and(|s| s < first))
                .collect();
            merged.append(events);
            *events = merged;
        });
    }
}

#[cfg(feature = "hydrate")]
pub use browser::connect;

#[cfg(feature = "hydrate")]
mod browser {
    //! The EventSource: cursor in the URL (a new EventSource sends no Last-Event-ID), and
    //! reconnect forever with backoff, because the browser gives up after an HTTP error.

    use std::cell::RefCell;
    use std::rc::Rc;
    use std::time::Duration;

    use leptos::prelude::*;
    use send_wrapper::SendWrapper;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    use web_sys::{EventSource, MessageEvent};

    use super::{Connection, Feed};
    use crate::protocol::Event;

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
    }

    /// Connects the feed and keeps it connected until the view is cleaned up.
    pub fn connect(feed: Feed) {
        let state = Rc::new(RefCell::new(State::default()));
        open(feed, state.clone());
        let cleanup = SendWrapper::new(state);
        on_cleanup(move || {
            let mut state = cleanup.borrow_mut();
            state.closed = true;
            state.link = None;
        });
    }

    fn open(feed: Feed, state: Rc<RefCell<State>>) {
        if state.borrow().closed {
            return;
        }
        let url = format!(
            "/api/v1/sessions/{}/events?after={}",
            feed.session_id.get_value(),
            feed.cursor.get_untracked()
        );
        let Ok(source) = EventSource::new(&url) else {
            schedule_retry(feed, state);
            return;
        };
        let mut handlers = Vec::new();
        let on_event = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let Some(message) = e.dyn_ref::<MessageEvent>() else {
                return;
            };
            let Some(data) = message.data().as_string() else {
                return;
            };
            match crate::ui::json::from_str::<Event>(&data) {
                Ok(event) => feed.apply(event),
                Err(err) => leptos::logging::warn!("unreadable event: {err}"),
            }
        });
        for kind in crate::protocol::EventKind::ALL {
            let _ = source
                .add_event_listener_with_callback(kind.as_str(), on_event.as_ref().unchecked_ref());
        }
        handlers.push(on_event);
        let opened = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                state.borrow_mut().failures = 0;
                feed.connection.set(Connection::Live);
            })
        };
        source.set_onopen(Some(opened.as_ref().unchecked_ref()));
        handlers.push(opened);
        let failed = {
            let state = state.clone();
            Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                // Close ourselves: the browser's own retry stops for good after an HTTP error,
                // and its reconnect would not carry our cursor.
                let link = state.borrow_mut().link.take();
                drop(link);
                schedule_retry(feed, state.clone());
            })
        };
        source.set_onerror(Some(failed.as_ref().unchecked_ref()));
        handlers.push(failed);
        state.borrow_mut().link = Some(Link {
            source,
            _handlers: handlers,
        });
    }

    fn schedule_retry(feed: Feed, state: Rc<RefCell<State>>) {
        let failures = {
            let mut s = state.borrow_mut();
            if s.closed {
                return;
            }
            s.failures = s.failures.saturating_add(1);
            s.failures
        };
        let delay = 2u32
            .saturating_pow(failures.saturating_sub(1).min(4))
            .min(15);
        feed.connection.set(Connection::Reconnecting(delay));
        let state = SendWrapper::new(state);
        set_timeout(
            move || open(feed, state.take()),
            Duration::from_secs(u64::from(delay)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Session, TurnStatus};

    fn snapshot() -> Snapshot {
        Snapshot {
            session: Session {
                id: "s".into(),
                title: "t".into(),
                created_at: "c".into(),
                approval_mode: Mode::Ask,
                running_turn_id: None,
                pending_approvals: 0,
                source: None,
            },
            events: vec![],
            pending: vec![],
            cursor: 0,
        }
    }

    fn ev(seq: Option<u64>, body: EventBody) -> Event {
        Event {
            seq,
            at: "t".into(),
            turn_id: Some("turn".into()),
            body,
        }
    }

    #[test]
    fn events_apply_once_by_seq_and_deltas_stream_until_the_message() {
        let owner = Owner::new();
        owner.with(|| {
            let feed = Feed::new(snapshot());
            let user = ev(
                Some(1),
                EventBody::UserMessage {
                    text: "hi".into(),
                    approval_mode: Mode::Yolo,
                },
            );
            feed.apply(user.clone());
            feed.apply(user);
            assert_eq!(feed.events.get_untracked().len(), 1);
            assert_eq!(
                feed.running_turn
                    .get_untracked()
                    .as_ref()
                    .map(TurnId::as_str),
                Some("turn")
            );
            feed.apply(ev(None, EventBody::AssistantDelta { text: "Hel".into() }));
            feed.apply(ev(None, EventBody::AssistantDelta { text: "lo".into() }));
            assert_eq!(feed.streaming.get_untracked(), "Hello");
            feed.apply(ev(
                Some(2),
                EventBody::AssistantMessage {
                    text: "Hello".into(),
                    html: "<p>Hello</p>".into(),
                },
            ));
            assert_eq!(feed.streaming.get_untracked(), "");
            feed.apply(ev(
                Some(3),
                EventBody::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                },
            ));
            assert_eq!(feed.running_turn.get_untracked(), None);
            assert_eq!(feed.cursor.get_untracked(), 3);
            feed.apply(ev(
                Some(2),
                EventBody::AssistantMessage {
                    text: "again".into(),
                    html: String::new(),
                },
            ));
            assert_eq!(feed.events.get_untracked().len(), 3);
        });
    }
}
