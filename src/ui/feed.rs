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
            _ => {}
        }
        self.cursor.set(seq);
        if self.first_seq.with_untracked(Option::is_none) {
            self.first_seq.set(Some(seq));
        }
        self.items.update(|items| transcript::apply(items, &event));
        if matches!(
            event.body,
            EventBody::ApprovalRequest(_) | EventBody::ApprovalResolved(_)
        ) {
            self.follow_gates();
        }
        self.shown.update_value(|shown| shown.push(event));
    }

    /// The gates waiting, read again from the items after a card came or went: in the page's
    /// order (a card sits before its call's row, so a batch's cards asked in another order
    /// than its calls are still listed as shown), which `j`/`k` and the bulk bar follow.
    fn follow_gates(&self) {
        let waiting = self
            .items
            .with_untracked(|items| transcript::pending_gates(items));
        if self.pending.with_untracked(|p| *p != waiting) {
            self.pending.set(waiting);
        }
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

/// Property-style checks: the incremental state equals `transcript::build` of the events the
/// feed accepted, however awkwardly they arrive (twice, replayed after a reconnect, an older
/// page overlapping those shown, pages asked for twice).
#[cfg(test)]
mod awkward_delivery {
    use serde_json::json;

    use super::*;
    use crate::protocol::{
        AnsweredBy, Decision, Resolution, Session, ToolClass, ToolStatus, TurnStatus, Verdict,
    };

    fn ev(seq: u64, body: EventBody) -> Event {
        Event {
            seq: Some(seq),
            at: format!("t{seq}").into(),
            turn_id: Some("turn".into()),
            body,
        }
    }

    fn gate(approval_id: &str, call_id: &str, kind: &str) -> ApprovalRequestBody {
        serde_json::from_value(json!({
            "approval_id": approval_id, "session_id": "s", "call_id": call_id, "kind": kind,
            "tool": "shell", "class": "exec", "args": {"command": format!("echo {call_id}")},
            "title": "Run command", "summary": "shell", "reason": "mode",
            "reason_detail": "", "proposal_md": "", "proposal_html": "", "digest": "d",
            "allowed_decisions": ["approve", "edit"], "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-01T00:30:00Z", "timeout_outcome": "deny"
        }))
        .unwrap()
    }

    fn call(call_id: &str) -> EventBody {
        EventBody::ToolCall {
            call_id: call_id.into(),
            tool: "shell".into(),
            args: json!({"command": format!("echo {call_id}")}),
            class: ToolClass::Exec,
            verdict: Verdict::Ask,
            rule_id: None,
            rule_pattern: None,
        }
    }

    fn answer(
        approval_id: &str,
        decision: Decision,
        edits: Option<serde_json::Value>,
    ) -> EventBody {
        let mut resolution = Resolution::plain(
            &approval_id.into(),
            decision,
            AnsweredBy::User,
            "another tab",
            "2026-01-01T00:01:00Z".into(),
        );
        resolution.edits = edits;
        EventBody::ApprovalResolved(resolution)
    }

    fn user(text: &str) -> EventBody {
        EventBody::UserMessage {
            text: text.into(),
            approval_mode: Mode::Ask,
        }
    }

    /// A session log with two turns: a parallel batch whose cards were asked in the other
    /// order than the calls (c2's before c1's), one answered with an edit, a checkpoint, and
    /// a second turn whose card is still waiting.
    fn log() -> Vec<Event> {
        let bodies = vec![
            user("first turn"),
            call("c1"),
            call("c2"),
            EventBody::ApprovalRequest(Box::new(gate("g2", "c2", "tool"))),
            EventBody::ApprovalRequest(Box::new(gate("g1", "c1", "tool"))),
            answer(
                "g2",
                Decision::Edit,
                Some(json!({"command": "echo edited"})),
            ),
            EventBody::ToolStarted {
                call_id: "c2".into(),
            },
            EventBody::ToolResult {
                call_id: "c2".into(),
                tool: "shell".into(),
                status: ToolStatus::Ok,
                output: "edited".into(),
            },
            EventBody::ApprovalRequest(Box::new(gate("g3", "cp", "decision"))),
            answer("g1", Decision::Deny, None),
            answer("g3", Decision::Approve, None),
            EventBody::TurnFinished {
                status: TurnStatus::Completed,
                error: None,
            },
            user("second turn"),
            call("c3"),
            call("c4"),
            EventBody::ApprovalRequest(Box::new(gate("g4", "c4", "tool"))),
            EventBody::ApprovalRequest(Box::new(gate("g5", "c3", "tool"))),
        ];
        bodies
            .into_iter()
            .zip(1..)
            .map(|(body, seq)| ev(seq, body))
            .collect()
    }

    fn snapshot(events: Vec<Event>) -> Snapshot {
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
            cursor: events.last().and_then(|e| e.seq).unwrap_or(0),
            events,
            pending: vec![],
        }
    }

    /// A small deterministic generator (no dependency): the same cases on every run.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) as usize) % n.max(1)
        }
    }

    /// The feed agrees with a build from scratch of `expected` in every part it keeps.
    fn agrees(feed: &Feed, expected: &[Event], case: u64) {
        let built = transcript::build(expected);
        assert_eq!(feed.items.get_untracked(), built, "case {case}: items");
        let waiting: Vec<String> = feed
            .pending
            .get_untracked()
            .iter()
            .map(|g| g.approval_id.to_string())
            .collect();
        let built_waiting: Vec<String> = transcript::pending_gates(&built)
            .iter()
            .map(|g| g.approval_id.to_string())
            .collect();
        assert_eq!(
            waiting, built_waiting,
            "case {case}: pending, in page order"
        );
        assert_eq!(
            feed.first_message.get_untracked(),
            first_message(&built),
            "case {case}: first message"
        );
        assert_eq!(
            feed.first_seq.get_untracked(),
            expected.first().and_then(|e| e.seq),
            "case {case}: first seq"
        );
    }

    #[test]
    fn duplicates_replays_and_overlapping_pages_end_where_a_build_of_every_event_does() {
        let all = log();
        let last = all.len();
        for case in 0..300u64 {
            let mut rng = Lcg(case);
            // The page opens at some event (a snapshot of the recent ones), the rest arrive live.
            // (A page opens empty only on a session with no events yet.)
            let mut start = rng.below(last);
            let shown_at_open = rng.below(last - start + 1);
            if shown_at_open == 0 {
                start = 0;
            }
            let owner = Owner::new();
            owner.with(|| {
                let feed = Feed::new(snapshot(all[start..start + shown_at_open].to_vec()));
                let mut next = start + shown_at_open;
                let mut first = start;
                while next < last || first > 0 {
                    match rng.below(6) {
                        // The next event, sometimes twice (a reconnect replaying it).
                        0 | 1 if next < last => {
                            feed.apply(all[next].clone());
                            if rng.below(3) == 0 {
                                feed.apply(all[next].clone());
                            }
                            next += 1;
                        }
                        // A replay of something already applied.
                        2 if next > 0 => feed.apply(all[rng.below(next)].clone()),
                        // A page of older events that overlaps those shown (and maybe
                        // those delivered live since), asked for once or twice.
                        3 if first > 0 => {
                            let from = rng.below(first);
                            let to = (first + rng.below(3)).min(next.max(first));
                            let page = all[from..to].to_vec();
                            feed.prepend(page.clone());
                            if rng.below(2) == 0 {
                                feed.prepend(page);
                            }
                            first = from;
                        }
                        _ => {}
                    }
                    // Before anything was shown, the first seq shown is the first delivered.
                    let shown_from = if shown_at_open == 0 && first == start {
                        start
                    } else {
                        first
                    };
                    agrees(&feed, &all[shown_from..next], case);
                }
                agrees(&feed, &all, case);
            });
        }
    }

    #[test]
    fn an_event_past_a_gap_is_not_guessed_around_and_the_state_still_matches_what_was_kept() {
        let all = log();
        let owner = Owner::new();
        owner.with(|| {
            let feed = Feed::new(snapshot(all[..3].to_vec()));
            // Seq 5 before 4: 4 is then below the cursor and refused, and the view is what a
            // build of the accepted events shows (the server never sends a gap: it re-reads).
            feed.apply(all[4].clone());
            feed.apply(all[3].clone());
            let kept: Vec<Event> = [&all[..3], &all[4..5]].concat();
            agrees(&feed, &kept, 0);
        });
    }

    #[test]
    fn a_card_answered_in_another_tab_leaves_no_gate_waiting() {
        let all = log();
        let owner = Owner::new();
        owner.with(|| {
            // Opened with g4 and g5 waiting; another tab answers both.
            let feed = Feed::new(snapshot(all.clone()));
            assert_eq!(feed.pending.get_untracked().len(), 2);
            feed.apply(ev(18, answer("g5", Decision::Approve, None)));
            feed.apply(ev(19, answer("g4", Decision::Deny, None)));
            assert!(feed.pending.get_untracked().is_empty());
            // An answer to a card on a page not shown yet changes nothing now, and the page,
            // once shown, has its card answered.
            let feed = Feed::new(snapshot(all[12..].to_vec()));
            feed.apply(ev(18, answer("g1", Decision::Approve, None)));
            feed.prepend(all[..12].to_vec());
            let waiting: Vec<String> = feed
                .pending
                .get_untracked()
                .iter()
                .map(|g| g.approval_id.to_string())
                .collect();
            assert_eq!(waiting, ["g5", "g4"]);
        });
    }
}
