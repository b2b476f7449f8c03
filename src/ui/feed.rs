//! The client-side state of one open session and the reducer that applies events to it,
//! plus (in the browser) the EventSource that feeds it.
//!
//! **Invariant 63** ([ARCHITECTURE.md](../../ARCHITECTURE.md#invariants)): events apply idempotently by seq; replays never show twice.
//!
//! The browser does work in proportion to what changed: each event changes only the
//! transcript item(s) it concerns (`transcript::apply`), the pending gates and the header's
//! title are kept as events arrive, and only a page of older events ("Show earlier") rebuilds
//! the transcript from every event shown.

use leptos::prelude::*;

use crate::protocol::{ApprovalRequestBody, Event, EventBody, Mode, SessionId, Snapshot, TurnId};
use crate::ui::transcript::{self, Item};

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
    /// The transcript as shown, changed in place by each event.
    pub items: RwSignal<Vec<Item>>,
    /// The gates still waiting, oldest first.
    pub pending: RwSignal<Vec<ApprovalRequestBody>>,
    /// The first user message shown (an unnamed session's header shows its first line).
    pub first_message: RwSignal<Option<String>>,
    /// The first seq shown; seqs are gapless from 1, so anything above 1 means older turns
    /// were left out of the page (see "Show earlier").
    pub first_seq: RwSignal<Option<u64>>,
    /// The events shown, not watched by anything: kept only to rebuild the transcript when a
    /// page of older events goes before them.
    shown: StoredValue<Vec<Event>>,
    pub cursor: RwSignal<u64>,
    /// Assistant text streaming in for the running turn (transient deltas).
    pub streaming: RwSignal<String>,
    pub mode: RwSignal<Mode>,
    pub running_turn: RwSignal<Option<TurnId>>,
    pub connection: RwSignal<Connection>,
}

/// What the view keeps beside the events: the items, the gates waiting, the first message.
struct Derived {
    items: Vec<Item>,
    pending: Vec<ApprovalRequestBody>,
    first_message: Option<String>,
}

impl Derived {
    /// From every event shown: a snapshot's, or after a page of older ones.
    fn of(events: &[Event]) -> Derived {
        let items = transcript::build(events);
        Derived {
            pending: transcript::pending_gates(&items),
            first_message: first_message(&items),
            items,
        }
    }
}

fn first_message(items: &[Item]) -> Option<String> {
    items.iter().find_map(|item| match item {
        Item::User { text, .. } => Some(text.clone()),
        _ => None,
    })
}

impl Feed {
    pub fn new(snapshot: Snapshot) -> Self {
        let derived = Derived::of(&snapshot.events);
        Feed {
            session_id: StoredValue::new(snapshot.session.id.clone()),
            items: RwSignal::new(derived.items),
            pending: RwSignal::new(derived.pending),
            first_message: RwSignal::new(derived.first_message),
            first_seq: RwSignal::new(snapshot.events.first().and_then(|e| e.seq)),
            shown: StoredValue::new(snapshot.events),
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
            EventBody::UserMessage { text, .. } => {
                self.running_turn.set(event.turn_id.clone());
                self.streaming.set(String::new());
                if self.first_message.with_untracked(Option::is_none) {
                    self.first_message.set(Some(text.clone()));
                }
            }
            EventBody::ModeChanged { next, .. } => self.mode.set(*next),
            EventBody::AssistantMessage { .. } => self.streaming.set(String::new()),
            EventBody::TurnFinished { .. } => {
                self.running_turn.set(None);
                self.streaming.set(String::new());
            }
            EventBody::ApprovalRequest(request) => {
                self.pending.update(|p| p.push((**request).clone()));
            }
            EventBody::ApprovalResolved(resolution) => {
                let id = &resolution.approval_id;
                if self
                    .pending
                    .with_untracked(|p| p.iter().any(|g| g.approval_id == *id))
                {
                    self.pending.update(|p| p.retain(|g| g.approval_id != *id));
                }
            }
            _ => {}
        }
        self.cursor.set(seq);
        if self.first_seq.with_untracked(Option::is_none) {
            self.first_seq.set(Some(seq));
        }
        self.items.update(|items| transcript::apply(items, &event));
        self.shown.update_value(|shown| shown.push(event));
    }

