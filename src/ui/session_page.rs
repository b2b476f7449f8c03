//! `/sessions/{sid}`: the sidebar and the chat of one session, rendered on the server from the
//! session's log so a reload shows the same thing before hydration.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api;
use crate::ui::chat::ChatView;
use crate::ui::json;
use crate::ui::sidebar::{SessionsChanged, Sidebar};

#[component]
pub fn SessionPage() -> impl IntoView {
    let params = use_params_map();
    let session_id = Memo::new(move |_| params.read().get("sid").unwrap_or_default());
    let changed = SessionsChanged::new();
    provide_context(changed);
    let sessions = json::resource(move || changed.version(), |_| api::list_sessions());
    let snapshot = json::resource(
        move || session_id.get(),
        |sid: String| api::get_snapshot(sid.into()),
    );
    view! {
        <div class="layout">
            <Sidebar sessions current=session_id/>
            <main class="chat">
                <Suspense fallback=|| view! { <p class="loading">"Loading session…"</p> }>
                    {move || Suspend::new(async move {
                        match snapshot.await {
                            Ok(snapshot) => view! { <ChatView snapshot/> }.into_any(),
                            Err(err) => view! {
                                <div class="missing" role="alert">
                                    <h1>"Session not available"</h1>
                                    <p>{api::error_message(&err)}</p>
                                    <p><a href="/" rel="external">"Open your latest session"</a></p>
                                </div>
                            }.into_any(),
                        }
                    })}
                </Suspense>
            </main>
        </div>
    }
}
