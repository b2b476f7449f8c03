//! `/notify`: "Notify this device" — subscribe this browser to Web Push, send a test, stop —
//! in the app's shell like every page. The controls are plain elements that
//! `public/notify.js` drives by their ids (the service worker and the push subscription are
//! the browser's own APIs, reached most simply from a script of the page).

use leptos::prelude::*;

use crate::ui::browser;
use crate::ui::sidebar::PageLayout;

/// The tab title on this page.
const TITLE: &str = "Notify this device — Countersign";

#[component]
pub fn NotifyPage() -> impl IntoView {
    Effect::new(|_| browser::set_page_title(TITLE));
    let nonce = use_nonce().map(|n| n.to_string());
    view! {
        <PageLayout>
            <header class="page-header">
                <h1>"Notify this device"</h1>
                <p class="muted">"A notification on this device whenever a card waits for you."</p>
            </header>
            <div class="page-body device-page">
                <section class="device-section" aria-labelledby="notify-heading">
                    <h2 id="notify-heading" class="sr-only">"Notifications"</h2>
                    <p>
                        "When a card waits for you, this device shows a notification. An ordinary card's \
                         notification has " <strong>"Approve"</strong> " and " <strong>"Deny"</strong>
                        " on it; a card on the safety floor only opens the card. Notifications answer as the \
                         credential this browser is logged in with."
                    </p>
                    <p id="push-status" class="device-status" role="status" data-testid="push-status">"Checking…"</p>
                    <div class="device-form">
                        <button type="button" class="primary" id="push-on" data-testid="push-on">"Notify this device"</button>
                        <button type="button" id="push-test" data-testid="push-test" hidden>"Send a test"</button>
                        <button type="button" class="danger" id="push-off" data-testid="push-off" hidden>"Stop notifying this device"</button>
                    </div>
                    <h3>"Your notified devices"</h3>
                    <ul id="push-list" class="device-list" data-testid="push-list"></ul>
                </section>
                <script src="/notify.js" defer nonce=nonce></script>
            </div>
        </PageLayout>
    }
}
