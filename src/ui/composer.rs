//! The composer: message field, mode picker, Send and Stop. Enter sends, Shift+Enter is a
//! newline. No key changes the approval mode: only a choice in the picker does, and a move to
//! Yolo waits for a second, deliberate click ([`YoloConfirm`]). In an outside agent's session,
//! which takes no messages, [`OutsideBar`] stands in its place and keeps the mode picker (the
//! mode still decides which of that agent's calls ask).

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::Mode;
use crate::ui::feed::Feed;
use crate::ui::outside::outside_note;

/// Sets the session's mode (shown at once; a failure is reported in `error`).
pub(crate) fn choose_mode(feed: Feed, error: RwSignal<Option<String>>, mode: Mode) {
    if feed.mode.get_untracked() == mode {
        return;
    }
    feed.mode.set(mode);
    let session_id = feed.session_id.get_value();
    spawn_local(async move {
        if let Err(err) = api::set_mode(session_id, mode.as_str().to_owned()).await {
            error.set(Some(api::error_message(&err)));
        }
    });
}

#[component]
pub fn Composer(
    feed: Feed,
    draft: RwSignal<String>,
    /// A card waits: with nothing typed, the composer folds to one line (on a phone its
    /// actions then stay on the first screen).
    #[prop(into)]
    waiting: Signal<bool>,
) -> impl IntoView {
    let folded = move || waiting.get() && draft.read().trim().is_empty();
    let error = RwSignal::new(None::<String>);
    let sending = RwSignal::new(false);
    let running = move || feed.running_turn.read().is_some();

    let send = move || send_draft(feed, draft, sending, error);
    let on_keydown = move |ev: KeyboardEvent| {
        // Every other key keeps its ordinary meaning (Shift+Tab moves focus back).
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            send();
        }
    };

    let stop = move |_| stop_turn(feed, error);
    view! {
        <form class="composer" class:folded=folded data-testid="composer-box"
            data-folded=move || folded().to_string()
            on:submit=move |ev| { ev.prevent_default(); send(); }>
            <textarea
                data-testid="composer"
                aria-label="Message to the agent"
                placeholder=move || if folded() {
                    "A card waits above — or write here…"
                } else {
                    "Ask the agent…  (Enter sends, Shift+Enter adds a line)"
                }
                rows="3"
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=on_keydown
            ></textarea>
            <div class="composer-bar">
                <ModePicker feed error/>
                <span class="composer-actions">
                    <Show when=running>
                        <button type="button" class="stop" data-testid="stop" on:click=stop>"Stop"</button>
                    </Show>
                    <button type="submit" class="send" data-testid="send" disabled=move || sending.get() || running()>
                        "Send"
                    </button>
                </span>
            </div>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </form>
    }
}

/// Sends what is typed (once at a time); a refusal puts the text back and says why.
fn send_draft(
    feed: Feed,
    draft: RwSignal<String>,
    sending: RwSignal<bool>,
    error: RwSignal<Option<String>>,
) {
    let text = draft.get_untracked();
    if text.trim().is_empty() || sending.get_untracked() {
        return;
    }
    sending.set(true);
    error.set(None);
    draft.set(String::new());
    let session_id = feed.session_id.get_value();
    let mode = feed.mode.get_untracked();
    spawn_local(async move {
        if let Err(err) =
            api::send_message(session_id, text.clone(), mode.as_str().to_owned()).await
        {
            draft.set(text);
            error.set(Some(api::error_message(&err)));
        }
        sending.set(false);
    });
}

/// Stop: cancels the running turn, saying why when it cannot.
fn stop_turn(feed: Feed, error: RwSignal<Option<String>>) {
    let session_id = feed.session_id.get_value();
    spawn_local(async move {
        if let Err(err) = api::cancel_turn(session_id).await {
            error.set(Some(api::error_message(&err)));
        }
    });
}

