//! `/security`: the passkeys (register, list, remove) and whether the OS boundary holds, in the
//! app's shell like every page. The passkey controls are plain elements that
//! `public/security.js` (over `public/passkey.js`) drives by their ids, so the WebAuthn work
//! stays in one script the card forms share; the OS boundary's section is rendered by the
//! server (`http/boundary.rs`) and shown as it came. An admin's page: another credential is
//! told so, with a 403.

use leptos::prelude::*;

use crate::api;
use crate::ui::browser;
use crate::ui::json;
use crate::ui::sidebar::PageLayout;
use crate::ui::viewer::Viewer;

/// The tab title on this page.
const TITLE: &str = "Security — Countersign";

#[component]
pub fn SecurityPage() -> impl IntoView {
    Effect::new(|_| browser::set_page_title(TITLE));
    let admin = Viewer::get().admin;
    if !admin {
        #[cfg(feature = "ssr")]
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::FORBIDDEN);
        }
    }
    view! {
        <PageLayout>
            <header class="page-header">
                <h1>"Security"</h1>
                <p class="muted">"Passkeys that confirm sensitive answers, and whether outside agents are kept out of Countersign's files."</p>
            </header>
            <div class="page-body device-page">
                {if admin {
                    view! { <SecurityBody/> }.into_any()
                } else {
                    view! {
                        <p class="error" role="alert" data-testid="security-forbidden">
                            "Passkeys are managed with an admin credential. " <a href="/inbox">"Back to the Inbox"</a>
                        </p>
                    }
                    .into_any()
                }}
            </div>
        </PageLayout>
    }
}

/// An admin's page: the OS boundary's alert (when it does not hold), the passkeys, the
/// boundary's section, and the script that works the passkey controls.
#[component]
fn SecurityBody() -> impl IntoView {
    let boundary = json::resource(|| (), |_| api::security_boundary());
    let part = move |which: fn((String, String)) -> String| {
        Suspend::new(async move {
            match boundary.await {
                Ok(parts) => view! { <div class="os-boundary-slot" inner_html=which(parts)></div> }
                    .into_any(),
                Err(_) => ().into_any(),
            }
        })
    };
    let nonce = use_nonce().map(|n| n.to_string());
    view! {
        <Suspense fallback=|| ()>{move || part(|(alert, _)| alert)}</Suspense>
        <section class="device-section" aria-labelledby="passkeys-heading">
            <h2 id="passkeys-heading">"Passkeys"</h2>
            <p>
                "With " <code>"[approvals] require_passkey = \"floor\""</code> " (or " <code>"\"all\""</code>
                ") in the config file, answering such a card needs a fresh confirmation with one of these \
                 passkeys, made for that card. Once one is registered, adding or removing another asks for \
                 it first. Lost them all? On the server's machine, " <code>"countersign passkey reset"</code>
                " removes every one."
            </p>
            <p id="passkey-status" class="device-status" role="status" data-testid="passkey-status"></p>
            <div class="device-form">
                <label class="field" for="passkey-name">
                    <span>"Name"</span>
                    <input id="passkey-name" data-testid="passkey-name" maxlength="64" placeholder="phone"
                        autocomplete="off" spellcheck="false"/>
                </label>
                <button type="button" class="primary" id="passkey-add" data-testid="passkey-add">"Register a passkey"</button>
            </div>
            <h3>"Registered passkeys"</h3>
            <p id="passkey-none" class="muted" data-testid="passkey-none">"None yet."</p>
            <ul id="passkey-list" class="device-list" data-testid="passkey-list"></ul>
        </section>
        <Suspense fallback=|| ()>{move || part(|(_, section)| section)}</Suspense>
        <script src="/security.js" defer nonce=nonce></script>
    }
}
