//! The session list: new, switch, delete; an outside agent's sessions carry its name; then the
//! links to the other pages (Inbox with its pending count, Rules, Audit, Your answers, Config,
//! Tokens).
//! Folds into a top bar on narrow screens (CSS).
//!
//! [`PageLayout`] puts the same sidebar beside the pages that are not a session.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};

use crate::api;
use crate::protocol::{ApprovalRequest, ErrorBody, Mode, Session, SessionId};
use crate::ui::browser;
use crate::ui::changes::Changes;
use crate::ui::json;
use crate::ui::outside::SourceBadge;
use crate::ui::viewer::Viewer;

/// Lets any component ask the sidebar to reload its list (after create, delete, a rename; the
/// server's change stream asks for the rest).
/// A counter rather than a `Trigger`: a resource refetches only when its source value changes.
#[derive(Clone, Copy)]
pub struct SessionsChanged(RwSignal<u64>);

impl Default for SessionsChanged {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionsChanged {
    pub fn new() -> Self {
        SessionsChanged(RwSignal::new(0))
    }

    /// Changes whenever someone asked for a reload (a resource source).
    pub fn version(&self) -> u64 {
        self.0.get()
    }

    pub fn notify(&self) {
        self.0.update(|n| *n += 1);
    }
}

/// The session list of a page other than the session page, and its reload counter (the
/// session page has its own [`SessionsChanged`]).
#[derive(Clone, Copy)]
pub struct PageSessions {
    pub list: Resource<Result<Vec<Session>, ErrorBody>, json::Json>,
    changed: RwSignal<u64>,
    /// The last list that loaded, for reads outside a `<Suspense/>` (titles by id).
    known: RwSignal<Vec<Session>>,
}

impl PageSessions {
    pub fn notify(&self) {
        self.changed.update(|n| *n += 1);
    }

    /// The title of a session, if the list has it.
    pub fn title(&self, session_id: &str) -> Option<String> {
        self.known.with(|list| {
            list.iter()
                .find(|s| s.id == session_id)
                .map(|s| s.title.clone())
        })
    }

    /// The outside agent a session holds the gates of, if the list has it and it is one.
    pub fn source(&self, session_id: &str) -> Option<String> {
        self.known.with(|list| {
            list.iter()
                .find(|s| s.id == session_id)
                .and_then(|s| s.source.clone())
        })
    }
}

/// Asks whichever page owns the session list to reload it.
#[derive(Clone, Copy)]
struct ListChanged(Option<SessionsChanged>, Option<PageSessions>);

impl ListChanged {
    fn from_context() -> Self {
        ListChanged(use_context(), use_context())
    }

    fn notify(self) {
        if let Some(changed) = self.0 {
            changed.notify();
        }
        if let Some(page) = self.1 {
            page.notify();
        }
    }
}

/// Every pending gate across sessions, oldest first (`None` until the first answer), fetched
/// again whenever the server's change stream says a gate opened or resolved. The nav's
/// "Inbox (n)" and the inbox page share one.
#[derive(Clone, Copy)]
pub struct PendingGates {
    pub gates: RwSignal<Option<Vec<ApprovalRequest>>>,
    pub error: RwSignal<Option<String>>,
    in_flight: RwSignal<bool>,
    /// Asked again while a fetch was under way: fetch once more when it ends, since what
    /// it reads may be older than the news.
    again: RwSignal<bool>,
}

impl PendingGates {
    /// Fetches now, and again on each change of the gates, for as long as the calling
    /// component lives.
    pub fn start() -> Self {
        let pending = PendingGates {
            gates: RwSignal::new(None),
            error: RwSignal::new(None),
            in_flight: RwSignal::new(false),
            again: RwSignal::new(false),
        };
        let changes = Changes::use_or_start();
        Effect::new(move |_| {
            changes.gates.track();
            pending.refresh();
        });
        pending
    }

