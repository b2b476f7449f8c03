//! The session's title in its header, renamed in place: Rename opens a field, Enter (or Save)
//! keeps the new title, Esc (or Cancel) leaves it as it was. A session still called "New
//! session" shows its first message's title (`text::title_from`: a few words saying what it
//! asks) as soon as it is sent, the words the server titles it with; the whole message is the
//! title's hover text.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::protocol::{DEFAULT_SESSION_TITLE as DEFAULT_TITLE, SessionId};
use crate::ui::sidebar::SessionsChanged;

/// The title the page shows: the stored one, or for an unnamed session, its first message's
/// (kept by the feed as messages arrive, never searched for in every event).
pub fn shown_title(stored: &str, first_message: Option<&str>) -> String {
    if stored != DEFAULT_TITLE {
        return stored.to_owned();
    }
    first_message
        .and_then(crate::text::title_from)
        .unwrap_or_else(|| stored.to_owned())
}

/// What hovering the title shows: the whole first message (on one line, as `shown` writes it)
/// when the title was made from it, else the title itself (whole, where the header cuts it).
pub fn hover_text(stored: &str, first_message: Option<&str>) -> String {
    let made_from_message = first_message.filter(|text| {
        stored == DEFAULT_TITLE || crate::text::title_from(text).as_deref() == Some(stored)
    });
    match made_from_message {
        Some(text) => crate::shown::line_within(&text.replace("\\n", "\n"), 500),
        None => stored.to_owned(),
    }
}

#[component]
pub fn SessionTitle(
    session_id: SessionId,
    /// What the header shows (the caller keeps it on the stored title and first message).
    title: Signal<String>,
    /// What hovering the title shows (see [`hover_text`]).
    #[prop(optional, into)]
    hover: Option<Signal<String>>,
    /// A person's rename, once made (wins over `title`).
    renamed: RwSignal<Option<String>>,
    can_rename: bool,
) -> impl IntoView {
    let changed = use_context::<SessionsChanged>();
    let edit = TitleEdit::new();
    let TitleEdit {
        editing,
        draft,
        error,
        ..
    } = edit;
    let shown = move || renamed.get().unwrap_or_else(|| title.get());
    let hover = hover.unwrap_or(title);
    let hover_shown = move || renamed.get().unwrap_or_else(|| hover.get());
    let start = move |_| {
        draft.set(shown());
        error.set(None);
        editing.set(true);
        request_animation_frame(|| crate::ui::browser::focus("title-input"));
    };
    view! {
        <Show when=move || editing.get() fallback=move || view! {
            <h1 class="session-title" data-testid="session-title" title=hover_shown>{shown}</h1>
            {can_rename.then(|| view! {
                <button type="button" class="rename-session" data-testid="rename-session"
                    title="Rename this session" on:click=start>"Rename"</button>
            })}
        }>
            <TitleForm edit session_id=session_id.clone() renamed changed/>
        </Show>
        {move || error.get().map(|e| view! { <p class="error title-error" role="alert" data-testid="title-error">{e}</p> })}
    }
}

/// The rename's state, shared by the title, its form and the error under them.
#[derive(Clone, Copy)]
struct TitleEdit {
    editing: RwSignal<bool>,
    draft: RwSignal<String>,
    error: RwSignal<Option<String>>,
    saving: RwSignal<bool>,
}

impl TitleEdit {
    /// Not editing, nothing drafted or sent.
    fn new() -> Self {
        Self {
            editing: RwSignal::new(false),
            draft: RwSignal::new(String::new()),
            error: RwSignal::new(None::<String>),
            saving: RwSignal::new(false),
        }
    }
}

/// The rename field with Save and Cancel (Esc cancels too), shown while editing.
#[component]
fn TitleForm(
    edit: TitleEdit,
    session_id: SessionId,
    renamed: RwSignal<Option<String>>,
    changed: Option<SessionsChanged>,
) -> impl IntoView {
    let TitleEdit {
        editing,
        draft,
        saving,
        ..
    } = edit;
    let save = save_title(edit, session_id, renamed, changed);
    view! {
        <form class="title-form" on:submit={
            let save = save.clone();
            move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); save(); }
        }>
            <label class="sr-only" for="title-input">"Session title"</label>
            <input id="title-input" data-testid="title-input" type="text" maxlength="200"
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Escape" { editing.set(false); }
                }/>
            <button type="submit" class="primary" data-testid="save-title" disabled=move || saving.get()>"Save"</button>
            <button type="button" data-testid="cancel-title" on:click=move |_| editing.set(false)>"Cancel"</button>
        </form>
    }
}

/// Sends the draft as the session's new title: on success the header shows the server's
/// title and the sidebar hears of it; on failure the field stays open with the reason.
fn save_title(
    edit: TitleEdit,
    session_id: SessionId,
    renamed: RwSignal<Option<String>>,
    changed: Option<SessionsChanged>,
) -> impl Fn() + Clone + 'static {
    let TitleEdit {
        editing,
        draft,
        error,
        saving,
    } = edit;
    move || {
        let wanted = draft.get_untracked();
        let session_id = session_id.clone();
        saving.set(true);
        spawn_local(async move {
            match api::rename_session(session_id, wanted).await {
                Ok(session) => {
                    renamed.set(Some(session.title));
                    editing.set(false);
                    error.set(None);
                    if let Some(changed) = changed {
                        changed.notify();
                    }
                }
                Err(err) => error.set(Some(api::error_message(&err))),
            }
            saving.set(false);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_words_and_the_hover_the_whole_message() {
        let message = "write plan.md: first draft\\nsecond line";
        assert_eq!(shown_title(DEFAULT_TITLE, Some(message)), "Write plan.md");
        assert_eq!(shown_title(DEFAULT_TITLE, None), DEFAULT_TITLE);
        let hover = hover_text(DEFAULT_TITLE, Some(message));
        assert_eq!(hover, "write plan.md: first draft⏎second line");
        // Once the server titled it, the same; a person's own title is its own hover.
        assert_eq!(hover_text("Write plan.md", Some(message)), hover);
        assert_eq!(hover_text("My plan", Some(message)), "My plan");
    }
}
