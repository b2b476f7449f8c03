//! The chat of one session: header, transcript (from the log, then live) and composer.

use leptos::prelude::*;

use leptos_meta::Title;

use crate::protocol::{Mode, Snapshot, TurnStatus};
use crate::ui::browser;
use crate::ui::card::ApprovalCard;
use crate::ui::composer::{Composer, OutsideBar};
use crate::ui::feed::{Connection, Feed};
use crate::ui::gates::{self, BulkBar, CardBus, ClientId};
use crate::ui::outside::{SessionSource, SourceBadge};
use crate::ui::session_title::{self, SessionTitle};
use crate::ui::tool_card::ToolCard;
use crate::ui::transcript::Item;
use crate::ui::viewer::Viewer;
use crate::ui::waiting_pill::WaitingPill;

/// One example of what the demo agent understands: the text that fills the composer, as
/// shown, and the mode it needs where the default would refuse it.
struct Example {
    text: &'static str,
    needs: Option<(Mode, &'static str)>,
}

/// What the demo agent understands, as examples that fill the composer. Each works as shown
/// in the default mode: the plan example switches the session to plan first, and says so.
const EXAMPLES: [Example; 5] = [
    Example {
        text: "write notes.md: hello",
        needs: None,
    },
    Example {
        text: "run: ls -la",
        needs: None,
    },
    Example {
        text: "read notes.md",
        needs: None,
    },
    Example {
        text: "ask prep_plan: Drop null rows | Remove rows where **price** is empty",
        needs: None,
    },
    Example {
        text: "propose plan: 1. read the data\\n2. clean it",
        needs: Some((
            Mode::Plan,
            "This session is now in Plan mode: the agent only reads, then proposes its plan for you to approve. Approving it leaves Plan mode.",
        )),
    },
];

#[component]
pub fn ChatView(snapshot: Snapshot) -> impl IntoView {
    let title = snapshot.session.title.clone();
    let session_id = snapshot.session.id.clone();
    // An outside agent's session: its cards say whose they are, and it takes no messages.
    let source = snapshot.session.source.clone();
    provide_context(SessionSource(Signal::stored(source.clone())));
    let feed = Feed::new(snapshot);
    provide_context(ClientId::new());
    let bus = CardBus::new();
    provide_context(bus);
    #[cfg(feature = "hydrate")]
    crate::ui::feed::connect(feed);
    provide_context(gates::ConnectionHealed(healed_count(feed).into()));
    let draft = RwSignal::new(String::new());
    let example_note = RwSignal::new(None::<String>);
    let is_builtin = source.is_none();
    let now_ms = crate::ui::when::clock();
    let items = feed.items;
    let pending = Memo::new(move |_| bus.still_pending(feed.pending.get()));
    gates::watch_pending(bus, pending);
    let initial_title = gates::tab_title(pending.get_untracked().len());
    gates::install_keyboard(bus, pending);
    // Loading earlier turns must not jump to the end.
    let hold_scroll = StoredValue::new(false);
    follow_the_end(items, feed, hold_scroll);
    view! {
        <Title text=initial_title/>
        <div class="sr-only" aria-live="polite" data-testid="announcer">{move || announcement(&pending.read())}</div>
        <ChatHeader session_id=session_id.clone() title source=source.clone() feed/>
        <section id="transcript" class="transcript">
            <EarlierTurns feed hold_scroll/>
            <Show when=move || is_builtin && items.read().is_empty() && feed.streaming.read().is_empty()>
                <FirstRun feed draft note=example_note/>
            </Show>
            // Keyed by each row's state: an event re-renders only the row(s) whose key it
            // changed, and the list is walked by key, never cloned item by item.
            <For each=move || row_keys(items) key=|(key, _)| key.clone() let:row>
                {shown_row(items, row.1).map(|item| render_item(item, now_ms))}
            </For>
            <ExampleNote feed note=example_note/>
            <Show when=move || !feed.streaming.read().is_empty()>
                <div class="msg assistant streaming" data-testid="assistant-streaming">
                    // The model's words as they arrive, shown as its finished message will be.
                    <p>{move || crate::shown::prose(&feed.streaming.get())}</p>
                </div>
            </Show>
        </section>
        <WaitingPill pending/>
        {Viewer::get().decides.then(|| view! { <BulkBar session_id pending/> })}
        <SessionFoot feed source draft waiting=Signal::derive(move || !pending.read().is_empty())/>
    }
}

/// Below the transcript: the composer for the built-in agent, the outside agent's bar, or
/// (for a credential that only answers cards) a line saying so.
#[component]
fn SessionFoot(
    feed: Feed,
    source: Option<String>,
    draft: RwSignal<String>,
    waiting: Signal<bool>,
) -> impl IntoView {
    let viewer = Viewer::get();
    match (source, viewer.admin) {
        // A viewer reads: no composer, no mode switch, no answers.
        (_, false) if !viewer.decides => view! {
            <div class="composer answer-only" data-testid="read-only-note">
                <p class="outside-note">"You may read this session; answering cards is for approvers, messages and modes for admins."</p>
            </div>
        }
        .into_any(),
        // Messages, modes and Stop are an admin credential's: a phone answers cards.
        (_, false) => view! {
            <div class="composer answer-only" data-testid="answer-only-note">
                <p class="outside-note">"This device answers cards; messages, modes and Stop are for an admin login."</p>
            </div>
        }
        .into_any(),
        (Some(source), true) => view! { <OutsideBar feed source/> }.into_any(),
        (None, true) => view! { <Composer feed draft waiting/> }.into_any(),
    }
}

/// What an example did besides filling the composer (its mode), until a message goes.
#[component]
fn ExampleNote(feed: Feed, note: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        note.get()
            .filter(|_| feed.first_message.read().is_none())
            .map(|text| view! { <p class="example-note" role="status" data-testid="example-note">{text}</p> })
    }
}