    /// Fetches the list now (or, if a fetch is under way, once more after it). Answers that
    /// arrive after the page is gone are dropped.
    pub fn refresh(self) {
        match self.in_flight.try_get_untracked() {
            None => return,
            Some(true) => {
                self.again.set(true);
                return;
            }
            Some(false) => {}
        }
        self.in_flight.set(true);
        spawn_local(async move {
            let result = crate::ui::reach::until_reached(api::pending_approvals).await;
            self.in_flight.try_set(false);
            if self.again.try_get_untracked() == Some(true) {
                self.again.set(false);
                self.refresh();
            }
            match result {
                Ok(list) => {
                    let changed = self
                        .gates
                        .try_with_untracked(|now| now.as_ref() != Some(&list))
                        .unwrap_or(false);
                    if changed {
                        self.gates.try_set(Some(list));
                    }
                    if self.error.try_with_untracked(Option::is_some) == Some(true) {
                        self.error.try_set(None);
                    }
                }
                Err(err) => {
                    self.error.try_set(Some(api::error_message(&err)));
                }
            }
        });
    }

    /// How many gates wait, once known.
    pub fn count(&self) -> Option<usize> {
        self.gates.with(|g| g.as_ref().map(Vec::len))
    }
}

/// The layout of the pages that are not a session: the sidebar on the left (with no session
/// current), the page on the right. Provides [`PageSessions`] and [`PendingGates`] to the page
/// (and with them the page's [`Changes`]).
#[component]
pub fn PageLayout(children: Children) -> impl IntoView {
    let changed = RwSignal::new(0u64);
    let list = json::resource(move || changed.get(), |_| api::list_sessions());
    let known = RwSignal::new(Vec::new());
    let sessions = PageSessions {
        list,
        changed,
        known,
    };
    provide_context(sessions);
    Effect::new(move |_| {
        if let Some(Ok(list)) = list.get() {
            known.set(list);
        }
    });
    provide_context(PendingGates::start());
    let current = Memo::new(|_| String::new());
    // Lets a test (or a person's script) see that the page is live, not just server-rendered.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <div class="layout">
            <Sidebar sessions=list current/>
            <main class="page" data-hydrated=move || hydrated.get().to_string()>{children()}</main>
        </div>
    }
}

#[component]
pub fn Sidebar(
    sessions: Resource<Result<Vec<Session>, ErrorBody>, json::Json>,
    current: Memo<String>,
) -> impl IntoView {
    let changed = ListChanged::from_context();
    let pending = use_context::<PendingGates>().unwrap_or_else(|| {
        let pending = PendingGates::start();
        provide_context(pending);
        pending
    });
    reload_on_changes(changed);
    reload_for_unknown_sessions(sessions, pending, changed);
    let error = RwSignal::new(None::<String>);
    // The session whose × was pressed: it asks before anything is deleted. Held here, above
    // the list, so a reload of the list (any change notice) leaves the question open.
    let confirming = RwSignal::new(None::<SessionId>);
    let navigate = use_navigate();
    let new_session = move |_| {
        let navigate = navigate.clone();
        spawn_local(async move {
            match api::create_session().await {
                Ok(session) => {
                    changed.notify();
                    navigate(&format!("/sessions/{}", session.id), Default::default());
                }
                Err(err) => error.set(Some(api::error_message(&err))),
            }
        });
    };
    view! {
        <nav class="sidebar" aria-label="Sessions">
            <div class="brand">"Countersign"</div>
            {signed_in_as()}
            {Viewer::get().admin.then(|| view! {
                <button class="new-session" data-testid="new-session" on:click=new_session>"+ New session"</button>
            })}
            <h2 class="sidebar-heading">"Sessions"</h2>
            // A transition: while the list reloads, the one shown stays (no flash of
            // "Loading…" on every change notice).
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match sessions.await {
                        Ok(list) => view! { <SessionList list current error confirming/> }.into_any(),
                        Err(err) => view! { <p class="error">{api::error_message(&err)}</p> }.into_any(),
                    }
                })}
            </Transition>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <PageLinks/>
        </nav>
    }
}

/// The signed-in person's email under the brand (issue 41); nothing for a token's login.
fn signed_in_as() -> Option<impl IntoView> {
    let person = crate::ui::viewer::signed_in_person();
    (!person.is_empty()).then(|| {
        view! { <p class="signed-in-as muted" data-testid="signed-in-as">"Signed in as "<span data-testid="signed-in-email">{person}</span></p> }
    })
}

