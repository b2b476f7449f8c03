//! The session list: new, switch, delete. Folds into a top bar on narrow screens (CSS).

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_navigate;

use crate::api;
use crate::protocol::Session;
use crate::ui::browser;
use crate::ui::session_page::SessionsChanged;

#[component]
pub fn Sidebar(
    sessions: Resource<Result<Vec<Session>, crate::protocol::ErrorBody>>,
    current: Memo<String>,
) -> impl IntoView {
    let changed = expect_context::<SessionsChanged>();
    let error = RwSignal::new(None::<String>);
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
            <button class="new-session" data-testid="new-session" on:click=new_session>"+ New session"</button>
            <h2 class="sidebar-heading">"Sessions"</h2>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match sessions.await {
                        Ok(list) => view! { <SessionList list current error/> }.into_any(),
                        Err(err) => view! { <p class="error">{api::error_message(&err)}</p> }.into_any(),
                    }
                })}
            </Suspense>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </nav>
    }
}

#[component]
fn SessionList(
    list: Vec<Session>,
    current: Memo<String>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let changed = expect_context::<SessionsChanged>();
    view! {
        <ul class="session-list">
            {list.into_iter().map(|session| {
                let id = session.id.clone();
                let href = format!("/sessions/{}", session.id);
                let is_current = {
                    let id = id.clone();
                    move || current.get() == id
                };
                let delete = {
                    let id = id.clone();
                    move |_| {
                        let id = id.clone();
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
                };
                let running = session.running_turn_id.is_some();
                view! {
                    <li class="session-item" class:current=is_current>
                        <a href=href data-testid="session-link">{session.title.clone()}</a>
                        {running.then(|| view! { <span class="dot running" title="a turn is running"></span> })}
                        <button class="delete-session" title="Delete session" aria-label="Delete session" on:click=delete>"×"</button>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}