/// The session's title (renamable by an admin), whose session it is, the connection and the
/// mode.
#[component]
fn ChatHeader(
    session_id: crate::protocol::SessionId,
    title: String,
    source: Option<String>,
    feed: Feed,
) -> impl IntoView {
    // The header's title: the stored one, or the first message's until the list catches up.
    let renamed = RwSignal::new(None::<String>);
    let shown_title = {
        let title = title.clone();
        Memo::new(move |_| session_title::shown_title(&title, feed.first_message.read().as_deref()))
    };
    let hover =
        Memo::new(move |_| session_title::hover_text(&title, feed.first_message.read().as_deref()));
    view! {
        <header class="chat-header">
            <SessionTitle session_id title=shown_title.into() hover renamed can_rename=Viewer::get().admin/>
            {source.map(|source| view! { <SourceBadge source/> })}
            <ConnectionDot connection=feed.connection/>
            <span class="mode-badge" data-testid="session-mode" data-mode=move || feed.mode.get().as_str()>
                {move || feed.mode.get().label()}
            </span>
        </header>
    }
}

/// Counts the times the feed's connection came back after being lost (a card's "could not
/// send" clears on it).
fn healed_count(feed: Feed) -> RwSignal<u64> {
    let healed = RwSignal::new(0u64);
    Effect::new(move |was_live: Option<bool>| {
        let live = feed.connection.get() == Connection::Live;
        if live && was_live == Some(false) {
            healed.update(|n| *n += 1);
        }
        live
    });
    healed
}

/// What a screen reader hears: the newest card waiting.
fn announcement(pending: &[crate::protocol::ApprovalRequestBody]) -> String {
    pending
        .last()
        .map(|g| {
            format!(
                "Approval needed: {}",
                crate::shown::line_within(&g.summary, 240)
            )
        })
        .unwrap_or_default()
}

/// Keeps the transcript at its end as it grows, except right after earlier turns load.
fn follow_the_end(items: RwSignal<Vec<Item>>, feed: Feed, hold_scroll: StoredValue<bool>) {
    Effect::new(move |_| {
        items.track();
        feed.streaming.track();
        if hold_scroll.get_value() {
            hold_scroll.set_value(false);
        } else {
            browser::scroll_to_end("transcript");
        }
    });
}

/// Each row's key and where it is now.
fn row_keys(items: RwSignal<Vec<Item>>) -> Vec<(String, usize)> {
    items.with(|items| items.iter().map(Item::key).zip(0..).collect())
}

/// The row at `at` as it is when its key first appears (a row is made once per key).
fn shown_row(items: RwSignal<Vec<Item>>, at: usize) -> Option<Item> {
    items.with_untracked(|items| items.get(at).cloned())
}