/// Reloads the list whenever the server's change stream says it may have changed (not on the
/// first run: the list has just loaded).
fn reload_on_changes(changed: ListChanged) {
    let changes = Changes::use_or_start();
    Effect::new(move |first: Option<()>| {
        changes.sessions.track();
        if first.is_some() {
            changed.notify();
        }
    });
}

/// A gate from a session the list does not know yet (an outside agent's first gate, or a
/// session made in another tab): reload the list, once per new set of unknown sessions.
fn reload_for_unknown_sessions(
    sessions: Resource<Result<Vec<Session>, ErrorBody>, json::Json>,
    pending: PendingGates,
    changed: ListChanged,
) {
    Effect::new(move |asked: Option<Vec<SessionId>>| {
        let asked = asked.unwrap_or_default();
        let Some(Ok(known)) = sessions.get() else {
            return asked;
        };
        let mut unknown: Vec<SessionId> = pending.gates.with(|g| {
            g.iter()
                .flatten()
                .map(|g| g.body.session_id.clone())
                .filter(|sid| !known.iter().any(|s| s.id == *sid))
                .collect()
        });
        unknown.sort();
        unknown.dedup();
        if !unknown.is_empty() && unknown != asked {
            changed.notify();
        }
        unknown
    });
}

#[component]
fn SessionList(
    list: Vec<Session>,
    current: Memo<String>,
    error: RwSignal<Option<String>>,
    confirming: RwSignal<Option<SessionId>>,
) -> impl IntoView {
    view! {
        <ul class="session-list">
            {list.into_iter().map(|session| view! { <SessionItem session current error confirming/> }).collect_view()}
        </ul>
    }
}

/// One session in the list: its title, whose it is, whether cards wait in it or a turn
/// runs, and (for an admin) delete, which asks first.
#[component]
fn SessionItem(
    session: Session,
    current: Memo<String>,
    error: RwSignal<Option<String>>,
    confirming: RwSignal<Option<SessionId>>,
) -> impl IntoView {
    let id = session.id.clone();
    let href = format!("/sessions/{}", session.id);
    let is_current = {
        let id = id.clone();
        move || current.get() == id
    };
    let running = session.running_turn_id.is_some();
    let yolo = session.approval_mode == Mode::Yolo;
    let source = session
        .source
        .clone()
        .map(|source| view! { <SourceBadge source/> });
    let title = session.title.clone();
    view! {
        <li class="session-item" class:current=is_current data-testid="session-item"
            data-session-id=id.clone()>
            <a href=href data-testid="session-link" title=title.clone()>{title.clone()}</a>
            {yolo.then(|| view! { <YoloBadge/> })}
            {source}
            <WaitingDot session_id=id.clone()/>
            {running.then(|| view! {
                <span class="dot running" role="img" data-testid="session-running"
                    title=TURN_RUNNING aria-label=TURN_RUNNING></span>
            })}
            {Viewer::get().admin.then(|| view! { <DeleteSession id=id.clone() title current error confirming/> })}
        </li>
    }
}

/// The dot that says cards wait in a session, live from the pending gates (any agent's).
#[component]
fn WaitingDot(session_id: SessionId) -> impl IntoView {
    let pending = use_context::<PendingGates>();
    let waiting = move || {
        pending.map_or(0, |p| {
            p.gates.with(|g| {
                g.iter()
                    .flatten()
                    .filter(|g| g.body.session_id == session_id)
                    .count()
            })
        })
    };
    move || {
        let n = waiting();
        (n > 0).then(|| {
            let label = cards_waiting(n);
            view! {
                <span class="dot pending" role="img" data-testid="session-pending"
                    title=label.clone() aria-label=label></span>
            }
        })
    }
}