/// The session's approval mode, as a select with each mode's one-line description. Yolo is
/// only proposed by the select: it takes effect once [`YoloConfirm`] is clicked.
#[component]
fn ModePicker(feed: Feed, error: RwSignal<Option<String>>) -> impl IntoView {
    let confirming = RwSignal::new(false);
    view! {
        <label class="mode-picker">
            <span>"Approvals"</span>
            <select
                data-testid="mode-picker"
                data-mode=move || feed.mode.get().as_str()
                // The mode in force, also while Yolo is only proposed: what the picker shows is what a
                // message would go with.
                prop:value=move || { confirming.track(); feed.mode.get().as_str() }
                on:keydown=keep_closed_picker_still
                on:change=move |ev| match Mode::parse(&event_target_value(&ev)) {
                    Some(Mode::Yolo) if feed.mode.get_untracked() != Mode::Yolo => confirming.set(true),
                    Some(mode) => {
                        confirming.set(false);
                        choose_mode(feed, error, mode);
                    }
                    None => {}
                }
            >
                {Mode::ALL.into_iter().map(|m| view! {
                    <option value=m.as_str() title=m.description() selected=move || feed.mode.get() == m>
                        {format!("{} — {}", m.label(), m.description())}
                    </option>
                }).collect_view()}
            </select>
        </label>
        <Show when=move || confirming.get()>
            <YoloConfirm feed error confirming/>
        </Show>
    }
}

/// A closed select changes its value on arrow keys, Home/End, PageUp/PageDown and type-ahead,
/// one keystroke from a new mode. Those keys open the list instead, so a mode changes only
/// by choosing it there (or with the mouse).
fn keep_closed_picker_still(ev: KeyboardEvent) {
    if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
        return;
    }
    let key = ev.key();
    let moves = matches!(
        key.as_str(),
        "ArrowUp"
            | "ArrowDown"
            | "ArrowLeft"
            | "ArrowRight"
            | "Home"
            | "End"
            | "PageUp"
            | "PageDown"
    );
    let types_ahead = key.chars().count() == 1 && key != " ";
    if !(moves || types_ahead) {
        return;
    }
    ev.prevent_default();
    // `showPicker` where the browser has it for a select (Chromium does); elsewhere the key
    // simply does nothing, and Space or a click opens the list.
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let Some(select) = ev.target() else { return };
        let show = js_sys::Reflect::get(&select, &"showPicker".into()).ok();
        if let Some(show) = show.and_then(|f| f.dyn_into::<js_sys::Function>().ok()) {
            let _ = show.call0(&select);
        }
    }
}

/// Asks before a session goes to Yolo: what it means, in one sentence, and two buttons — the
/// safe one first and focused, so Enter or a stray click keeps the mode as it was.
#[component]
fn YoloConfirm(
    feed: Feed,
    error: RwSignal<Option<String>>,
    confirming: RwSignal<bool>,
) -> impl IntoView {
    let keep = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = keep.get() {
            let _ = button.focus();
        }
    });
    let current = move || feed.mode.get().label();
    view! {
        <div class="yolo-confirm" role="alertdialog" aria-labelledby="yolo-confirm-text"
            data-testid="yolo-confirm">
            <p id="yolo-confirm-text">
                <strong>"Switch this session to Yolo?"</strong>
                " Edits, commands and config changes run without asking you. Secrets files and other safety-floor calls still ask."
            </p>
            <button type="button" node_ref=keep data-action="keep-mode"
                on:click=move |_| confirming.set(false)>
                {move || format!("Keep {}", current())}
            </button>
            <button type="button" class="danger" data-action="confirm-yolo"
                on:click=move |_| {
                    confirming.set(false);
                    choose_mode(feed, error, Mode::Yolo);
                }>
                "Switch to Yolo"
            </button>
        </div>
    }
}

/// In place of the composer in an outside agent's session: where to talk to it, and the
/// mode its calls are checked under.
#[component]
pub fn OutsideBar(feed: Feed, source: String) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    view! {
        <div class="composer outside-bar" data-testid="outside-note">
            <p class="outside-note">{outside_note(&source)}</p>
            <div class="composer-bar">
                <ModePicker feed error/>
            </div>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}