fn render_item(item: Item, now_ms: RwSignal<f64>) -> AnyView {
    match item {
        Item::User { text, mode, .. } => view! {
            <div class="msg user" data-testid="user-message">
                <span class="who">"You"</span>
                <div class="text">{text}</div>
                <span class="mode-tag" title="approval mode of this message">{mode.label()}</span>
            </div>
        }
        .into_any(),
        Item::Assistant { html, .. } => view! {
            <div class="msg assistant" data-testid="assistant-message" inner_html=html></div>
        }
        .into_any(),
        Item::Tool(tool) => view! { <ToolCard item=tool now_ms/> }.into_any(),
        Item::Gate(gate) => view! { <ApprovalCard item=*gate now_ms/> }.into_any(),
        Item::ModeChange { previous, next, .. } => view! {
            <div class="note">{format!("Approval mode: {} → {}", previous.label(), next.label())}</div>
        }
        .into_any(),
        Item::TurnEnd { status, error, .. } => match status {
            TurnStatus::Completed => view! { <hr class="turn-end"/> }.into_any(),
            other => view! {
                <div class=format!("note turn-{}", other.as_str()) data-testid="turn-end" data-status=other.as_str() role="status">
                    {match other {
                        TurnStatus::Cancelled => "Turn cancelled.".to_owned(),
                        TurnStatus::Stopped => "Turn stopped.".to_owned(),
                        _ => format!("Turn failed: {}", error.unwrap_or_default()),
                    }}
                </div>
            }
            .into_any(),
        },
    }
}

/// "Show earlier": the page starts with the recent turns of a long session; this pages in the
/// turns before them.
#[component]
fn EarlierTurns(feed: Feed, hold_scroll: StoredValue<bool>) -> impl IntoView {
    let loading = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let load = move |_| {
        let Some(before) = feed.first_seq.get_untracked() else {
            return;
        };
        if loading.get_untracked() {
            return;
        }
        loading.set(true);
        let session_id = feed.session_id.get_value();
        leptos::task::spawn_local(async move {
            match crate::api::get_older_events(session_id, before).await {
                Ok(older) => {
                    problem.set(None);
                    hold_scroll.set_value(true);
                    feed.prepend(older);
                }
                Err(err) => problem.set(Some(crate::api::error_message(&err))),
            }
            loading.set(false);
        });
    };
    view! {
        <Show when=move || feed.first_seq.get().is_some_and(|s| s > 1)>
            <div class="earlier">
                <button type="button" class="small" data-testid="load-older"
                    disabled=move || loading.get() on:click=load>
                    {move || if loading.get() { "Loading…" } else { "Show earlier messages" }}
                </button>
                {move || problem.get().map(|p| view! { <span class="error" role="alert">{p}</span> })}
            </div>
        </Show>
    }
}

#[component]
fn ConnectionDot(connection: RwSignal<Connection>) -> impl IntoView {
    let label = move || match connection.get() {
        Connection::Connecting => "connecting".to_owned(),
        Connection::Live => "live".to_owned(),
        Connection::Reconnecting(secs) => format!("reconnecting (retry in {secs}s)"),
    };
    let state = move || match connection.get() {
        Connection::Connecting => "connecting",
        Connection::Live => "live",
        Connection::Reconnecting(_) => "reconnecting",
    };
    view! {
        <span class="connection" data-testid="connection" data-state=state>
            <span class="dot" aria-hidden="true"></span>
            {label}
        </span>
    }
}

/// Fills the composer with an example as shown (the demo reads `\\n` as a line break) and
/// switches the session to the mode the example needs, returning what to tell the person.
fn use_example(feed: Feed, draft: RwSignal<String>, example: &Example) -> Option<String> {
    draft.set(example.text.to_owned());
    let (mode, note) = example.needs?;
    if feed.mode.get_untracked() == mode {
        return None;
    }
    let error = RwSignal::new(None::<String>);
    crate::ui::composer::choose_mode(feed, error, mode);
    Some(note.to_owned())
}

#[component]
fn FirstRun(feed: Feed, draft: RwSignal<String>, note: RwSignal<Option<String>>) -> impl IntoView {
    view! {
        <div class="first-run">
            <h2>"Start with an example"</h2>
            <p>"With no model configured, the offline demo agent turns lines like these into tool calls:"</p>
            <ul class="examples">
                {EXAMPLES.into_iter().map(|example| view! {
                    <li>
                        <button type="button" class="example" data-testid="example"
                            on:click=move |_| note.set(use_example(feed, draft, &example))>
                            <code>{example.text}</code>
                        </button>
                    </li>
                }).collect_view()}
            </ul>
            <p class="muted">
                "To use a real model, set " <code>"[provider] kind = \"openai\""</code>
                " with " <code>"base_url"</code> " and " <code>"model"</code> " in the config file."
            </p>
            <p class="muted">{format!("Modes: {}.", Mode::ALL.map(|m| format!("{} — {}", m.label(), m.description())).join("; "))}</p>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clicking an example may move the session toward more asking (Plan) and never toward
    /// less: the only way to Auto-edit or Yolo is the picker (and Yolo's confirmation).
    #[test]
    fn an_example_only_ever_switches_a_session_to_plan() {
        let switching: Vec<Mode> = EXAMPLES
            .iter()
            .filter_map(|example| example.needs.map(|(mode, _)| mode))
            .collect();
        assert_eq!(switching, [Mode::Plan]);
    }
}