/// × and the question it asks before a session and its history are deleted.
#[component]
fn DeleteSession(
    id: SessionId,
    title: String,
    current: Memo<String>,
    error: RwSignal<Option<String>>,
    confirming: RwSignal<Option<SessionId>>,
) -> impl IntoView {
    let changed = ListChanged::from_context();
    let delete = {
        let id = id.clone();
        move |_| delete_session(id.clone(), current, changed, error)
    };
    let asking = {
        let id = id.clone();
        move || confirming.get().as_ref() == Some(&id)
    };
    view! {
        <button class="delete-session" data-testid="delete-session" title="Delete session"
            aria-label=format!("Delete session {title}")
            on:click=move |_| confirming.set(Some(id.clone()))>"×"</button>
        <Show when=asking.clone()>
            <div class="confirm-delete" role="alertdialog" aria-label="Delete this session?" data-testid="confirm-delete">
                <span>"Delete it and its history?"</span>
                <button type="button" class="danger" data-testid="confirm-delete-session" on:click=delete.clone()>"Delete"</button>
                <button type="button" data-testid="keep-session" on:click=move |_| confirming.set(None)>"Keep"</button>
            </div>
        </Show>
    }
}

/// What the running dot means, said to a pointer and to a screen reader.
const TURN_RUNNING: &str = "A turn is running";

/// What the pending dot means: how many cards wait in the session.
fn cards_waiting(n: usize) -> String {
    if n == 1 {
        "1 card waiting".to_owned()
    } else {
        format!("{n} cards waiting")
    }
}

/// Marks a session in Yolo, whose edits and commands run unasked, so it is not mistaken for
/// one that asks (styled as the session header's Yolo badge).
#[component]
fn YoloBadge() -> impl IntoView {
    const MEANING: &str = "This session runs in Yolo: edits and commands run without asking";
    view! {
        <span class="mode-badge" data-mode="yolo" data-testid="session-yolo" role="img"
            title=MEANING aria-label=MEANING>"Yolo"</span>
    }
}

/// Deletes a session; the list is told, and a page showing it goes home.
fn delete_session(
    id: SessionId,
    current: Memo<String>,
    changed: ListChanged,
    error: RwSignal<Option<String>>,
) {
    let was_current = current.get_untracked() == id;
    spawn_local(async move {
        match api::delete_session(id).await {
            Ok(()) => {
                changed.notify();
                if was_current {
                    browser::go_to("/");
                }
            }
            Err(err) => error.set(Some(api::error_message(&err))),
        }
    });
}

/// Inbox (with the number of gates waiting across sessions), Rules, Audit, and for an admin
/// Your answers, Config, Tokens.
#[component]
fn PageLinks() -> impl IntoView {
    let pending = use_context::<PendingGates>().unwrap_or_else(PendingGates::start);
    let pathname = use_location().pathname;
    let current = move |path: &'static str| move || (pathname.get() == path).then_some("page");
    let count = Memo::new(move |_| pending.count());
    let has_pending = move || count.get().unwrap_or(0) > 0;
    let inbox_label = move || match count.get() {
        Some(n) => format!("Inbox ({n})"),
        None => "Inbox".to_owned(),
    };
    view! {
        <ul class="page-nav">
            <li>
                <a href="/inbox" data-testid="nav-inbox" aria-current=current("/inbox")
                    class:has-pending=has_pending>{inbox_label}</a>
            </li>
            <li><a href="/rules" data-testid="nav-rules" aria-current=current("/rules")>"Rules"</a></li>
            <li><a href="/audit" data-testid="nav-audit" aria-current=current("/audit")>"Audit"</a></li>
            {Viewer::get().admin.then(|| view! {
                // The person's own answering habits: an admin's, like the figures' route.
                <li><a href="/answers" data-testid="nav-answers" aria-current=current("/answers")>"Your answers"</a></li>
                <li><a href="/config" data-testid="nav-config" aria-current=current("/config")>"Config"</a></li>
                <li><a href="/tokens" data-testid="nav-tokens" aria-current=current("/tokens")>"Tokens"</a></li>
                <li><a href="/security" rel="external" data-testid="nav-security" aria-current=current("/security")>"Security"</a></li>
            })}
            // A full load: the page's own script (public/notify.js) runs with it. Only for a
            // credential that answers: a push exists to answer.
            {Viewer::get().decides.then(|| view! {
                <li><a href="/notify" rel="external" data-testid="nav-notify" aria-current=current("/notify")>"Notify this device"</a></li>
            })}
        </ul>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pending_dot_says_how_many_cards_wait() {
        assert_eq!(cards_waiting(1), "1 card waiting");
        assert_eq!(cards_waiting(3), "3 cards waiting");
    }
}