    /// Puts older events (a page from "Show earlier") before those shown; anything not older
    /// than the first shown is dropped, so a repeated page changes nothing. The one change
    /// that rebuilds the transcript from every event shown.
    pub fn prepend(&self, older: Vec<Event>) {
        let first = self.first_seq.get_untracked().unwrap_or(u64::MAX);
        let mut merged: Vec<Event> = older
            .into_iter()
            .filter(|e| e.seq.is_some_and(|s| s < first))
            .collect();
        if merged.is_empty() {
            return;
        }
        self.shown.update_value(|shown| {
            merged.append(shown);
            *shown = merged;
        });
        let (first_seq, derived) = self
            .shown
            .with_value(|shown| (shown.first().and_then(|e| e.seq), Derived::of(shown)));
        self.first_seq.set(first_seq);
        self.pending.set(derived.pending);
        self.first_message.set(derived.first_message);
        self.items.set(derived.items);
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

    use leptos::prelude::*;
    use send_wrapper::SendWrapper;
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    use web_sys::{EventSource, MessageEvent};

    use super::{Connection, Feed};
    use crate::protocol::Event;
    use crate::ui::stream::{Link, retry_delay, shown_secs};

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
        state.borrow_mut().link = Some(Link { source, handlers });
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
        let delay = retry_delay(failures);
        feed.connection
            .set(Connection::Reconnecting(shown_secs(delay)));
        let state = SendWrapper::new(state);
        set_timeout(move || open(feed, state.take()), delay);
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
            assert_eq!(feed.items.get_untracked().len(), 1);
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
            assert_eq!(feed.items.get_untracked().len(), 3);
        });
    }

    fn gate(approval_id: &str) -> ApprovalRequestBody {
        serde_json::from_value(serde_json::json!({
            "approval_id": approval_id, "session_id": "s", "call_id": "c", "kind": "tool",
            "tool": "shell", "class": "exec", "args": {"command": "ls"},
            "title": "Decide", "summary": "decision: x", "reason": "mode",
            "reason_detail": "", "proposal_md": "", "proposal_html": "", "digest": "d",
            "allowed_decisions": ["approve", "edit"], "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:30:00Z", "timeout_outcome": "deny"
        }))
        .unwrap()
    }

    fn user(seq: u64, text: &str) -> Event {
        ev(
            Some(seq),
            EventBody::UserMessage {
                text: text.into(),
                approval_mode: Mode::Ask,
            },
        )
    }

    #[test]
    fn each_event_changes_only_its_items_and_the_gates_and_title_follow() {
        let owner = Owner::new();
        owner.with(|| {
            let feed = Feed::new(snapshot());
            let resolved = crate::protocol::Resolution::plain(
                &"g1".into(),
                crate::protocol::Decision::Approve,
                crate::protocol::AnsweredBy::User,
                "browser",
                "2026-01-01T00:01:00Z".into(),
            );
            let events = vec![
                user(1, "first words"),
                ev(Some(2), EventBody::ApprovalRequest(Box::new(gate("g1")))),
                ev(Some(3), EventBody::ApprovalRequest(Box::new(gate("g2")))),
                ev(Some(4), EventBody::ApprovalResolved(resolved)),
                user(5, "second words"),
            ];
            feed.apply(events[0].clone());
            let text_at = |feed: &Feed| {
                feed.items.with_untracked(|items| match &items[0] {
                    Item::User { text, .. } => text.as_ptr(),
                    other => panic!("{other:?}"),
                })
            };
            let first_text = text_at(&feed);
            for event in &events[1..] {
                feed.apply(event.clone());
            }
            assert_eq!(feed.items.get_untracked(), transcript::build(&events));
            // The first row is the one made by its own event, not one built again since.
            assert_eq!(text_at(&feed), first_text, "an earlier item was rebuilt");
            let waiting: Vec<String> = feed
                .pending
                .get_untracked()
                .iter()
                .map(|g| g.approval_id.to_string())
                .collect();
            assert_eq!(waiting, ["g2"]);
            assert_eq!(
                feed.pending.get_untracked(),
                transcript::pending_gates(&feed.items.get_untracked())
            );
            assert_eq!(
                feed.first_message.get_untracked().as_deref(),
                Some("first words")
            );
        });
    }

    #[test]
    fn a_page_of_older_events_goes_first_once() {
        let owner = Owner::new();
        owner.with(|| {
            let mut later = snapshot();
            later.events = vec![user(3, "third"), user(4, "fourth")];
            later.cursor = 4;
            let feed = Feed::new(later);
            assert_eq!(feed.first_seq.get_untracked(), Some(3));
            assert_eq!(feed.first_message.get_untracked().as_deref(), Some("third"));
            let older = vec![user(1, "first"), user(2, "second"), user(3, "again")];
            feed.prepend(older.clone());
            feed.prepend(older);
            let all = [
                user(1, "first"),
                user(2, "second"),
                user(3, "third"),
                user(4, "fourth"),
            ];
            assert_eq!(feed.items.get_untracked(), transcript::build(&all));
            assert_eq!(feed.first_seq.get_untracked(), Some(1));
            assert_eq!(feed.first_message.get_untracked().as_deref(), Some("first"));
            // Live events still go after them, once.
            feed.apply(user(5, "fifth"));
            feed.apply(user(4, "replayed"));
            assert_eq!(feed.items.get_untracked().len(), 5);
        });
    }
}
